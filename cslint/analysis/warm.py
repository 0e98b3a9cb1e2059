"""What one editor session's analyses of a project reuse between edits.

An editor analyses the same project again on every edit. `WarmIndexes` keeps, between its analyses, each
file's index (`ModuleInfo`, with the syntax trees of the functions analysed so far, under one tree
budget for the session) while the file's text and module name are unchanged, and the parsed functions
of the files whose text changes (by their text): an edit then re-reads and re-indexes only the
edited buffer, and parses again only the function it changed. A parsed function is kept while it is
used for one of the file's last `KEPT_TEXTS` texts (an edit undone finds its function parsed): every
keystroke in a function makes a new text of it, and the session keeps only the latest few, never one
per keystroke (what it keeps does not grow with the edits). The files on disk are read again only
when their size, inode or modification time changed (or was too recent to trust, as `cslint check`
judges it: file_times.settled), and their resolved paths are kept until `forget_paths`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cslint.core.unsaved import buffer_key, unsaved_text

if TYPE_CHECKING:
    from cslint.analysis.index import ModuleInfo, TreeBudget
    from cslint.core.sources import SourceFile

_warm: ContextVar[WarmIndexes | None] = ContextVar("cslint_warm_indexes", default=None)
# Parsed functions kept for files whose text changes: some 45 bytes of tree per byte of source.
PIECE_BYTES = 1_000_000
KEPT_TEXTS = 4  # a parsed function unused for this many texts of its file indexed since is dropped


class WarmIndexes:
    """What one editor session's analyses of a project reuse (see the module's docstring)."""

    def __init__(self) -> None:
        self.modules: dict[str, tuple[str, str, bool, ModuleInfo]] = {}  # path -> text, name, package, index
        self.pieces: dict[tuple[str, str], Any] = {}  # (path, a function's text) -> its libcst module
        self.layouts: dict[Any, Any] = {}  # a kept libcst module -> its function's code and node positions
        self.walks: dict[Any, tuple[Any, Any]] = {}  # a kept libcst module -> a body in it, its walk.FlatTree
        self.sources: dict[str, tuple[tuple[int, int, int, int | None], SourceFile]] = {}  # path -> stat, read
        self._resolved: dict[Path, Path] = {}
        self._kept_trees: dict[int, tuple[str, str]] = {}  # id of each tree in `pieces` (alive while kept) -> its key
        self._texts_indexed: dict[str, int] = {}  # path -> how many of its texts were indexed
        self._piece_used: dict[tuple[str, str], int] = {}  # a key of `pieces` -> its file's text it was last used for
        self._piece_bytes = 0
        self._budget: TreeBudget | None = None
        from cslint.analysis.reuse import KeptAnalyses

        self.analyses = KeptAnalyses()  # function analyses, reused where nothing they read changed
        self._costs: dict[str, dict[tuple[str, int, int], float]] = {}  # an edited buffer's statements' costs
        self.buffer_trees: dict[str, tuple[str, Any]] = {}  # path -> an unsaved text indexed, Python's tree of it
        self.buffer_parses: dict[str, tuple[str, Any]] = {}  # the same, kept for the next edit (reparse.py)

    def take_buffer_tree(self, path: Path, text: str) -> Any:
        """Python's tree of `text`, if the last analysis indexed it as the buffer of `path` (once)."""
        kept = self.buffer_trees.pop(buffer_key(path), None)
        return kept[1] if kept is not None and kept[0] == text else None

    def buffer_parse(self, path: Path) -> tuple[str, Any] | None:
        """The last text of the unsaved buffer of `path` that was indexed, and Python's tree of it."""
        return self.buffer_parses.get(buffer_key(path)) if unsaved_text(path) is not None else None

    def forget_buffer(self, path: Path) -> None:
        self.buffer_trees.pop(buffer_key(path), None)
        self.buffer_parses.pop(buffer_key(path), None)

    def read(self, path: Path, max_bytes: int | None) -> SourceFile:
        """The file's source (a copy): its unsaved buffer, else as read from disk the last time its size,
        inode and modification time were the same (read again when they changed)."""
        from dataclasses import replace

        from cslint.core.file_times import settled
        from cslint.core.sources import read_source

        key = buffer_key(path)
        if unsaved_text(path) is not None:
            return read_source(path, max_bytes)
        try:
            info = os.stat(path)
        except OSError:
            self.sources.pop(key, None)
            return read_source(path, max_bytes)  # raises the error a read gives
        signature = (info.st_ino, info.st_size, info.st_mtime_ns, max_bytes)
        kept = self.sources.get(key)
        if kept is not None and kept[0] == signature:
            return replace(kept[1], path=path, tree=None)
        source = read_source(path, max_bytes)
        if settled(info):
            self.sources[key] = (signature, replace(source, tree=None))
        else:
            self.sources.pop(key, None)
        return source

    def statement_costs(self, path: Path) -> dict[tuple[str, int, int], float] | None:
        """The parsing cost of each top-level statement of the file's text as last measured (budget.py), for
        an unsaved buffer (edited again and again; files on disk are indexed once): None for others."""
        if unsaved_text(path) is None:
            return None
        return self._costs.setdefault(buffer_key(path), {})

    def resolve(self, path: Path) -> Path:
        found = self._resolved.get(path)
        if found is None:
            found = self._resolved[path] = path.resolve()
        return found

    def forget_paths(self) -> None:
        """Files were created, deleted or renamed: resolve paths again."""
        self._resolved.clear()

    def budget(self, limit: int) -> TreeBudget:
        """One tree budget for all analyses, so the trees the kept indexes hold stay bounded."""
        from cslint.analysis.index import TreeBudget

        if self._budget is None or self._budget.limit != limit:
            self._budget = TreeBudget(limit)
        return self._budget

    def kept_budget(self) -> TreeBudget | None:
        """The budget of the trees the kept indexes hold, once an analysis has made it."""
        return self._budget

    def module(self, path: Path, text: str, name: str, is_package: bool) -> ModuleInfo | None:
        found = self.modules.get(buffer_key(path))
        if found is None or found[:3] != (text, name, is_package):
            return None
        return found[3]

    def indexed(self, path: Path) -> ModuleInfo | None:
        """The file's last index, whatever its text was."""
        found = self.modules.get(buffer_key(path))
        return found[3] if found is not None else None

    def keep_module(self, path: Path, text: str, name: str, is_package: bool, info: ModuleInfo) -> None:
        """Keep the file's new index; its parsed functions not used for its last `KEPT_TEXTS` texts go."""
        key = buffer_key(path)
        self.modules[key] = (text, name, is_package, info)
        indexed = self._texts_indexed[key] = self._texts_indexed.get(key, 0) + 1
        for stale in [k for k in self.pieces if k[0] == key and self._piece_used[k] <= indexed - KEPT_TEXTS]:
            self._drop_piece(stale)

    def piece(self, path: Path, text: str) -> Any | None:
        key = (buffer_key(path), text)
        tree = self.pieces.get(key)
        if tree is not None:
            self._piece_used[key] = self._texts_indexed.get(key[0], 0)
        return tree

    def keep_piece(self, path: Path, text: str, tree: Any) -> None:
        if len(text) > PIECE_BYTES:
            return
        key = (buffer_key(path), text)
        if key in self.pieces:
            self._drop_piece(key)
        self.pieces[key] = tree
        self._kept_trees[id(tree)] = key
        self._piece_used[key] = self._texts_indexed.get(key[0], 0)
        self._piece_bytes += len(text)
        while self._piece_bytes > PIECE_BYTES:  # oldest first (dicts keep insertion order)
            self._drop_piece(next(iter(self.pieces)))

    def used(self, tree: Any) -> None:
        """A kept parsed function is used for the file's current text without being asked for by its text
        (a function carried over to a new index of its file keeps its tree)."""
        key = self._kept_trees.get(id(tree))
        if key is not None:
            self._piece_used[key] = self._texts_indexed.get(key[0], 0)

    def _drop_piece(self, key: tuple[str, str]) -> None:
        tree = self.pieces.pop(key)
        del self._kept_trees[id(tree)]
        del self._piece_used[key]
        self.layouts.pop(tree, None)
        self.walks.pop(tree, None)
        self._piece_bytes -= len(key[1])

    def layout(self, piece: Any, make: Callable[[], Any]) -> Any:
        """The layout (positions.piece_layout) of a kept parsed function, made once."""
        if piece not in self.layouts:
            if id(piece) not in self._kept_trees:
                return make()
            self.layouts[piece] = make()
        return self.layouts[piece]

    def body_walk(self, piece: Any, body: Any) -> Any:
        """The flat walk (walk.FlatTree) the rules share of a function's body in a kept parsed function,
        made once."""
        from cslint.analysis.walk import FlatTree

        found = self.walks.get(piece)
        if found is not None and found[0] is body:
            return found[1]
        flat = FlatTree(body)
        if id(piece) in self._kept_trees:
            self.walks[piece] = (body, flat)
        return flat


def keep_buffer_tree(path: Path, text: str, tree: Any) -> None:
    """Python's tree of an unsaved buffer the analysis just indexed, for the editor to read the buffer's
    definitions from without parsing it again (taken with `WarmIndexes.take_buffer_tree`)."""
    warm = _warm.get()
    if warm is not None and unsaved_text(path) is not None:
        warm.buffer_trees[buffer_key(path)] = warm.buffer_parses[buffer_key(path)] = (text, tree)


def warm_indexes() -> WarmIndexes | None:
    """The current editor session's reusable indexes, if the analysis runs in one."""
    return _warm.get()


@contextmanager
def warm_analyses(warm: WarmIndexes | None) -> Iterator[None]:
    """Analyses in this context (on this thread) reuse and add to `warm`."""
    token = _warm.set(warm)
    try:
        yield
    finally:
        _warm.reset(token)
