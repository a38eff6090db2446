"""A submissions zip unpacked safely: no path outside the target, bounded size, names a file
system can hold, every entry that could not be written named (see unpack_zip).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import zipfile
from dataclasses import dataclass
from pathlib import Path

from ..errors import CourseError
from .times import zip_entry_time


MAX_UNZIPPED = 2 << 30


NAME_MAX = 255                     # bytes in one file name (Linux, macOS, Windows alike)


READABLE_METHODS = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA)


@dataclass
class BadEntry:
    """A zip entry that could not be unpacked: its name (shown printable), why, and where it
    would have gone (relative to the unpacked folder), to tell whose it is."""
    entry: str
    reason: str
    path: Path
    twice: int = 0                 # present this many times, with different contents

    @property
    def notebook(self) -> bool:
        return self.path.name.lower().endswith(".ipynb")


@dataclass
class Unpacked:
    top: Path                      # the folder with the submissions
    bad: list[BadEntry]
    notes: list[str]


def shown(name: str, limit: int = 120) -> str:
    """A name from a download as one printable, quoted piece of text, not too long."""
    text = name if name.isprintable() else name.encode("unicode_escape", "backslashreplace").decode("ascii")
    if len(text) > limit:
        text = text[:limit // 2 - 1] + "..." + text[-(limit // 2 - 2):]
    return f"'{text}'"


def _open_zip(path: Path, spare: Path) -> tuple[zipfile.ZipFile, dict[str, str]]:
    """The zip, and {entry name as read: its name shown} for entries whose names claim to be
    UTF-8 and are not. Python's zipfile cannot list such a zip at all; a copy in `spare` with
    those names' UTF-8 flag cleared can be listed, and their entries are then refused alone."""
    bad: dict[str, str] = {}
    current = path
    for _ in range(10_000):
        try:
            archive = zipfile.ZipFile(current)
            if current != path:
                current.unlink()            # open, it stays readable; nothing is left behind
            return archive, bad
        except UnicodeDecodeError as exc:
            raw = exc.object if isinstance(exc.object, bytes) else b""
            if current == path:
                current = spare / f".{path.stem[:60]}-names.zip"
                shutil.copyfile(path, current)
            if not raw or not _clear_utf8_flag(current, raw):
                raise CourseError(f"{path}: the entry name {shown(raw.decode('utf-8', 'backslashreplace'))} "
                                  "is not valid UTF-8 and cannot be read around; nothing was graded") from None
            bad[raw.decode("cp437")] = raw.decode("utf-8", "backslashreplace")
        except Exception as exc:        # whatever its directory's bytes do: the zip cannot be listed
            raise CourseError(f"{path} is not a readable zip file ({type(exc).__name__}: {exc})") from None
    raise CourseError(f"{path}: too many entry names that are not UTF-8; nothing was graded")


def _clear_utf8_flag(zip_path: Path, raw: bytes) -> bool:
    """Clear the UTF-8 flag (bit 11) of the central directory records named `raw`."""
    import mmap

    changed = False
    with open(zip_path, "r+b") as f, mmap.mmap(f.fileno(), 0) as data:
        at = data.find(raw)
        while at >= 0:
            head = at - 46
            if head >= 0 and data[head:head + 4] == b"PK\x01\x02" \
                    and struct.unpack_from("<H", data, head + 28)[0] == len(raw):
                bits = struct.unpack_from("<H", data, head + 8)[0]
                if bits & 0x800:
                    struct.pack_into("<H", data, head + 8, bits & ~0x800)
                    changed = True
            at = data.find(raw, at + 1)
    return changed


def _short(part: str) -> str:
    """A name no longer than NAME_MAX bytes: its start, a hash of the whole, its extension."""
    if len(part.encode("utf-8", "surrogateescape")) <= NAME_MAX:
        return part
    suffix = Path(part).suffix if len(Path(part).suffix) <= 16 else ""
    head = part.encode("utf-8", "surrogateescape")[:180].decode("utf-8", "ignore")
    return f"{head}~{hashlib.sha256(part.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}{suffix}"


def _why(exc: BaseException) -> str:
    """What went wrong with an entry, in words (the exception's own text names the entry)."""
    import errno
    import zlib

    if isinstance(exc, zipfile.BadZipFile) and "CRC" in str(exc):
        return "its contents do not match its checksum: damaged, or its stated size is wrong"
    if isinstance(exc, zipfile.BadZipFile):
        return "its header is damaged"
    if isinstance(exc, EOFError):
        return "it ends before its stated size"
    if isinstance(exc, zlib.error) or type(exc).__name__ == "LZMAError":
        return "its compressed data are damaged"
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        return "its path is longer than this file system allows"
    if isinstance(exc, OSError):
        return f"it cannot be written here: {exc.strerror or type(exc).__name__}"
    return f"it cannot be read: {type(exc).__name__}"


