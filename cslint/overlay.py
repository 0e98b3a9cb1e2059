"""Linting text that is not on disk (standard input, an editor's unsaved buffers) in its project.

An overlay maps paths to texts that stand in for those files while one analysis runs: every read of a
file's text (`sources.read_source`, the incremental survey) asks `unsaved_text` first. The rest of the
project is read from disk as usual, so a helper in a buffer traced from a `forward` in another saved
file is still found. The cache is read (reports of files the buffers cannot affect are reused) but
never written: an answer about text that is not on disk must not outlive the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from cslint.report import Diagnostic, RunResult

if TYPE_CHECKING:
    from cslint.cache import Cache
    from cslint.config import Settings
    from cslint.profile import Profile

_buffers: ContextVar[Mapping[str, str] | None] = ContextVar("cslint_unsaved_buffers", default=None)


def _key(path: Path) -> str:
    return os.path.abspath(path)


def unsaved_text(path: Path) -> str | None:
    """The text standing in for `path` in the current analysis, if any."""
    buffers = _buffers.get()
    return buffers.get(_key(path)) if buffers else None


def overlaid() -> bool:
    """Whether some file's text comes from an overlay in the current analysis."""
    return bool(_buffers.get())


@contextmanager
def unsaved_buffers(texts: Mapping[Path, str]) -> Iterator[None]:
    token = _buffers.set({_key(path): text for path, text in texts.items()})
    try:
        yield
    finally:
        _buffers.reset(token)


def lint_texts(texts: Mapping[Path, str], settings: Settings, codes: list[str], *,
               fix: bool | Callable[[Diagnostic], bool] = False,
               unsafe_fixes: bool = False, cache: Cache | None = None, context: list[Path] | None = None,
               profile: Profile | None = None) -> RunResult:
    """Lint (and with `fix`, fix in memory: `changed_files` hold the new texts; nothing is written) the
    `texts` as if they were the files at their paths, with the rest of the project (`context`, default:
    every Python file under the project root) read from disk. Reports only the buffers' paths. `fix`
    may choose which diagnostics' fixes to apply (one pass)."""
    from cslint.deep_stack import run_with_deep_stack
    from cslint.discovery import collect_files
    from cslint.incremental import Session

    if context is None:
        root = settings.project_root
        context = collect_files([root], settings) if root is not None and root.is_dir() else []
    targets = list(texts)
    wanted = {_key(p) for p in targets}
    context = [p for p in context if _key(p) not in wanted]
    session = Session(settings, codes, cache=cache.read_only() if cache is not None else None, jobs=1,
                      profile=profile)

    def run() -> RunResult:  # on the deep stack's own thread, so the buffers are set there
        with unsaved_buffers(texts):
            return session.run(targets, context=context, fix=fix, unsafe_fixes=unsafe_fixes)

    return run_with_deep_stack(run)
