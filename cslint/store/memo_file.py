"""A memo kept beside the cache: one JSON file in cslint's own cache directory, read and written under the
cache's rules (cslint/store/cache.py: only a directory that is cslint's own, no link followed, a write is a new
file renamed into place; sealed with this user's key, cslint/store/sealed.py), and the copies the server reads
ahead for the children it forks. A memo that cannot be read, or that cslint did not write for this user,
is none; one that cannot be written is not kept."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from cslint.store import sealed
from cslint.store.cache import open_cache_directory, write_new
from cslint.store.sealed import Signature

T = TypeVar("T")

# Memos read ahead by the server (cslint/server/), by path: a write replaces the file, and so its inode.
_preloaded: dict[str, tuple[Signature, Any]] = {}


def read(directory: Path, name: str, parse: Callable[[Any], T]) -> T | None:
    """The memo `name` parsed from its JSON, or taken from the server's memory while the file is still
    the one it read; None when there is none or it is damaged. What comes from memory is shared: the
    caller copies what it changes."""
    found = _read(directory, name, parse)
    return found[1] if found is not None else None


def _read(directory: Path, name: str, parse: Callable[[Any], T]) -> tuple[Signature, T] | None:
    try:
        descriptor = open_cache_directory(directory, create=False)
    except OSError:  # CacheDirectoryError too: the cache says why, once
        return None
    if descriptor is None:
        return None
    try:
        return sealed.load(name, parse, descriptor, _preloaded.get(_key(directory, name)))
    finally:
        os.close(descriptor)


def write(directory: Path, name: str, payload: Any) -> None:
    try:
        descriptor = open_cache_directory(directory, create=True)
    except OSError:
        return  # the cache itself says why, once
    try:
        data = sealed.seal(name, json.dumps(payload, separators=(",", ":")))
        if data is not None:
            write_new(descriptor, name, data)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def update(directory: Path, name: str, parse: Callable[[Any], T], change: Callable[[T | None], Any]) -> None:
    """Write `change(what is there now)` as the memo `name`, with no other process's update between the
    read and the write (workers of one `-j` run, and runs side by side, add to the same memo)."""
    with _locked(directory):
        write(directory, name, change(read(directory, name, parse)))


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    """An exclusive lock on the cache directory itself (no lock file for `cslint clean` to know about);
    where there is no such lock, or the directory cannot be opened, the update goes ahead unlocked."""
    try:
        import fcntl
    except ImportError:  # Windows
        yield
        return
    try:
        descriptor = open_cache_directory(directory, create=True)
    except OSError:
        descriptor = None
    if descriptor is None:
        yield
        return
    try:
        with contextlib.suppress(OSError):  # a file system without locks: unlocked, as before
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def preload(directory: Path, name: str, parse: Callable[[Any], Any]) -> None:
    """Read the memo ahead, in the server, for the children it forks."""
    key = _key(directory, name)
    _preloaded.pop(key, None)
    found = _read(directory, name, parse)
    if found is not None:
        _preloaded[key] = found


def _key(directory: Path, name: str) -> str:
    return os.path.join(os.path.abspath(directory), name)
