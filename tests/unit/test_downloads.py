"""Downloads that could stop the class's run or bend it (issue 35, item 3): malformed zip
entries, a Canvas download with files that are not notebooks, two entries that read as one
student. Each is that student's flagged, named result, and the others are graded; what
belongs to nobody is one line. The zips are built byte by byte where Python's zipfile would
refuse to write them (a wrong CRC, a size that lies, a name that is not UTF-8, an encrypted
entry, an unknown compression method)."""
from __future__ import annotations

import io
import struct
import warnings
import zipfile
from pathlib import Path

import pytest

from autograder.course import CourseError
from autograder.lms.submissions import collect
from tests.builders import A, CANVAS_ROSTER, MOODLE_WORKSHEET, WRONG, base_notebook, canvas_zip, text, with_answer

RIGHT = text(base_notebook())
NB = f"{A}.ipynb"


# ------------------------------------------------------------------ zips as no honest tool writes them
def _headers(data: bytearray, name: bytes) -> tuple[int, int]:
    """The offsets of an entry's local header and its central directory record."""
    central, local = data.rfind(name) - 46, data.find(name) - 30
    assert data[central:central + 4] == b"PK\x01\x02" and data[local:local + 4] == b"PK\x03\x04"
    return local, central


def _set(name: bytes, local_at: int, central_at: int, fmt: str, change):
    """A patch: the field at these offsets of both headers of entry `name`, changed."""
    def patch(data: bytearray) -> None:
        local, central = _headers(data, name)
        for at in (local + local_at, central + central_at):
            struct.pack_into(fmt, data, at, change(struct.unpack_from(fmt, data, at)[0]))
    return patch


def _rename(old: bytes, new: bytes):
    """A patch: an entry's name replaced by bytes of the same length, flagged as UTF-8."""
    flag = _set(old, 6, 8, "<H", lambda bits: bits | 0x800)

    def patch(data: bytearray) -> None:
        flag(data)
        data[:] = bytes(data).replace(old, new)
    return patch


def build_zip(path: Path, entries: list[tuple[str, bytes]], *patches) -> Path:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z, warnings.catch_warnings():
        warnings.simplefilter("ignore")                  # "Duplicate name": meant
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name, date_time=(2025, 3, 14, 12, 0, 0)), data)
    data = bytearray(buf.getvalue())
    for patch in patches:
        patch(data)
    path.write_bytes(bytes(data))
    return path


LONG = "b" * 300 + ".ipynb"          # an upload's own name, longer than a file system allows


def _malformed(case: str, student: str) -> tuple[list[tuple[str, bytes]], list, str | None]:
    """A student's entries of one malformed kind, the patches that make them so, and what
    the student's flag must say (None: a stray file, left out, the notebook graded)."""
    name = f"{student}/{NB}"
    raw = name.encode()
    one = [(name, RIGHT)]
    return {
        "bad CRC": (one, [_set(raw, 14, 16, "<I", lambda crc: crc ^ 1)], "checksum"),
        "size that lies": (one, [_set(raw, 22, 24, "<I", lambda size: 10)], "checksum"),
        "non-UTF-8 name": (one, [_rename(raw, raw.replace(b"similarity", b"similarit\xff"))], "not valid UTF-8"),
        "encrypted": (one, [_set(raw, 6, 8, "<H", lambda bits: bits | 1)], "encrypted"),
        "unknown compression": (one, [_set(raw, 8, 10, "<H", lambda method: 99)],
                                "method Python's zipfile cannot read, number 99"),
        "file and folder": (one + [(f"{name}/x.txt", b"x")], [], "a folder of the same name"),
        "entry twice": (one + [(name, text(with_answer(WRONG)))], [], "2 different files"),
        "folder and file": ([(student, b"x")] + one, [], None),
    }[case]


