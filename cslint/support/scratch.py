"""Scratch directories in the temporary directory (`--verify`'s copy of the project, the runtime checker's
report, the `-j` workers' indexes), removed however the run ends.

A normal end, an exception, Ctrl-C, SIGTERM and SIGHUP remove the directory on the way out. A run killed
outright (kill -9, the machine's out-of-memory killer) cannot: the next run that makes a scratch directory,
and every `cslint check`, removes those whose creator is gone. Each directory holds a marker naming its
creating process (pid and start time, so a reused pid is not mistaken for it); a directory is removed only
when it has cslint's naming, is a real directory (not a link) owned by this user, and its marker's process
is gone, or it has no readable marker and is older than any cslint process takes to write one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

PREFIXES = ("cslint-verify-", "cslint-runtime-", "cslint-indexes-")
MARKER = ".cslint-scratch"
# mkdtemp's names: a prefix, then 8 characters of its alphabet
_NAME = re.compile("^(?:" + "|".join(map(re.escape, PREFIXES)) + r")[a-z0-9_]{8}$")
UNMARKED_STALE_SECONDS = 600  # the marker is written right after the directory is made
MAX_MARKER_BYTES = 4096
ENDING_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Ended(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived: the run ends as an interrupted one, its scratch removed on the way."""


@contextmanager
def scratch_directory(prefix: str) -> Iterator[str]:
    """A new private directory named `<prefix>XXXXXXXX` in the temporary directory, removed on exit."""
    assert prefix in PREFIXES
    remove_stale()
    with _ending_signals_raise():
        path = tempfile.mkdtemp(prefix=prefix)
        try:
            _write_marker(path)
            yield path
        finally:
            shutil.rmtree(path, ignore_errors=True)


def remove_stale(directory: str | None = None) -> list[str]:
    """Remove the scratch directories of cslint runs that were killed; the names of those removed."""
    directory = directory or tempfile.gettempdir()
    try:
        names = [name for name in os.listdir(directory) if _NAME.match(name)]
    except OSError:
        return []
    removed = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or not _abandoned(path, info):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(name)
    return removed


def _abandoned(path: str, info: os.stat_result) -> bool:
    creator = _read_marker(path)
    if creator is None:
        return time.time() - info.st_mtime > UNMARKED_STALE_SECONDS
    pid, started = creator
    return not process_running(pid) or (started is not None and _start_time(pid) not in (None, started))


def _write_marker(path: str) -> None:
    marker = {"pid": os.getpid(), "started": _start_time(os.getpid())}
    fd = os.open(os.path.join(path, MARKER), os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(marker, handle)


def _read_marker(path: str) -> tuple[int, int | None] | None:
    """The creator's (pid, start time) from the marker; None when there is no readable marker. It is opened
    without following a link and without waiting on a FIFO, and read only if a small regular file."""
    try:
        fd = os.open(os.path.join(path, MARKER), os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or found.st_size > MAX_MARKER_BYTES:
            return None
        data = json.loads(os.read(fd, MAX_MARKER_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    if not isinstance(data, dict):
        return None
    pid, started = data.get("pid"), data.get("started")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return None
    return pid, started if isinstance(started, int) and not isinstance(started, bool) else None


def _start_time(pid: int) -> int | None:
    """When a process started, in clock ticks since boot (Linux's /proc), or None where that is unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            text = handle.read()
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2:].split()  # after the command name, which may hold spaces
    try:
        return int(fields[19])  # field 22 of the line; the name's closing ")" ends field 2
    except (IndexError, ValueError):
        return None


def process_running(pid: int) -> bool:
    """Whether a process `pid` exists (another user's counts: it cannot be signalled, but it is there)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    except (OverflowError, ValueError):  # not a process id at all
        return False
    return True


@contextmanager
def _ending_signals_raise() -> Iterator[None]:
    """SIGTERM and SIGHUP, whose default is to end the process on the spot, raise `Ended` instead while a
    scratch directory exists, so it is removed. Handlers someone else set are left alone."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for number in ENDING_SIGNALS:
        if signal.getsignal(number) == signal.SIG_DFL:
            previous[number] = signal.signal(number, _raise_ended)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _raise_ended(number: int, _frame: object) -> None:
    raise Ended(signal.Signals(number).name)
