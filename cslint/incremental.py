"""`cslint check` on a whole tree: reuse cached reports, re-check only what a change can reach, and
spread independent parts of the tree over worker processes.

What a file's report depends on:
- its own text and the files it imports, directly or not (callees, base classes, re-exports): cslint
  resolves names through import statements only, so the import graph bounds what a file can see;
- the files whose traced code calls into it (callers decide whether, and with which argument kinds,
  its helpers are traced), and the other callers of what it calls (a helper's parameters, so its
  result, are the join of all its callers' arguments). These are recorded after each analysis as the
  file's `reach` (`TracedProgram.influencing_modules`).
A cached report is reused while the content hashes of all of those are unchanged. A changed file makes
every file that imports it stale, plus the files it reached. A new caller is caught after the fact: if
a root in a re-checked file reaches a file whose report was reused, that file is re-checked too.

Files that do not import one another, directly or through a common caller, are analysed separately:
one component at a time in this process (memory stays bounded by the largest component) or in a pool
of `--jobs` processes.
"""

from __future__ import annotations

import gc
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cslint.analysis.import_scan import scan_imports
from cslint.analysis.module_names import assign_module_names
from cslint.cache import Cache, CachedDiagnostic, Entry, content_hash
from cslint.collector import fewer_collections
from cslint.config import Settings
from cslint.deferred import defer
from cslint.profile import Profile
from cslint.report import INTERNAL_ERROR, Diagnostic, FixSummary, RunResult
from cslint.untraced import nothing_to_report

# Below this much source, starting worker processes costs more than it saves.
MIN_PARALLEL_BYTES = 2_000_000
# Bytes of source whose libcst trees a worker keeps at once (a tree takes ~45x its source): with ast
# indexes and the rest, a worker stays within ~300 MB however many files it analyses together.
TREE_BUDGET_BYTES = 2_500_000
# After a component this large, its garbage (cyclic: see check_components) is collected at once.
COLLECT_AFTER_FILES = 100
# An mtime this recent may hide a second edit within the same clock tick: hash the file anyway.
RECENT_SECONDS = 2.0


@dataclass
class FileState:
    path: Path
    key: str
    target: bool
    name: str = ""
    is_package: bool = False
    hash: str = "unreadable"
    mtime_ns: int = 0
    size: int = 0
    imports: list[str] = field(default_factory=list)
    entry: Entry | None = None
    unchanged: bool = False


