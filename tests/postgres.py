"""A throw-away PostgreSQL server for tests: Debian's binaries, a temporary folder, a free port.

initdb refuses to run as root, so as root the server runs as the `postgres` user (or
`nobody`). Everything lives in one temporary folder, removed afterwards. When the server
cannot be had, tests skip with one line, except under CI (CI=true), where they fail:
`make test` installs PostgreSQL where it can, and CI must not pass on a skip.
"""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager

import pytest


def _binaries() -> str | None:
    """The folder with initdb and pg_ctl: on PATH, or Debian's /usr/lib/postgresql/N/bin."""
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return os.path.dirname(os.path.realpath(found))
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                        key=lambda p: int(p.split("/")[-3]) if p.split("/")[-3].isdigit() else 0)
    return os.path.dirname(candidates[-1]) if candidates else None


def _user() -> str | None:
    """Who runs the server: ourselves unless root; as root, an unprivileged account."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unavailable(reason: str):
    """Skip with one clear line, or fail under CI."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"PostgreSQL is required under CI and is not usable: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL unavailable ({reason}); `make test` installs it as root with apt-get")


@contextmanager
def postgres_server():
    """Start a server; yield a SQLAlchemy URL to an empty database `gradebook` on it."""
    bindir = _binaries()
    if bindir is None:
        unavailable("no initdb/pg_ctl on PATH or in /usr/lib/postgresql/*/bin")
    user = _user()
    if os.geteuid() == 0 and user is None:
        unavailable("running as root and there is no postgres or nobody account to run the server")
    try:
        import psycopg
    except ImportError:
        unavailable("the psycopg driver is not installed (it is in requirements.txt)")
    base = tempfile.mkdtemp(prefix="autograder-pg-")
    data, log = os.path.join(base, "data"), os.path.join(base, "server.log")
    if user:
        info = pwd.getpwnam(user)
        os.chown(base, info.pw_uid, info.pw_gid)
    port = _free_port()
    run = dict(user=user, capture_output=True, text=True, timeout=180, cwd=base)
    started = False
    try:
        proc = subprocess.run([os.path.join(bindir, "initdb"), "-D", data, "-U", "postgres", "--auth=trust",
                               "--no-sync", "-E", "UTF8", "--locale=C"], **run)
        if proc.returncode != 0:
            unavailable(f"initdb failed: {(proc.stderr or proc.stdout).strip().splitlines()[-1:]}")
        options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=50"
        proc = subprocess.run([os.path.join(bindir, "pg_ctl"), "-D", data, "-l", log, "-o", options,
                               "-w", "-t", "60", "start"], **run)
        if proc.returncode != 0:
            tail = open(log).read().strip().splitlines()[-1:] if os.path.exists(log) else proc.stderr
            unavailable(f"the server did not start: {tail}")
        started = True
        with psycopg.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres",
                             autocommit=True) as admin:
            admin.execute("CREATE DATABASE gradebook")
        yield f"postgresql://postgres@127.0.0.1:{port}/gradebook"
    finally:
        if started:
            subprocess.run([os.path.join(bindir, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "stop"],
                           **run)
        shutil.rmtree(base, ignore_errors=True)
        deadline = time.time() + 5
        while os.path.exists(base) and time.time() < deadline:
            time.sleep(0.1)
            shutil.rmtree(base, ignore_errors=True)


__all__ = ["postgres_server", "unavailable"]
