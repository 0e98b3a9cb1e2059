"""What each project file imports, remembered from one run to the next, so that choosing the target
(cslint/target_inference.py) does not read and scan the whole project on every run.

The target is part of the cache's key, so it must be known before the cache is read: this memo is the
one thing in the cache directory that no setting changes. A file's entry is trusted as the cache trusts
its own: when the file's size and modification time are those recorded, and the modification is not so
recent that a second edit could hide in the same clock tick (`cache.settled`). Anything else is
read again. A memo that cannot be read is an empty one; one that cannot be written is not kept.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cslint import __version__
from cslint.cache import NO_FOLLOW, open_cache_directory, settled, write_new

FORMAT = 1


@dataclass(frozen=True)
class FileImports:
    modules: frozenset[str]  # dotted names of the modules the file imports (relative imports excluded)
    uses_compile: bool  # it calls or decorates with torch.compile
    packages: frozenset[str] = field(init=False)  # the top-level packages of `modules`

    def __post_init__(self) -> None:
        object.__setattr__(self, "packages", frozenset(m.partition(".")[0] for m in self.modules))


class ImportMemo:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.name = memo_file_name()
        self._entries: dict[str, tuple[int, int, FileImports]] = {}
        self._seen: set[str] = set()
        self._changed = False

    def load(self) -> ImportMemo:
        """Read under the cache's rules: only from a directory that is cslint's own. A memo the server read
        ahead (`preload`) is taken from its memory while the file is still the one it read."""
        try:
            directory = open_cache_directory(self.directory, create=False)
        except OSError:  # CacheDirectoryError too: the cache says why, once
            return self
        if directory is None:
            return self
        try:
            fd = os.open(self.name, os.O_RDONLY | NO_FOLLOW, dir_fd=directory)
            with os.fdopen(fd, encoding="utf-8") as handle:
                signature = _signature(os.fstat(handle.fileno()))
                preloaded = _preloaded.get(self._key())
                if preloaded is not None and preloaded[0] == signature:
                    self._entries = dict(preloaded[1])
                else:
                    self._entries = _entries(json.load(handle))
        except (OSError, ValueError, TypeError, AttributeError, KeyError):
            self._entries = {}  # none yet, or damaged: read every file, and write a new memo
        finally:
            os.close(directory)
        return self

    def _key(self) -> str:
        return os.path.join(os.path.abspath(self.directory), self.name)

    def imports(self, path: str, stat: os.stat_result, scan: Callable[[], FileImports | None]) -> FileImports | None:
        """What the file at absolute `path` (whose `stat` was just taken) imports: remembered, or
        `scan()`ned and remembered."""
        self._seen.add(path)
        known = self._entries.get(path)
        if known is not None and known[:2] == (stat.st_mtime_ns, stat.st_size) and settled(stat):
            return known[2]
        found = scan()
        if found is not None:
            self._entries[path] = (stat.st_mtime_ns, stat.st_size, found)
            self._changed = True
        return found

    def save(self) -> None:
        if not self._changed:
            return
        kept = {path: entry for path, entry in self._entries.items() if path in self._seen or os.path.exists(path)}
        payload = {"format": FORMAT, "files": {path: [mtime_ns, size, sorted(facts.modules), facts.uses_compile]
                                               for path, (mtime_ns, size, facts) in kept.items()}}
        try:
            directory = open_cache_directory(self.directory, create=True)
        except OSError:
            return  # the cache itself says why, once
        try:
            write_new(directory, self.name, json.dumps(payload, separators=(",", ":")))
        except OSError:
            pass
        finally:
            os.close(directory)


def memo_file_name() -> str:
    return f"v{__version__}-imports.memo"


def _entries(raw: dict) -> dict[str, tuple[int, int, FileImports]]:
    if raw.get("format") != FORMAT:
        return {}
    return {path: (mtime_ns, size, FileImports(frozenset(modules), bool(uses_compile)))
            for path, (mtime_ns, size, modules, uses_compile) in raw["files"].items()}


def _signature(stat: os.stat_result) -> tuple[int, int, int]:
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


# Memos read ahead by the server (cslint/server/), for the children it forks; a write replaces the file,
# and so its inode.
_preloaded: dict[str, tuple[tuple[int, int, int], dict[str, tuple[int, int, FileImports]]]] = {}


def preload(directory: Path) -> None:
    memo = ImportMemo(directory)
    _preloaded.pop(memo._key(), None)
    try:
        stat = os.lstat(os.path.join(directory, memo.name))
    except OSError:
        return
    memo.load()
    if memo._entries:
        _preloaded[memo._key()] = (_signature(stat), memo._entries)
