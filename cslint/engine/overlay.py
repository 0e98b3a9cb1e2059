"""Linting text that is not on disk (standard input, an editor's unsaved buffers) in its project.

The texts stand in for those files while one analysis runs (core/unsaved.py); the rest of the project is
read from disk as usual, so a helper in a buffer traced from a `forward` in another saved file is still
found. The cache is read (reports of files the buffers cannot affect are reused) but never written: an
answer about text that is not on disk must not outlive the run. An editor's analyses reuse indexes
between edits (analysis/warm.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from cslint.analysis.warm import WarmIndexes, warm_analyses
from cslint.core.report import Diagnostic
from cslint.core.run_result import RunResult
from cslint.core.unsaved import buffer_key, unsaved_buffers

if TYPE_CHECKING:
    from cslint.core.config import Settings
    from cslint.store.cache import Cache
    from cslint.support.profile import Profile


def lint_texts(texts: Mapping[Path, str], settings: Settings, codes: list[str], *,
               fix: bool | Callable[[Diagnostic], bool] = False,
               unsafe_fixes: bool = False, cache: Cache | None = None, context: list[Path] | None = None,
               profile: Profile | None = None, warm: WarmIndexes | None = None) -> RunResult:
    """Lint (and with `fix`, fix in memory: `changed_files` hold the new texts; nothing is written) the
    `texts` as if they were the files at their paths, with the rest of the project (`context`, default:
    every Python file under the project root) read from disk. Reports only the buffers' paths. `fix`
    may choose which diagnostics' fixes to apply (one pass). `warm`: indexes kept between analyses."""
    from cslint.support.deep_stack import run_with_deep_stack
    from cslint.engine.discovery import collect_files
    from cslint.engine.incremental import Session

    if context is None:
        root = settings.project_root
        context = collect_files([root], settings) if root is not None and root.is_dir() else []
    targets = list(texts)
    wanted = {buffer_key(p) for p in targets}
    context = [p for p in context if buffer_key(p) not in wanted]
    session = Session(settings, codes, cache=cache.read_only() if cache is not None else None, jobs=1,
                      profile=profile)

    def run() -> RunResult:  # on the deep stack's own thread, so the buffers are set there
        with unsaved_buffers(texts), warm_analyses(warm):
            return session.run(targets, context=context, fix=fix, unsafe_fixes=unsafe_fixes)

    return run_with_deep_stack(run)
