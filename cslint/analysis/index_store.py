"""Each file of a run read and indexed once, whatever the number of analyses that need it.

A run analyses its files in groups, each with every file its files import (to resolve names). Where the
import graph is dense (a shared `utils` or `ops` imported everywhere, or torch itself) most groups load
most of the tree, and reading and indexing it again for each group made the run quadratic in the number
of files, and most of a cold run on the installed torch package. A process keeps here what reading a
file and indexing it gave, and each analysis takes it from here.

What is kept is what does not depend on the analysis: the text, the `ast`-built index, or the verdict
that the file cannot be analysed. Each analysis gets its own copy of the source as read (an analysis
that parses a file records what it found there), and what an analysis adds to an index (libcst trees,
nodes, what rules computed from them) goes back before the next analysis takes it
(`ModuleInfo.release`): an analysis sees the same as one that read and indexed the file itself.

Worker processes share their work through files (`save`, `shared`): each indexes a part of the run's
files first and writes what it found; a worker that needs a file another one indexed loads that part.
"""

from __future__ import annotations

import os
import pickle
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path

from cslint.analysis.index import ModuleInfo
from cslint.analysis.piece_pool import PiecePool
from cslint.core.sources import ReadError, SourceFile

IndexKey = tuple[Path, str, bool]  # path, module name, whether a package


class IndexStore:
    def __init__(self) -> None:
        self._sources: dict[Path, SourceFile | ReadError] = {}
        self._modules: dict[IndexKey, ModuleInfo | None] = {}
        self._refused: dict[IndexKey, tuple[tuple[int, int, str] | None, str]] = {}  # why, for None indexes
        self.reads: dict[Path, int] = {}  # how many times each file was read, and indexed (tests and --profile)
        self.indexed: dict[Path, int] = {}
        self._lent: list[ModuleInfo] = []  # the indexes the current analysis uses
        self._resolved: dict[Path, Path] = {}
        self.shared: dict[Path, str] = {}  # file -> where another process saved what it read and indexed
        self.pieces = PiecePool()  # functions parsed alone that analyses gave back

    def _fetch(self, path: Path) -> None:
        """Load what another process saved about `path` (and the other files saved with it)."""
        saved = self.shared.get(path)
        if saved is None or path in self._sources:
            return
        with open(saved, "rb") as handle:
            sources, modules, refused = pickle.load(handle)
        self.shared.pop(path)
        for other in sources:
            self.shared.pop(other, None)
        for other, source in sources.items():
            self._sources.setdefault(other, source)
        for key, module in modules.items():
            self._modules.setdefault(key, module)
        for key, why in refused.items():
            self._refused.setdefault(key, why)

    def save(self, paths: Iterable[Path], target: str) -> None:
        """Write what was read and indexed of `paths` for other processes (errors reading a file are not
        saved: a process that needs the file reads it again)."""
        wanted = {p for p in paths if isinstance(self._sources.get(p), SourceFile)}
        sources = {p: self._sources[p] for p in wanted}
        modules = {k: m for k, m in self._modules.items() if k[0] in wanted}
        refused = {k: why for k, why in self._refused.items() if k[0] in wanted}
        partial = f"{target}.{os.getpid()}.part"
        with open(partial, "wb") as handle:
            pickle.dump((sources, modules, refused), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(partial, target)

    def resolve(self, path: Path) -> Path:
        """`path.resolve()`, once per file and run (each group's analysis asked it of every file it loads)."""
        found = self._resolved.get(path)
        if found is None:
            found = self._resolved[path] = path.resolve()
        return found

    def read(self, path: Path, reader: Callable[[Path], SourceFile]) -> SourceFile:
        """The file's source as read the first time (a copy); the error reading it raised, raised again."""
        found = self._sources.get(path)
        if found is None and path in self.shared:
            self._fetch(path)
            found = self._sources.get(path)
        if found is None:
            self.reads[path] = self.reads.get(path, 0) + 1
            try:
                found = reader(path)
            except ReadError as exc:
                found = exc
            self._sources[path] = found
        if isinstance(found, ReadError):
            raise found
        return replace(found)

    def index(self, source: SourceFile, name: str, is_package: bool,
              indexer: Callable[[], ModuleInfo | None]) -> tuple[ModuleInfo | None, bool]:
        """The file's index (None: the file cannot be analysed), and whether it is new. An index that
        keeps a whole libcst tree it cannot give back (the file's text is not Python's `ast`'s) is not
        kept: the next analysis builds its own."""
        key = (source.path, name, is_package)
        if key in self._modules:
            module = self._modules[key]
            if module is not None:
                if module.loaded:
                    module.release()
                self._lent.append(module)
            else:
                source.tree = None
                source.syntax_error, source.problem_code = self._refused[key]
            return module, False
        self.indexed[source.path] = self.indexed.get(source.path, 0) + 1
        module = indexer()
        if module is None and source.syntax_error is not None:
            self._modules[key] = None
            self._refused[key] = (source.syntax_error, source.problem_code)
        elif module is not None and module.loader is not None:
            self._modules[key] = module
            self._lent.append(module)
        return module, True

    def end_analysis(self) -> None:
        """Take back the indexes an analysis used: its trees and nodes go, and so do its loader and budget
        (what would keep the analysis alive)."""
        for module in self._lent:
            if module.loaded:
                module.release()
            module.loader = module.piece_parser = module.budget = module.spare_pieces = None
        self._lent.clear()
        self.pieces.end_analysis()