MALFORMED = ["bad CRC", "size that lies", "non-UTF-8 name", "encrypted", "unknown compression", "file and folder",
             "entry twice", "folder and file"]


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_entry_is_its_students_flagged_result(tmp_path, case):
    entries, patches, says = _malformed(case, "bob")
    download = build_zip(tmp_path / "class.zip", [(f"alice/{NB}", RIGHT), *entries], *patches)
    found = {s.student: s for s in collect(download, A, scratch=tmp_path)}
    assert set(found) == {"alice", "bob"}, found
    assert found["alice"].problem is None and found["alice"].notebook.read_bytes() == RIGHT
    bob = found["bob"]
    if says is None:              # a file named as bob's folder: left out, his notebook graded, he is told
        assert bob.problem is None and bob.notebook.read_bytes() == RIGHT
        assert [r.code for r in bob.remarks] == ["bad-file"] and "'bob'" in bob.remarks[0].message
        return
    assert bob.notebook is None and bob.problem.code in ("bad-entry", "entry-twice"), bob
    assert says in bob.problem.message and "bob/" in bob.problem.message, bob.problem.message


def test_a_damaged_notebook_that_is_not_the_one_graded_costs_nothing(tmp_path):
    """Beside the notebook named after the assignment, a damaged scratch notebook: the one
    graded would have been the assignment's anyway (the choice goes by names), so it is."""
    scratch = b"bob/scratch.ipynb"
    download = build_zip(tmp_path / "class.zip", [(f"bob/{NB}", RIGHT), (scratch.decode(), RIGHT)],
                         _set(scratch, 14, 16, "<I", lambda crc: crc ^ 1))
    bob = collect(download, A, scratch=tmp_path)[0]
    assert bob.problem is None and bob.notebook.name == NB and bob.notebook.read_bytes() == RIGHT
    assert [r.code for r in bob.remarks] == ["bad-file"] and "'bob/scratch.ipynb'" in bob.remarks[0].message


def test_a_long_upload_name_is_graded_under_a_shortened_name(tmp_path):
    download = build_zip(tmp_path / "class.zip", [(f"alice/{NB}", RIGHT), (f"bob/{LONG}", RIGHT)])
    found = collect(download, A, scratch=tmp_path)
    subs = {s.student: s for s in found}
    assert subs["bob"].problem is None and subs["bob"].notebook.read_bytes() == RIGHT
    assert len(subs["bob"].notebook.name.encode()) <= 255 and subs["bob"].notebook.name.endswith(".ipynb")
    assert any("longer than 255 bytes" in n and "bbbb" in n for n in found.notes), found.notes


def test_the_same_entry_twice_with_the_same_contents_is_read_once(tmp_path):
    download = build_zip(tmp_path / "class.zip", [(f"alice/{NB}", RIGHT), (f"alice/{NB}", RIGHT)])
    found = collect(download, A, scratch=tmp_path)
    assert found[0].problem is None and found[0].notebook.read_bytes() == RIGHT
    assert any("2 times" in n and "same contents" in n for n in found.notes), found.notes


def test_names_in_the_summary_cannot_drive_the_terminal(tmp_path):
    """A file name is the student's text: control characters (a terminal's escape sequences)
    reach the instructor's terminal escaped."""
    from autograder.lms.roster import read_roster

    (tmp_path / "roster.csv").write_text(CANVAS_ROSTER)
    files = {f"liddellalice_31023_6789161_{A}.ipynb": RIGHT, f"builderbob_31024_6789170_{A}.ipynb": RIGHT,
             f"evil_40001_6789200_\x1b[2J\x1b]0;owned\x07{A}.ipynb": RIGHT, "\x1b[31mstray.txt": b"x"}
    found = collect(canvas_zip(tmp_path / "c.zip", files), A, scratch=tmp_path,
                    roster=read_roster(tmp_path / "roster.csv"))
    assert any("evil_40001" in n for n in found.notes) and any("stray.txt" in n for n in found.notes), found.notes
    assert not any("\x1b" in n or "\x07" in n for n in found.notes), found.notes


def test_a_leading_space_does_not_take_a_classmates_id(tmp_path):
    for folder, nb in (("s01", RIGHT), (" s01", text(with_answer(WRONG)))):
        (tmp_path / "subs" / folder).mkdir(parents=True)
        (tmp_path / "subs" / folder / NB).write_bytes(nb)
    found = {s.student: s for s in collect(tmp_path / "subs", A)}
    assert set(found) == {"s01", "s01 (2)"}, found
    assert found["s01"].notebook.parent.name == "s01" and found["s01"].problem is None
    assert [r.code for r in found["s01"].remarks] == ["id-shared"] and "' s01'" in found["s01"].remarks[0].message
    assert found["s01 (2)"].problem.code == "duplicate-id" and "' s01'" in found["s01 (2)"].problem.message