class Session:
    """One `cslint check` run. `codes` are the enabled rules; the rule classes (and libcst with them)
    are imported only if some file has to be analysed: a run served from the cache never needs them."""

    def __init__(self, settings: Settings, codes: list[str], cache: Cache | None, jobs: int = 1,
                 profile: Profile | None = None) -> None:
        self.settings = settings
        self.codes = codes
        self._rules: list[Any] | None = None
        self.cache = cache
        self.jobs = max(1, jobs)
        self.profile = profile or Profile(enabled=False)
        self.states: dict[str, FileState] = {}
        self.by_module: dict[str, str] = {}
        self._direct: dict[str, set[str]] = {}  # a file's import edges, resolved when first needed
        self._closures: dict[str, frozenset[str]] = {}
        self._target_files: dict[str, str | None] = {}  # imported name -> the file it resolves in

    @property
    def rules(self) -> list[Any]:
        if self._rules is None:
            from cslint import selection  # looked up at call time, so tests can swap enabled_rules

            self._rules = selection.enabled_rules(self.settings)
        return self._rules

    # ---- what changed ----------------------------------------------------------------------------

    def _survey(self, targets: list[Path], context: list[Path]) -> None:
        seen: set[str] = set()
        ordered: list[tuple[str, Path, bool]] = []
        for path, is_target in [(p, True) for p in targets] + [(p, False) for p in context]:
            key = _key(path)
            if key not in seen:
                seen.add(key)
                ordered.append((key, path, is_target))
        # one order for every run over the tree, whichever files were named: it decides module names of
        # same-named scripts and which root a shared helper's chain starts from
        ordered.sort()
        stats = {key: _stat(key) for key, _, _ in ordered}
        names = assign_module_names([p for _, p, _ in ordered],
                                    links={key for key, (_, link) in stats.items() if link})
        now = time.time()
        for key, path, is_target in ordered:
            state = FileState(path=path, key=key, target=is_target)
            state.name, state.is_package = names[path]
            state.entry = self.cache.entries.get(state.key) if self.cache else None
            self._hash(state, stats[key][0], now)
            self.states[state.key] = state
            self.by_module[state.name] = state.key

    def direct(self, key: str) -> set[str]:
        """The files a file imports (a run that reuses most reports never needs most files' edges)."""
        edges = self._direct.get(key)
        if edges is None:
            state = self.states.get(key)
            edges = self._direct[key] = self._edges(state) if state is not None else set()
        return edges

    def _hash(self, state: FileState, stat: os.stat_result | None, now: float) -> None:
        entry = state.entry
        if stat is None:
            return
        state.mtime_ns, state.size = stat.st_mtime_ns, stat.st_size
        trusted = entry is not None and entry.module == state.name and now - stat.st_mtime > RECENT_SECONDS
        if trusted and entry.mtime_ns == stat.st_mtime_ns and entry.size == stat.st_size:  # type: ignore[union-attr]
            state.hash, state.unchanged, state.imports = entry.hash, True, entry.imports  # type: ignore[union-attr]
            return
        try:
            data = state.path.read_bytes()
        except OSError:
            return
        state.hash = content_hash(data)
        if entry is not None and entry.hash == state.hash and entry.module == state.name:
            state.unchanged, state.imports = True, entry.imports
        else:
            with self.profile.phase("import scan"):
                state.imports = scan_imports(data.decode("utf-8", errors="replace"), state.name, state.is_package)

    def _edges(self, state: FileState) -> set[str]:
        edges: set[str] = set()
        for target in state.imports:
            key = self._target_files.get(target, "")
            if key == "":
                key = self._target_files[target] = self._file_of(target)
            if key is not None and key != state.key:
                edges.add(key)
        return edges

    def _file_of(self, target: str) -> str | None:
        """A qualified name resolves in the longest module prefix that exists (Project.lookup), and only
        there; what that module re-exports is its own edge."""
        parts = target.split(".")
        for end in range(len(parts), 0, -1):
            key = self.by_module.get(".".join(parts[:end]))
            if key is not None:
                return key
        return None

    def closure(self, key: str) -> frozenset[str]:
        found = self._closures.get(key)
        if found is None:
            seen = {key}
            stack = [key]
            while stack:
                for nxt in self.direct(stack.pop()):
                    if nxt not in seen:
                        seen.add(nxt)
                        stack.append(nxt)
            found = self._closures[key] = frozenset(seen)
        return found

    def dependencies(self, key: str, reach: list[str] | set[str]) -> set[str]:
        deps = set(self.closure(key))
        for root in reach:
            deps.add(root)
            if root in self.states:
                deps |= self.closure(root)
        return deps

    def digest(self, deps: set[str]) -> str:
        parts = [f"{k}={self.states[k].hash if k in self.states else 'absent'}" for k in sorted(deps)]
        return content_hash("\n".join(parts).encode("utf-8", errors="surrogateescape"))

    def _fresh(self, state: FileState, fixing: bool, unsafe: bool) -> bool:
        entry = state.entry
        if entry is None or not state.unchanged or entry.diagnostics is None:
            return False
        for d in entry.diagnostics:
            if d.code == INTERNAL_ERROR:
                return False
            if fixing and d.fix is not None and (d.fix[0] == "safe" or unsafe):
                return False  # its fix needs the parsed file
        return entry.deps == self.digest(self.dependencies(state.key, entry.reach))

    # ---- the run ---------------------------------------------------------------------------------

    def run(self, targets: list[Path], context: list[Path] = (), fix: bool = False,  # type: ignore[assignment]
            unsafe_fixes: bool = False) -> RunResult:
        with self.profile.phase("survey (stat, hash, imports)"):
            self._survey(targets, list(context))
        target_states = [s for s in self.states.values() if s.target]
        # Context files (`--project-context`) count when their own text changed (or was never analysed): a
        # changed one may now call into a target. One that is stale only through what it imports is not
        # re-checked for a report nobody asked for; its cached entry stays stale until it is a target.
        stale = {s.key for s in self.states.values()
                 if (s.target or not _seen_unchanged(s)) and not self._fresh(s, fix, unsafe_fixes)}
        self.profile.count("files", len(target_states))
        reports: dict[str, list[Diagnostic]] = {}
        reach: dict[str, set[str]] = {}
        result = RunResult(files_checked=sum(1 for s in target_states if s.hash != "unreadable"))
        for _ in range(len(self.states) + 1):  # grows only when a reused report turns out to be stale
            if not stale:
                break
            analysed = set(stale)
            for key in stale:
                entry = self.states[key].entry
                analysed |= {k for k in self.dependencies(key, entry.reach if entry else []) if k in self.states}
            result = RunResult(files_checked=result.files_checked)
            self.profile.count("files analysed", len(analysed))
            reports, reach = self._analyse(analysed, stale, fix, unsafe_fixes, result)
            newly = {key for key in analysed - stale if self.states[key].entry is not None and
                     not reach.get(key, set()) <= set(self.states[key].entry.reach)}  # type: ignore[union-attr]
            if not newly:
                break
            stale |= newly
        self.profile.count("reports reused from the cache", sum(1 for s in target_states if s.key not in stale))
        self.profile.count("files re-checked", sum(1 for s in target_states if s.key in stale))
        changed = {_key(s.path) for s in result.changed_files}
        if self.cache is not None:
            for key in stale:
                state = self.states[key]
                if key not in changed and state.hash != "unreadable" and (state.target or not fix):
                    self._store(state, reports.get(key, []), sorted(reach.get(key, set())))
        for state in target_states:
            if state.key in stale:
                result.diagnostics.extend(reports.get(state.key, []))
            else:
                result.diagnostics.extend(_restore(state.path, d) for d in state.entry.diagnostics)  # type: ignore[union-attr]
        if self.cache is not None:
            refreshed = self._refresh_file_times(stale)
            if stale or refreshed:
                with self.profile.phase("cache write"):
                    defer(self.cache.save)
        return result

    def _refresh_file_times(self, stale: set[str]) -> bool:
        """Record the mtime of files whose content was hashed and found unchanged (after a checkout, say),
        so the next run can trust it again. Whether there is anything to write."""
        refreshed = False
        for key, state in self.states.items():
            entry = state.entry
            if key in stale or entry is None or not state.unchanged or state.mtime_ns == 0:
                continue
            if (entry.mtime_ns, entry.size) != (state.mtime_ns, state.size):
                entry.mtime_ns, entry.size = state.mtime_ns, state.size
                refreshed = True
        return refreshed

    def _store(self, state: FileState, diagnostics: list[Diagnostic], reach: list[str]) -> None:
        assert self.cache is not None
        self.cache.entries[state.key] = Entry(
            hash=state.hash, mtime_ns=state.mtime_ns, size=state.size, module=state.name,
            imports=state.imports, reach=reach, deps=self.digest(self.dependencies(state.key, reach)),
            diagnostics=[_freeze(d) for d in diagnostics])

    def _analyse(self, analysed: set[str], wanted: set[str], fix: bool, unsafe: bool,
                 result: RunResult) -> tuple[dict[str, list[Diagnostic]], dict[str, set[str]]]:
        names = {self.states[k].path: (self.states[k].name, self.states[k].is_package) for k in analysed}
        if fix:  # fixes rewrite parsed trees in this process
            from cslint.runner import Linter

            linter = Linter(self.settings, self.rules, self.profile)
            order = [s.path for k, s in self.states.items() if k in wanted and s.target]
            others = [s.path for k, s in self.states.items() if k in analysed and not (k in wanted and s.target)]
            with fewer_collections():
                run = linter.run(order, fix=True, unsafe_fixes=unsafe, context=others, names=names)
            result.errors.extend(run.errors)
            result.fixed, result.changed_files = run.fixed, run.changed_files
            return _by_key(run.diagnostics), _keyed_reach(linter.reach)
        if nothing_to_report([self.states[k].path for k in analysed], self.settings, set(self.codes)):
            self.profile.count("analyses skipped: no traced code possible")
            return {}, {}
        components = self._components(analysed)
        component_of = {key: i for i, component in enumerate(components) for key in component}
        tasks: list[tuple[list[tuple[Path, bool]], dict[Path, tuple[str, bool]]]] = [([], {}) for _ in components]
        for key, state in self.states.items():  # survey order within each component
            if key in component_of:
                files, component_names = tasks[component_of[key]]
                files.append((state.path, key in wanted))
                component_names[state.path] = names[state.path]
        self.profile.count("components", len(tasks))
        size = sum(self.states[k].size for k in analysed)
        diagnostics: list[Diagnostic] = []
        reach: dict[str, set[str]] = {}
        outputs = self._run_tasks(tasks, parallel=self.jobs > 1 and len(tasks) > 1 and size >= MIN_PARALLEL_BYTES)
        for found, errors, component_reach, profile in outputs:
            result.errors.extend(errors)
            diagnostics.extend(found)
            for key, roots in component_reach.items():
                reach.setdefault(key, set()).update(roots)
            self.profile.merge(profile)
        return _by_key(diagnostics), reach

    def _components(self, keys: set[str]) -> list[set[str]]:
        parent = {k: k for k in keys}

        def find(k: str) -> str:
            while parent[k] != k:
                parent[k] = parent[parent[k]]
                k = parent[k]
            return k

        for key in keys:
            entry = self.states[key].entry
            for other in self.direct(key) | set(entry.reach if entry else ()):
                if other in parent:
                    parent[find(key)] = find(other)
        groups: dict[str, set[str]] = {}
        for key in keys:
            groups.setdefault(find(key), set()).add(key)
        return sorted(groups.values(), key=len, reverse=True)

    def _run_tasks(self, tasks: list[Any], parallel: bool) -> list[Any]:
        if not parallel:
            return check_components(self.settings, self.rules, tasks, self.profile.enabled)
        from concurrent.futures import ProcessPoolExecutor  # here: runs that need no workers skip the import
        from multiprocessing import get_context

        codes = [r.code for r in self.rules]
        self.profile.count("worker processes", self.jobs)
        with ProcessPoolExecutor(max_workers=self.jobs, mp_context=get_context("spawn"),
                                 initializer=_die_with_parent) as pool:
            futures = [pool.submit(_check_components, self.settings, codes, batch, self.profile.enabled)
                       for batch in _batches(tasks, self.jobs)]
            return [out for future in futures for out in future.result()]


