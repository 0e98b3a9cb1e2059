"""A check from a request to a result: the engine's entry point, which the command line stands on.

`discover(request)` finds what to check: the files under the paths named, the rest of their projects as
context, and the target they are for. `check(request, found)` analyses them: the report cache and the
libraries' summaries, the incremental session (standard input through the overlay), then `# noqa` added
or the fixes written, and returns the `CheckOutcome` (`check(request)` discovers first, for a front end
with nothing to say in between). The engine reads no command line and prints nothing: a front end turns
its arguments into a `CheckRequest`, prints the warnings and the report, and picks the exit code. What only
a front end can do (--verify runs the project under a backend; --runtime-log matches runtime logs) comes in
as the `analyse` callable, which is handed the engine's `lint`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from cslint.core.config import ConfigError, Settings
from cslint.core.run_result import RunResult
from cslint.support.profile import Profile
from cslint.support.progress import Progress

if TYPE_CHECKING:
    from cslint.engine.discovery import Skipped
    from cslint.store.cache import Cache
    from cslint.store.tree_memo import TreeMemo

# lint(files, fix, context=the project's other files) -> their result; `fix` may choose the findings to fix
Lint = Callable[..., RunResult]
# what a front end runs in place of the plain lint: (lint, the files named, the settings) -> the result
Analyse = Callable[[Lint, list[Path], Settings], RunResult]


@dataclass(frozen=True)
class CheckRequest:
    paths: tuple[Path, ...]  # as named (the front end's default: the current directory)
    settings: Settings  # the configuration with the front end's overrides; the target is inferred unless set
    codes: tuple[str, ...]  # the rules enabled
    fix: bool = False  # apply the fixes: written to the files, or returned for `buffers`
    diff: bool = False  # compute the fixes and write nothing
    buffers: Mapping[Path, str] = field(default_factory=dict)  # text checked in place of `paths` (standard input)
    isolated: bool = False  # analyse only the files named, not the rest of their projects
    force_exclude: bool = False  # `exclude` applies to the paths named too
    cache: bool = True  # read and write the report cache and the memo files
    cache_dir: Path | None = None  # default: next to the configuration (store/cache.py)
    jobs: int | None = None  # worker processes (default: the cores available)
    add_noqa: bool = False  # suppress every finding with a `# noqa` on its line
    profile: Profile = field(default_factory=lambda: Profile(enabled=False))  # where the time goes


@dataclass
class Discovery:
    """What a check covers, before anything is analysed."""

    settings: Settings  # with the target inferred
    paths: list[Path]  # the paths named, less those `force_exclude` excludes
    named: list[Path]  # what the walk started from: `paths`, or the buffers' paths
    files: list[Path]  # checked and reported
    context: list[Path]  # the rest of their projects: analysed, not reported
    skipped: list[Skipped]  # named: errors of the run; found in a walk: warnings
    memo_dir: Path | None  # where the memo files are (None without the cache)
    tree: TreeMemo | None


@dataclass
class CheckOutcome:
    result: RunResult
    settings: Settings  # as the check ran: the target inferred
    files: list[Path]
    buffers: dict[Path, str]  # the buffers' text as the result describes it: fixed, with `fix`
    noqa: tuple[int, int] | None = None  # with `add_noqa`: the directives added and the files edited


def discover(request: CheckRequest) -> Discovery:
    """The files under the paths named (and under the rest of their projects, as context) and the target."""
    from cslint.core.sources import safe_resolve
    from cslint.engine.discovery import collect_files, force_excluded, project_roots
    from cslint.engine.target_inference import with_inferred_target
    from cslint.store.cache import default_cache_dir
    from cslint.store.import_memo import ImportMemo
    from cslint.store.tree_memo import TreeMemo

    settings, buffers = request.settings, request.buffers
    paths = list(request.paths)
    if request.force_exclude and not buffers:
        paths = [p for p in paths if not force_excluded(p, settings)]
    skipped: list[Skipped] = []
    with request.profile.phase("discover files"):
        memos = request.cache_dir or default_cache_dir(settings) if request.cache else None
        tree = TreeMemo(memos).load() if memos is not None else None
        named = list(buffers) if buffers else paths
        files = collect_files(named, settings, skipped, tree) if not buffers else []
        given = {safe_resolve(path) for path in named}  # a file is checked in its project, unless isolated
        context = [] if request.isolated else \
            collect_files([root for root in project_roots(named) if root not in given], settings, [], tree)
        unreadable = {note.path for note in skipped if note.named}  # reported once, as named, not again as context
        if unreadable:
            context = [path for path in context if str(path) not in unreadable]
        memo = ImportMemo(memos).load() if memos is not None else None
        settings = with_inferred_target(settings, [*files, *context], memo)
    return Discovery(settings, paths, named, files, context, skipped, memos, tree)


def check(request: CheckRequest, found: Discovery | None = None, progress: Progress | None = None,
          analyse: Analyse | None = None) -> CheckOutcome:
    """Analyse what `discover` found (discovering it first when not given), add the `# noqa` directives or
    write the fixes (with `fix`, not `diff`), and return the outcome. `progress` is told how the analysis
    goes; `analyse`, when given, runs in place of the plain lint of the files."""
    from cslint.analysis.library_env import LibraryPathError, environment_for
    from cslint.store import library_cache
    from cslint.store.cache import default_cache_dir

    found = found or discover(request)
    settings = found.settings
    cache = _report_cache(request, settings)
    try:
        environment_for(settings.python)
    except LibraryPathError as exc:
        raise ConfigError(f"`python`: {exc}") from None
    library_cache.use(library_cache.LibraryCache(request.cache_dir or default_cache_dir(settings))
                      if request.cache else None)
    lint = _lint(request, found, cache, progress or Progress.off())
    if request.buffers:
        from cslint.engine.overlay import lint_texts

        result = lint_texts(request.buffers, settings, list(request.codes), fix=request.fix or request.diff,
                            unsafe_fixes=settings.unsafe_fixes, cache=cache, context=found.context,
                            profile=request.profile)
    elif analyse is not None:
        result = analyse(lint, found.files, settings)
    else:
        result = lint(found.files, request.fix or request.diff)
    _save_after_the_report(found.tree)
    result.errors[:0] = [str(note) for note in found.skipped if note.named]
    outcome = CheckOutcome(result, settings, found.files, dict(request.buffers))
    if request.add_noqa:
        from cslint.engine.noqa_edit import add_noqa

        outcome.noqa = add_noqa(result.diagnostics, result.errors)
    elif request.fix and not request.diff:  # --diff shows the fixes and writes nothing, even with --fix
        _apply_fixes(request, found, outcome, lint)
    return outcome


def as_reported(outcome: CheckOutcome) -> None:
    """The findings as a report shows them: a notebook's at their cell and line (the notebook read as the
    run saw it: the fixes written, or the buffers), a graph break with its entry in dynamo's registry."""
    from cslint.core.notebook import in_cells
    from cslint.core.sources import ReadError, read_source
    from cslint.core.unsaved import unsaved_buffers

    def notebook_of(path: Path):  # type: ignore[no-untyped-def]
        try:
            with unsaved_buffers(outcome.buffers):
                return read_source(path).notebook
        except ReadError:
            return None

    target = outcome.settings.target
    outcome.result.diagnostics = [d if d.targets else replace(d, targets=(target,))
                                  for d in in_cells(outcome.result.diagnostics, notebook_of)]
    if any("compile" in d.targets for d in outcome.result.diagnostics):
        from cslint.engine.graph_break_registry import with_graph_breaks

        outcome.result.diagnostics = with_graph_breaks(outcome.result.diagnostics, outcome.settings.python)