def _moodle_shared(path: Path) -> Path:
    """Moodle's download, in which a second folder carries Alice's participant number."""
    return build_zip(path, [
        (f"Zainab Usman_2101_assignsubmission_file_/{NB}", RIGHT),
        (f"Alice Liddell_2102_assignsubmission_file_/{NB}", text(with_answer(WRONG))),
        (f"Mallory Mimic_2102_assignsubmission_file_/{NB}", RIGHT),
    ])


def test_two_moodle_folders_with_one_participant_number_are_named(tmp_path):
    from autograder.lms.roster import read_roster

    (tmp_path / "worksheet.csv").write_text(MOODLE_WORKSHEET)
    found = {s.student: s for s in collect(_moodle_shared(tmp_path / "m.zip"), A, scratch=tmp_path,
                                           roster=read_roster(tmp_path / "worksheet.csv"))}
    alice = found["aliddell@example.org"]
    assert alice.notebook is None and alice.problem.code == "lms-id-shared", alice
    assert "participant number 2102" in alice.problem.message and alice.problem.student_visible
    # the instructor (only) reads whose entries they are
    named = [r for r in alice.remarks if r.code == "lms-id-entries"]
    assert len(named) == 1 and not named[0].student_visible, alice.remarks
    assert "'Alice Liddell_2102_assignsubmission_file_'" in named[0].message
    assert "'Mallory Mimic_2102_assignsubmission_file_'" in named[0].message
    assert found["zusman@example.org"].notebook.read_bytes() == RIGHT


CLASSMATES = {31023: "liddellalice", 31024: "builderbob", 31025: "danverscarol"}


def _canvas_with_text_files(path: Path) -> Path:
    """Canvas's download: Zainab uploaded 8 text files, her three classmates their notebooks,
    Carol's under a name too long for a file system (Canvas keeps the upload's name whole)."""
    files = {f"usmanzainab_31022_67890{i:02d}_notes{i}.txt": b"my notes" for i in range(8)}
    files.update({f"{name}_{user}_679{user}_{A}.ipynb": RIGHT for user, name in CLASSMATES.items()})
    files[f"danverscarol_31025_67931025_{LONG}"] = files.pop(f"danverscarol_31025_67931025_{A}.ipynb")
    return canvas_zip(path, files)


def test_a_canvas_download_is_canvas_whatever_its_files_are(tmp_path):
    from autograder.lms.roster import read_roster

    (tmp_path / "roster.csv").write_text(CANVAS_ROSTER)
    download = _canvas_with_text_files(tmp_path / "canvas.zip")
    found = collect(download, A, scratch=tmp_path, roster=read_roster(tmp_path / "roster.csv"))
    assert found.layout == "canvas"
    subs = {s.student: s for s in found}
    assert set(subs) == {"s2401016", "s2401017", "s2401018", "s2401019"}, subs
    assert subs["s2401016"].notebook is None and subs["s2401016"].problem.code == "no-notebook"
    assert all(subs[s].notebook.read_bytes() == RIGHT for s in ("s2401017", "s2401018", "s2401019"))
    # against another course's roster, it matches nobody: refused
    (tmp_path / "other.csv").write_text(CANVAS_ROSTER.replace("3102", "5102"))
    with pytest.raises(CourseError, match="match nobody on the roster"):
        collect(download, A, scratch=tmp_path, roster=read_roster(tmp_path / "other.csv"))


def test_canvas_text_entries_and_links_are_canvas_too(tmp_path):
    """Canvas writes a text entry or a link as `name_USERID_text.html` / `_link.html`: such
    students submitted, not a notebook."""
    from autograder.lms import formats as lms

    for name in ("usmanzainab_31022_text.html", "liddellalice_LATE_31023_link.html",
                 f"builderbob_31024_6789170_{A}.ipynb"):
        (tmp_path / name).write_text("<p>x</p>")
    assert lms.detect(tmp_path) == "canvas"
    files, stray = lms.read_canvas(tmp_path, A)
    assert set(files) == {"31022", "31023", "31024"} and not stray and files["31023"].late
    found = {s.lms_id: s for s in collect(tmp_path, A)}
    assert found["31022"].problem.code == "no-notebook" and found["31024"].notebook is not None
