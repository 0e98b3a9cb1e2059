"""What each project file imports, remembered from one run to the next, so that choosing the target
(cslint/engine/target_inference.py) does not read and scan the whole project on every run.

The target is part of the cache's key, so it must be known before the cache is read: this memo is the
one thing in the cache directory that no setting changes. A file's entry is trusted as the cache trusts
its own: when the file's size and modification time are those recorded, and the modification is not so
recent that a second edit could hide in the same clock tick (`file_times.settled`). Anything else is
read again. The memo is kept as cslint/store/memo_file.py keeps memos beside the cache.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cslint import __version__
from cslint.store import memo_file
from cslint.core.file_times import settled

FORMAT = 4


@dataclass(frozen=True)
class FileImports:
    modules: frozenset[str]  # dotted names of the modules the file imports (relative imports excluded)
    uses_compile: bool  # it hands its model or training step to torch.compile (cslint/engine/compile_uses.py)
    # the dynamo settings its module-level code assigns, in order (analysis/dynamo_config.py)
    dynamo_config: tuple[tuple[str, bool], ...] = ()
    compiled_helpers: tuple[str, ...] = ()  # the internal functions it hands to torch.compile
    # what it hands to torch.compile is only its callers' (a compile wrapper it offers: compile_uses.py)
    compile_wrapper: bool = False
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
        self._now = time.time()  # what "recent" is measured from, for the whole run

    def load(self) -> ImportMemo:
        """Read under the cache's rules (cslint/store/memo_file.py), or taken from the server's memory."""
        self._entries = dict(memo_file.read(self.directory, self.name, _entries) or {})
        return self

    def imports(self, path: str, stat: os.stat_result, scan: Callable[[], FileImports | None]) -> FileImports | None:
        """What the file at absolute `path` (whose `stat` was just taken) imports: remembered, or
        `scan()`ned and remembered."""
        self._seen.add(path)
        known = self._entries.get(path)
        if known is not None and known[:2] == (stat.st_mtime_ns, stat.st_size) and settled(stat, self._now):
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
        payload = {"format": FORMAT, "files": {
            path: [mtime_ns, size, sorted(facts.modules), facts.uses_compile, [list(p) for p in facts.dynamo_config],
                   list(facts.compiled_helpers), facts.compile_wrapper]
            for path, (mtime_ns, size, facts) in kept.items()}}
        memo_file.write(self.directory, self.name, payload)


def memo_file_name() -> str:
    return f"v{__version__}-imports.memo"


def _entries(raw: dict[str, Any]) -> dict[str, tuple[int, int, FileImports]]:
    if raw.get("format") != FORMAT:
        return {}
    return {path: (mtime_ns, size, FileImports(frozenset(modules), bool(uses_compile),
                                               tuple((str(name), bool(value)) for name, value in settings),
                                               tuple(str(name) for name in helpers), bool(wrapper)))
            for path, (mtime_ns, size, modules, uses_compile, settings, helpers, wrapper) in raw["files"].items()}


def preload(directory: Path) -> None:
    memo_file.preload(directory, memo_file_name(), _entries)
