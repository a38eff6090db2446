"""Set up this repository for the course's exercises, in one command: `python3 install.py`
(on Windows: `py install.py`).

1. creates the virtual environment `.venv` (or reuses it);
2. installs PyTorch's CPU build: on Linux from PyTorch's own index of CPU wheels (PyPI's Linux
   wheel is the CUDA build, which brings several GB of NVIDIA libraries that no exercise uses);
   on macOS and Windows PyPI's wheel is the CPU build already;
3. installs requirements.txt (NumPy, JupyterLab and what the checker needs) and the checker
   (`autograder check`), linked to this folder;
4. compiles the checker's bytecode ahead, so the first check does not;
5. prints how long it took and how much disk `.venv` takes.

Options: `--torch-index URL` takes PyTorch from another index; `--torch-index pypi` takes it
from pip's configured index (PyPI, or your institution's mirror) as every other package.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def venv_python(folder: Path) -> Path:
    return folder / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def torch_requirement() -> str:
    """The `torch==...` line of requirements.txt."""
    for line in (HERE / "requirements.txt").read_text(encoding="utf-8").splitlines():
        if line.split("==")[0].strip().lower() == "torch":
            return line.split("#")[0].strip()
    raise SystemExit("install.py: requirements.txt names no torch version")


def size_of(folder: Path) -> int:
    total = 0
    for path in folder.rglob("*"):
        try:
            if path.is_file() and not path.is_symlink():
                total += path.stat().st_size
        except OSError:
            pass
    return total


def run(*command) -> None:
    print("+", " ".join(str(c) for c in command), flush=True)
    subprocess.run([str(c) for c in command], check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Set up .venv for the course's exercises and the checker.")
    parser.add_argument("--torch-index", default=CPU_INDEX if platform.system() == "Linux" else "pypi",
                        help="where PyTorch comes from: an index URL, or 'pypi' (default on Linux: "
                             f"{CPU_INDEX}, PyTorch's CPU build; elsewhere: pypi)")
    parser.add_argument("--venv", type=Path, default=HERE / ".venv", help="the virtual environment (default .venv)")
    args = parser.parse_args(argv)
    if sys.version_info < (3, 11):
        raise SystemExit(f"install.py: the course needs Python 3.11 or newer, not {platform.python_version()}")
    started = time.monotonic()
    if not venv_python(args.venv).exists():
        print(f"creating {args.venv}", flush=True)
        venv.create(args.venv, with_pip=True)
    python = venv_python(args.venv)
    pip = [python, "-m", "pip", "install", "--disable-pip-version-check"]
    torch = torch_requirement()
    # PyTorch alone from its index; its requirements, pinned in requirements.txt, from pip's own
    where = [] if args.torch_index == "pypi" else ["--index-url", args.torch_index]
    run(*pip, "--no-deps", torch, *where)
    run(*pip, "-r", HERE / "requirements.txt")
    # the checker, linked to this folder; built with the venv's setuptools where it has one
    # (Python 3.11's venv does), else in pip's isolated build environment
    isolated = subprocess.run([python, "-c", "import setuptools"], capture_output=True).returncode != 0
    run(*pip, "--no-deps", *([] if isolated else ["--no-build-isolation"]), "-e", HERE)
    run(python, "-m", "ipykernel", "install", "--sys-prefix", "--name", "python3")
    run(python, "-m", "compileall", "-q", HERE / "autograder")
    run(python, "-c", "from autograder.startup import ready_validator; ready_validator(write=True)")
    seconds = time.monotonic() - started
    print(f"set-up done in {seconds:.0f} s; {args.venv.name} takes {size_of(args.venv) / 1e9:.2f} GB")
    bin_dir = args.venv / ("Scripts" if os.name == "nt" else "bin")
    print(f"next: {bin_dir / 'jupyter'} lab exercises/02_similarity/02_similarity.ipynb")
    return 0


if __name__ == "__main__":
    sys.exit(main())
