"""`make edition`: what a term hands out, frozen: `_build/edition/VERSION/` holds

* `site.tar.gz`: the built book (`_build/html`), as served;
* `book.pdf`: the whole book as one PDF (`make pdf`);
* `student-repo.tar.gz`: the student repository (`make student-repo`);
* `MANIFEST.json`: the course version, when the edition was made, and each file's size and
  SHA-256.

Archives are reproducible (entries sorted, owners and times zeroed), every file is made
read-only, and an edition already written for a version is never overwritten: a course that
changed has another version, and so another folder.
"""
from __future__ import annotations

import argparse
import datetime
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import stat
import sys
import tarfile
from pathlib import Path

from . import course


def _tar_gz(folder: Path, dest: Path, prefix: str) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(folder.rglob("*")):
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                continue
            info = tar.gettarinfo(str(path), f"{prefix}/{path.relative_to(folder).as_posix()}")
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mtime = 0
            info.mode = 0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644
            if path.is_file():
                with path.open("rb") as f:
                    tar.addfile(info, f)
            else:
                tar.addfile(info)
    with open(dest, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as gz:
        gz.write(buffer.getvalue())


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_edition(out: Path, html: Path, pdf: Path, student_repo: Path, version: str) -> Path:
    """Write the edition of `version` into out/version (refused if it exists); returns that folder."""
    missing = [f"{what} ({path})" for what, path, ok in (
        ("the built book: make book", html, (html / "index.html").is_file()),
        ("the PDF: make pdf", pdf, pdf.is_file()),
        ("the student repository: make student-repo", student_repo, (student_repo / "README.md").is_file()))
        if not ok]
    if missing:
        raise course.CourseError("an edition needs " + "; ".join(missing))
    shown = {m for page in html.rglob("*.html")
             for m in re.findall(r"Course version ([0-9a-f]+)", page.read_text(encoding="utf-8", errors="replace"))}
    if shown != {version}:
        raise course.CourseError(f"the built book's footers show course version {', '.join(sorted(shown)) or 'none'}, "
                                 f"not {version}: build it again (make book)")
    folder = out / version
    if folder.exists():
        raise course.CourseError(f"the edition of course version {version} exists already ({folder}): it is "
                                 f"frozen; a changed course has another version")
    partial = out / f".{version}.partial"
    if partial.exists():                 # an interrupted run's (its folder is still writable)
        shutil.rmtree(partial)
    partial.mkdir(parents=True)
    _tar_gz(html, partial / "site.tar.gz", "site")
    (partial / "book.pdf").write_bytes(pdf.read_bytes())
    _tar_gz(student_repo, partial / "student-repo.tar.gz", "student-repo")
    files = {path.name: {"bytes": path.stat().st_size, "sha256": sha256(path)} for path in sorted(partial.iterdir())}
    made = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    manifest = {"course_version": version, "made": made,
                "files": files}
    (partial / "MANIFEST.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    for path in partial.iterdir():
        path.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
    partial.rename(folder)
    folder.chmod(0o555)
    return folder


def main(argv: list[str] | None = None) -> int:
    build = course.ROOT / "_build"
    parser = argparse.ArgumentParser(prog="python -m autograder.edition", description=__doc__.split("\n\n")[0])
    parser.add_argument("--to", type=Path, default=build / "edition", metavar="FOLDER")
    args = parser.parse_args(argv)
    try:
        folder = write_edition(args.to, build / "html", build / "pdf" / "book.pdf", build / "student-repo",
                               course.version())
    except course.CourseError as exc:
        print(f"edition: error: {exc}", file=sys.stderr)
        return 2
    for name, entry in json.loads((folder / "MANIFEST.json").read_text())["files"].items():
        print(f"{entry['sha256']}  {entry['bytes']:>12}  {name}")
    print(f"wrote {folder} (read-only)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