def _extract(archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path | None) -> str:
    """Copy an entry to `target` (None: read it only); the sha256 of its contents."""
    digest = hashlib.sha256()
    with archive.open(info) as src, open(target if target is not None else os.devnull, "wb") as dst:
        while chunk := src.read(1 << 20):
            digest.update(chunk)
            dst.write(chunk)
    return digest.hexdigest()


def _unpack_entry(archive: zipfile.ZipFile, infos: list[zipfile.ZipInfo], target: Path,
                  bad_names: dict[str, str]) -> tuple[str, int]:
    """Unpack one file of the zip (`infos`: its entries of that name) to `target`: why it
    cannot be ("" when it was), and how many different files have its name (when several)."""
    for info in infos:
        if info.filename in bad_names:
            return "its name is not valid UTF-8", 0
        if info.flag_bits & 0x1:
            return "it is encrypted with a password", 0
        if info.compress_type not in READABLE_METHODS:
            return f"it is compressed by a method Python's zipfile cannot read, number {info.compress_type}", 0
    try:
        digests = {_extract(archive, info, target if i == 0 else None) for i, info in enumerate(infos)}
    except Exception as exc:         # whatever the entry's bytes do, only this entry is lost
        return _why(exc), 0
    if len(digests) > 1:
        return f"{len(infos)} different files of this name", len(infos)
    return "", 0


def unpack_zip(path: Path, into: Path) -> Unpacked:
    """Unpack a zip into `into`. A zip that cannot be listed, or that would write outside
    `into` or more than MAX_UNZIPPED bytes, is refused (CourseError). An entry that cannot be
    unpacked (damaged, encrypted, compressed with an unknown method, a name that is not UTF-8,
    a file where a folder of the same name is, several different files of one name) is left
    out, an empty file in its place where one fits, and listed in `bad`, to be charged to its
    student alone. A name longer than a file system allows is shortened (its start, a hash,
    its extension)."""
    archive, bad_names = _open_zip(path, into.parent)
    root = into.resolve()
    bad: list[BadEntry] = []
    notes: list[str] = []
    shortened = []
    with archive:
        files: dict[Path, list[zipfile.ZipInfo]] = {}
        folders: set[Path] = set()
        total = 0
        for info in archive.infolist():
            if info.filename.startswith("__MACOSX/"):
                continue
            norm = os.path.normpath(info.filename) if info.filename.strip("/") else "."
            if os.path.isabs(norm) or norm == ".." or norm.startswith("../"):
                raise CourseError(f"{path}: refusing the entry {shown(info.filename)} (it points outside the folder)")
            if norm == ".":
                continue
            rel = Path(*[_short(p) for p in Path(norm).parts])
            if rel != Path(norm):
                shortened.append(rel)
            total += info.file_size
            if total > MAX_UNZIPPED:
                raise CourseError(f"{path}: more than {MAX_UNZIPPED >> 30} GiB unpacked; refusing")
            folders.update(rel.parents)
            if info.is_dir():
                folders.add(rel)
            else:
                files.setdefault(rel, []).append(info)
        for rel in sorted(folders - {Path(".")}):
            try:
                (root / rel).mkdir(parents=True, exist_ok=True)
            except OSError:
                pass                        # its files cannot be written either: each is refused
        for rel, infos in sorted(files.items()):
            first, target = infos[0], root / rel
            if rel in folders:
                why, twice = "a folder of the same name is in the download too", 0
            else:
                why, twice = _unpack_entry(archive, infos, target, bad_names)
            if why:
                bad.append(BadEntry(shown(bad_names.get(first.filename) or first.filename), why, rel, twice))
                if rel not in folders:
                    try:
                        target.unlink(missing_ok=True)
                        target.touch()              # in its place, so that its student can be told
                    except OSError:
                        pass
                continue
            if len(infos) > 1:
                notes.append(f"{shown(first.filename)} is {len(infos)} times in {path.name}, with the same contents: "
                             "read once")
            when = zip_entry_time(first)
            if when is not None:
                os.utime(target, (when, when))      # the entry's time becomes the file's
    if shortened:
        notes.append(f"{len(shortened)} name{'s' if len(shortened) != 1 else ''} in {path.name} longer than "
                     f"{NAME_MAX} bytes, unpacked shortened: " + ", ".join(shown(str(p)) for p in shortened[:3])
                     + (" ..." if len(shortened) > 3 else ""))
    entries = [p for p in into.iterdir() if not p.name.startswith((".", "__MACOSX"))]
    if len(entries) == 1 and entries[0].is_dir() and not any(entries[0].glob("*.ipynb")):
        top = entries[0]
        bad = [BadEntry(b.entry, b.reason, b.path.relative_to(top.name), b.twice)
               if b.path.parts[0] == top.name and len(b.path.parts) > 1 else b for b in bad]
        return Unpacked(top, bad, notes)
    return Unpacked(into, bad, notes)