def _stat(key: str) -> tuple[os.stat_result | None, bool]:
    """A file's stat and whether it is a symbolic link: one system call for a file that is not one."""
    try:
        found = os.lstat(key)
        if not stat.S_ISLNK(found.st_mode):
            return found, False
        return os.stat(key), True
    except OSError:
        return None, False


def _seen_unchanged(state: FileState) -> bool:
    return state.unchanged and state.entry is not None and state.entry.diagnostics is not None


def _die_with_parent() -> None:
    """Workers end when cslint is killed, instead of finishing work nobody will read (Linux only)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _batches(tasks: list[Any], jobs: int) -> list[list[Any]]:
    """Components (largest first) grouped so each worker call carries a fair share of the files."""
    limit = max(1, sum(len(files) for files, _ in tasks) // (jobs * 4))
    batches: list[list[Any]] = []
    filled = limit
    for task in tasks:
        if filled >= limit:
            batches.append([])
            filled = 0
        batches[-1].append(task)
        filled += len(task[0])
    return batches


def _check_components(settings: Settings, codes: list[str], batch: list[Any], profiled: bool) -> list[Any]:
    """In a worker process: rules travel by code (rule classes outside cslint.rules do not exist here)."""
    from cslint.deep_stack import run_with_deep_stack
    from cslint.rules import all_rules

    rules = [r for r in all_rules() if r.code in set(codes)]
    return run_with_deep_stack(lambda: check_components(settings, rules, batch, profiled))


def check_components(settings: Settings, rules: list[Any], tasks: list[Any], profiled: bool) -> list[Any]:
    """`check_component` for each task, with the collector's thresholds raised once for all of them:
    putting the defaults back after each one started a full collection while that component's objects
    were still alive (a fifth of a cold run on transformers). A file's index is one cycle (module ->
    function -> module), so a large component's garbage is collected right after it, when little else
    is alive, instead of adding to the next component's peak."""
    outputs = []
    with fewer_collections():
        for files, names in tasks:
            outputs.append(check_component(settings, rules, files, names, profiled))
            if len(files) >= COLLECT_AFTER_FILES:
                gc.collect()
    return outputs