def _report_cache(request: CheckRequest, settings: Settings) -> Cache | None:
    from cslint.store.cache import Cache, default_cache_dir, settings_key

    with request.profile.phase("cache read"):
        cache = None if not request.cache else Cache(request.cache_dir or default_cache_dir(settings),
                                                     settings_key(settings, list(request.codes))).load()
    if cache is not None and cache.read_ahead:
        request.profile.count("cache read ahead by the server")
    return cache


def _lint(request: CheckRequest, found: Discovery, cache: Cache | None, progress: Progress) -> Lint:
    from cslint.engine.discovery import import_roots
    from cslint.engine.incremental import Session
    from cslint.support.cores import available_cores
    from cslint.support.deep_stack import run_with_deep_stack

    settings, codes = found.settings, list(request.codes)

    def lint(targets: list[Path], fix: bool, with_context: list[Path] = found.context) -> RunResult:
        session = Session(settings, codes, cache=cache, jobs=request.jobs or available_cores(),
                          profile=request.profile, roots=import_roots(found.named), progress=progress,
                          tree=found.tree)
        return run_with_deep_stack(lambda: session.run(targets, context=with_context, fix=fix,
                                                       unsafe_fixes=settings.unsafe_fixes))

    return lint


def _save_after_the_report(tree: TreeMemo | None) -> None:
    from cslint.store import library_cache
    from cslint.support.deferred import defer
    from cslint.support.scratch import remove_stale as remove_stale_scratch

    store = library_cache.active()
    if store is not None:
        defer(store.save)
    if tree is not None:
        defer(tree.save)
    defer(remove_stale_scratch)  # what runs killed outright (kill -9) left in the temporary directory


def _apply_fixes(request: CheckRequest, found: Discovery, outcome: CheckOutcome, lint: Lint) -> None:
    """The fixed text of the buffers into the outcome; the fixed files to disk, within the paths checked."""
    from cslint.core.sources import safe_resolve
    from cslint.engine import fix_writing

    result, settings = outcome.result, found.settings
    if request.buffers:
        fixed = {s.path: s.notebook.with_python(s.text) if s.notebook else s.text for s in result.changed_files}
        outcome.buffers = {name: fixed.get(name, text) for name, text in request.buffers.items()}
        return
    roots = [safe_resolve(p) for p in request.paths]
    roots += [safe_resolve(settings.project_root)] if settings.project_root else []
    fix_writing.write_fixes(result, lint, found.files + found.context, settings.unsafe_fixes, roots)