def check_component(settings: Settings, rules: list[Any], files: list[tuple[Path, bool]],
                    names: dict[Path, tuple[str, bool]], profiled: bool) -> tuple[Any, ...]:
    """Analyse one component; report on the files flagged True. Returns plain data (crosses processes)."""
    from cslint.runner import Linter

    profile = Profile(enabled=profiled)
    linter = Linter(settings, rules, profile, tree_budget=TREE_BUDGET_BYTES)
    run = linter.run([p for p, report in files if report], context=[p for p, report in files if not report],
                     names=names)
    for d in run.diagnostics:
        d.fix = FixSummary(d.fix.applicability, d.fix.message) if d.fix is not None else None
    return run.diagnostics, run.errors, _keyed_reach(linter.reach), profile.as_dict()


def _by_key(diagnostics: list[Diagnostic]) -> dict[str, list[Diagnostic]]:
    out: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        out.setdefault(_key(d.path), []).append(d)
    return out


def _keyed_reach(reach: dict[Path, set[Path]]) -> dict[str, set[str]]:
    return {_key(path): {_key(r) for r in roots} for path, roots in reach.items()}


def _key(path: Path) -> str:
    """A file's key in the cache and in a run: its absolute path (symlinks not resolved)."""
    return os.path.abspath(path)


def _freeze(d: Diagnostic) -> CachedDiagnostic:
    return CachedDiagnostic(d.line, d.column, d.end_line, d.end_column, d.code, d.message,
                            (d.fix.applicability, d.fix.message) if d.fix is not None else None,
                            list(d.chain), d.reason, d.source_line)


def _restore(path: Path, d: CachedDiagnostic) -> Diagnostic:
    fix = FixSummary(d.fix[0], d.fix[1]) if d.fix is not None else None
    return Diagnostic(path, d.line, d.column, d.end_line, d.end_column, d.code, d.message, fix, list(d.chain),
                      d.reason, d.source_line)
