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

Files are analysed in groups, one at a time in this process (memory stays bounded by the largest) or
in a pool of `--jobs` processes. A group is a file with the files it imports that may define roots;
each group's analysis also loads everything its files import (to resolve names) but looks for roots
only in its own files. Two analyses that trace code in the same file would each see only some of its
callers: their groups are merged and analysed again, until every file's traced code is in one
analysis. The result is that of analysing all the files together, at a fraction of the wall time.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import re
import stat
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet

from cslint.analysis.generated_code import generated_twin
from cslint.analysis.graph import connected, reachable
from cslint.analysis.import_scan import scan_imports
from cslint.analysis.module_names import defining_module
from cslint.core import baseline
from cslint.core.file_times import settled
from cslint.store.cache import Cache, Entry
from cslint.core.sources import TooLarge, content_hash
from cslint.support.gc_thresholds import fewer_collections
from cslint.core.config import Settings
from cslint.support.deferred import defer
from cslint.engine.import_graph import ImportGraph, load_graph
from cslint.engine.project_parts import merged, project_parts
from cslint.core.notebook import Notebook, NotebookError, is_notebook
from cslint.core.unsaved import unsaved_text
from cslint.support.profile import Profile
from cslint.support.progress import Progress
from cslint.core.report import INTERNAL_ERROR, Diagnostic, FixSummary
from cslint.core.run_result import RunResult
from cslint.support.scratch import scratch_directory
from cslint.store.tree_memo import TreeMemo, name_project
from cslint.engine.untraced import may_hold_roots, nothing_to_report

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from cslint.analysis.index_store import IndexStore
    from cslint.engine.import_graph import GroupScope

# Below this much source, starting worker processes costs more than it saves.
MIN_PARALLEL_BYTES = 2_000_000
# Bytes of source whose libcst trees a worker keeps at once (a tree takes many times the memory of its
# source): a worker's memory then does not grow with how many files it analyses together.
TREE_BUDGET_BYTES = 2_500_000
# After a group this large, its garbage (cyclic: see check_groups) is collected at once.
COLLECT_AFTER_FILES = 100
# A helper imported by more files than this is not grouped with them by default (see `_groups`).
FEW_IMPORTERS = 3
_CLASS_HEADER = re.compile(rb"class[ \t]+\w+[ \t]*\(([^)]*)\)")  # at a line's start, after its indent
_WORD = re.compile(rb"[A-Za-z_]\w*")


@dataclass(frozen=True)
class GroupHints:
    """What a file's text says about how it may be called from traced code (see `Session._groups`)."""

    roots: bool = True  # it may define a root: see untraced.may_hold_roots
    torch: bool = True  # it mentions torch
    bases: frozenset[str] = frozenset()  # names its classes derive from

    @classmethod
    def of(cls, data: bytes) -> GroupHints:
        bases = {w.decode() for header in _base_lists(data) for w in _WORD.findall(header)}
        return cls(may_hold_roots(data), b"torch" in data, frozenset(bases))

    def as_json(self) -> list[Any]:
        return [self.roots, self.torch, sorted(self.bases)]

    @classmethod
    def from_json(cls, data: list[Any] | None) -> GroupHints:
        return cls(bool(data[0]), bool(data[1]), frozenset(data[2])) if data else cls()


def _base_lists(data: bytes) -> list[bytes]:
    """What is between the brackets of each `class Name(...)` line: found from the word `class`, since a
    multi-line pattern starting with `^` is tried at every position of the text."""
    found = []
    at = data.find(b"class")
    while at >= 0:
        line_start = data.rfind(b"\n", 0, at) + 1
        header = _CLASS_HEADER.match(data, at) if not data[line_start:at].strip(b" \t") else None
        if header is not None:
            found.append(header.group(1))
            at = data.find(b"class", header.end())
        else:
            at = data.find(b"class", at + 5)
    return found


FixChoice = Callable[[Diagnostic], bool]  # which diagnostics' fixes to apply (runner.Linter.run)


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
    hints: GroupHints = field(default_factory=GroupHints)
    entry: Entry | None = None
    unchanged: bool = False


class RuleSet:
    """The enabled rules, loaded when a file needs them: a run the cache serves whole imports neither the rules
    nor libcst. The sessions of one run's projects (project_parts.py) share one."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._rules: list[Any] | None = None

    @property
    def loaded(self) -> bool:
        return self._rules is not None

    def get(self) -> list[Any]:
        if self._rules is None:
            from cslint.engine import selection  # looked up at call time, so tests can swap enabled_rules

            self._rules = selection.enabled_rules(self.settings)
        return self._rules


class Session:
    """One `cslint check` run. `codes` are the enabled rules; the rule classes (and libcst with them)
    are imported only if some file has to be analysed: a run served from the cache never needs them."""

    def __init__(self, settings: Settings, codes: list[str], cache: Cache | None, jobs: int = 1,
                 profile: Profile | None = None, roots: list[Path] | None = None,
                 progress: Progress | None = None, tree: TreeMemo | None = None,
                 rule_set: RuleSet | None = None) -> None:
        self.settings = settings
        self.tree = tree  # the walks and module names of earlier runs
        self.progress = progress or Progress.off()
        # the project roots, on `sys.path` for namespace packages (default: the configured project root)
        self.roots = roots if roots is not None else [settings.project_root] if settings.project_root else []
        self.aliases: dict[str, Path] = {}
        self.codes = codes
        self._rule_set = rule_set or RuleSet(settings)
        self.cache = cache
        self.jobs = max(1, jobs)
        self.profile = profile or Profile(enabled=False)
        self.states: dict[str, FileState] = {}
        self.by_module: dict[str, str] = {}
        self._direct: dict[str, set[str]] = {}  # a file's import edges, resolved when first needed
        self._closures: dict[str, frozenset[str]] = {}
        self._dependencies: dict[frozenset[str], frozenset[str]] = {}  # see `dependencies`
        self._digests: dict[frozenset[str], str] = {}  # of the sets of dependencies
        self._order: dict[str, int] | None = None  # survey order
        self._known_edges: dict[str, list[Any]] = {}  # remembered edges by survey position: [hash, positions]
        self._surveyed: list[str] = []  # the files in survey order
        self._resolved: list[str] = []  # files whose edges were not remembered
        self._target_files: dict[str, str | None] = {}  # imported name -> the file it resolves in
        self._moved: set[str] = set()  # files whose text changed between the survey and their analysis
        # what this run read and indexed: in this process, or in each worker of the pool (one per analysis)
        self._indexes: IndexStore | None = None
        self._pool: Executor | None = None
        self._graph_file = ""  # where the run's import graph was saved for the workers (with what they indexed)
        # by key, the roots the last analysis found checked for another target than the run's (Linter.other_roots)
        self._other_roots: dict[str, list[list[str]]] = {}

    @property
    def rules(self) -> list[Any]:
        return self._rule_set.get()

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
        links = {key for key, (_, link) in stats.items() if link}
        paths = [p for _, p, _ in ordered]
        if self.tree is not None:
            names, self.aliases = self.tree.names(paths, [key for key, _, _ in ordered], links, self.roots)
            self._known_edges = self.tree.known_edges()
            self._surveyed = [key for key, _, _ in ordered]
        else:
            names, self.aliases, _ = name_project(paths, links, self.roots)
        now = time.time()
        for key, path, is_target in ordered:
            state = FileState(path=path, key=key, target=is_target)
            state.name, state.is_package = names[path]
            state.entry = self.cache.entries.get(state.key) if self.cache else None
            self._hash(state, stats[key][0], now)
            self.states[state.key] = state
            self.by_module[state.name] = state.key
        for alias, path in self.aliases.items():
            self.by_module.setdefault(alias, _key(path))

    def direct(self, key: str) -> set[str]:
        """The files a file imports (a run that reuses most reports never needs most files' edges)."""
        edges = self._direct.get(key)
        if edges is None:
            state = self.states.get(key)
            edges = self._direct[key] = self._edges(state) if state is not None else set()
        return edges

    def _edges(self, state: FileState) -> set[str]:
        """A file's import edges: as an earlier run with the same module names resolved them for the same
        text (cslint/store/tree_memo.py), or resolved now."""
        known = self._known_edges.get(str(self.order[state.key])) if self._known_edges else None
        if known is not None and known[0] == state.hash:
            keys = self._surveyed
            return {keys[i] for i in known[1]}
        self._resolved.append(state.key)
        return self._resolve_edges(state)

    def _remember_edges(self) -> None:
        """The edges resolved in this run, for the next (see `_edges`)."""
        if self.tree is None:
            return
        edges = {}
        for key in self._resolved:
            state = self.states[key]
            if state.hash != "unreadable":
                edges[str(self.order[key])] = [state.hash, sorted(self.order[t] for t in self._direct[key])]
        if edges:
            self.tree.remember_edges(edges)

    def _hash(self, state: FileState, stat: os.stat_result | None, now: float) -> None:
        entry = state.entry
        unsaved = unsaved_text(state.path)
        if unsaved is not None:  # an editor's buffer (core/unsaved.py): its text, whatever the file's times say
            data = unsaved.encode("utf-8", errors="surrogatepass")
            state.size = len(data)
        else:
            if stat is None:
                return
            state.mtime_ns, state.size = stat.st_mtime_ns, stat.st_size
            trusted = entry is not None and entry.module == state.name and settled(stat, now)
            if trusted and entry.mtime_ns == stat.st_mtime_ns and entry.size == stat.st_size:  # type: ignore[union-attr]
                state.hash, state.unchanged, state.imports = entry.hash, True, entry.imports  # type: ignore[union-attr]
                state.hints = GroupHints.from_json(entry.hints)  # type: ignore[union-attr]
                return
            if stat.st_size > self.settings.max_file_size:  # reported unread (WSC004), whatever its text
                state.hash = TooLarge(stat.st_size, self.settings.max_file_size).digest
                return
            try:
                data = state.path.read_bytes()
            except OSError:
                return
        state.hash = content_hash(data)
        if is_notebook(state.path):  # its imports and hints are those of its code cells
            with contextlib.suppress(NotebookError):
                data = Notebook.parse(data.decode("utf-8", errors="replace")).python.encode("utf-8")
        state.hints = GroupHints.of(data)
        if entry is not None and entry.hash == state.hash and entry.module == state.name:
            state.unchanged, state.imports = True, entry.imports
        else:
            with self.profile.phase("import scan"):
                state.imports = scan_imports(data.decode("utf-8", errors="replace"), state.name, state.is_package)

    def _resolve_edges(self, state: FileState) -> set[str]:
        edges: set[str] = set()
        for target in state.imports:
            key = self._target_files.get(target, "")
            if key == "":
                key = self._target_files[target] = defining_module(target, self.by_module)
            if key is not None and key != state.key:
                edges.add(key)
        return edges

    @property
    def order(self) -> dict[str, int]:
        """Each file's position in the survey."""
        if self._order is None:
            self._order = {key: i for i, key in enumerate(self.states)}
        return self._order

    def closure(self, key: str) -> frozenset[str]:
        found = self._closures.get(key)
        if found is None:
            found = self._closures[key] = frozenset(reachable({key}, self.direct) if self.direct(key) else (key,))
        return found

    def dependencies(self, key: str, reach: Iterable[str]) -> AbstractSet[str]:
        """What a file's report depends on: the files it imports, directly or not, and those its traced
        code reaches (`reach`) with what they import. Where traced code meets in a shared helper, most
        files reach the same files: they share one set, found in one walk (a walk per file and per file
        it reaches took time growing as N³)."""
        roots = frozenset(reach) | {key}
        if len(roots) == 1:
            return self.closure(key)
        found = self._dependencies.get(roots)
        if found is None:
            found = self._dependencies[roots] = frozenset(
                roots | reachable({r for r in roots if r in self.states}, self.direct))
        return found

    def digest(self, deps: AbstractSet[str]) -> str:
        found = self._digests.get(deps) if isinstance(deps, frozenset) else None
        if found is None:
            parts = [f"{k}={self.states[k].hash if k in self.states else 'absent'}" for k in sorted(deps)]
            found = content_hash("\n".join(parts).encode("utf-8", errors="surrogateescape"))
            if isinstance(deps, frozenset):
                self._digests[deps] = found
        return found

    def _fresh(self, state: FileState, fixing: bool, unsafe: bool) -> bool:
        entry = state.entry
        if entry is None or not state.unchanged or entry.diagnostics is None:
            return False
        for d in entry.diagnostics:
            if d.code == INTERNAL_ERROR:
                return False
            if fixing and d.fix is not None and (d.fix.applicability == "safe" or unsafe):
                return False  # its fix needs the parsed file
        return entry.deps == self.digest(self.dependencies(state.key, entry.reach))

    # ---- the run ---------------------------------------------------------------------------------

    def run(self, targets: list[Path], context: Sequence[Path] = (), fix: bool | FixChoice = False,
            unsafe_fixes: bool = False) -> RunResult:
        parts = project_parts(targets, context, self.roots)
        if len(parts) == 1:
            result, checked = self._run_part(targets, context, fix, unsafe_fixes)
        else:  # each project in its own namespace of module names (project_parts.py)
            results, checked = [], []
            for own, others in parts:
                part = Session(self.settings, self.codes, self.cache, self.jobs, self.profile, self.roots,
                               self.progress, self.tree, self._rule_set)
                found, part_checked = part._run_part(own, others, fix, unsafe_fixes)
                results.append(found)
                checked += part_checked
            result = merged(results)
        # after the cache: its reports are whole, so a change to the baseline never needs a new analysis
        return baseline.apply(result, self.settings.baseline, checked, self.codes)

    def _run_part(self, targets: Sequence[Path], context: Sequence[Path], fix: bool | FixChoice,
                  unsafe_fixes: bool) -> tuple[RunResult, list[Path]]:
        """The report on `targets` (the baseline not applied), and the files it checked."""
        self.progress.phase("looking at what changed")
        with self.profile.phase("survey (stat, hash, imports)"):
            self._survey(list(targets), list(context))
        target_states = [s for s in self.states.values() if s.target]
        # Every file of the run whose entry is not fresh is analysed again, reported on or not: a context
        # file stale only through what it imports may now call into a target (a helper it calls appeared),
        # and no entry may stay behind that a later run would trust.
        linked = self._linked_to(target_states)
        stale = {key for key in linked if not self._fresh(self.states[key], fix and self.states[key].target,
                                                           unsafe_fixes)}
        stale |= self._disputed() & linked
        self.profile.count("files", len(target_states))
        reports: dict[str, list[Diagnostic]] = {}
        reach: dict[str, frozenset[str]] = {}
        result = RunResult(files_checked=sum(1 for s in target_states if s.hash != "unreadable"))
        for _ in range(len(self.states) + 1):  # grows only when a reused report turns out to be stale
            if not stale:
                break
            # each stale file's dependencies (see `dependencies`), found in one walk: one walk per file
            # went over most of the tree each where imports are dense
            starts = set(stale)
            for key in stale:
                entry = self.states[key].entry
                starts.update(r for r in (entry.reach if entry else ()) if r in self.states)
            analysed = {k for k in reachable(starts, self.direct) if k in self.states}
            result = RunResult(files_checked=result.files_checked)
            self.profile.count("files analysed", len(analysed))
            reports, reach = self._analyse(analysed, stale, fix, unsafe_fixes, result)
            newly = {key for key in analysed - stale if self.states[key].entry is not None and
                     not reach.get(key, frozenset()) <= {key, *self.states[key].entry.reach}}  # type: ignore[union-attr]
            if not newly:
                break
            stale |= newly
        self.profile.count("reports reused from the cache", sum(1 for s in target_states if s.key not in stale))
        self.profile.count("files re-checked", sum(1 for s in target_states if s.key in stale))
        changed = {_key(s.path) for s in result.changed_files}
        if self.cache is not None:
            for key in stale:
                state = self.states[key]
                found = sorted(reach.get(key, frozenset()) - {key})
                if key not in changed and state.hash != "unreadable" and (state.target or not fix) and \
                        self._storable(state, found):
                    self._store(state, reports.get(key, []), found, self._other_roots.get(key, []))
        for state in target_states:
            if state.key in stale:
                result.diagnostics.extend(reports.get(state.key, []))
                roots = self._other_roots.get(state.key, [])
            else:
                result.diagnostics.extend(replace(d, path=state.path) for d in state.entry.diagnostics)  # type: ignore[union-attr]
                roots = state.entry.roots  # type: ignore[union-attr]
            result.other_roots.extend((target, name, state.path) for target, name in roots)
        self._remember_edges()
        if self.cache is not None:
            refreshed = self._refresh_file_times(stale)
            if stale or refreshed:
                with self.profile.phase("cache write"):
                    defer(self.cache.save)
        return result, [s.path for s in target_states if s.hash != "unreadable"]

    def _linked_to(self, targets: list[FileState]) -> set[str]:
        """The files whose analysis can change a target's report: those linked to a target through imports,
        in either direction, directly or not (its callers, its callees, and the other callers of what it
        calls). Names resolve through imports only, so no other file can reach a target, and a context file
        outside this part of the project is not analysed (nor its cache entry renewed)."""
        keys = {s.key for s in targets}
        if len(keys) == len(self.states):
            return keys
        importers: dict[str, set[str]] = {}
        for key in self.states:
            for imported in self.direct(key):
                importers.setdefault(imported, set()).add(key)
        return reachable(keys, lambda key: self.direct(key) | importers.get(key, set()))

    def _disputed(self) -> set[str]:
        """Files whose cached reports disagree about reaching each other. Reach is symmetric (two files
        reach each other when traced code in both calls, directly or not, the same function), so when
        one file's entry says it reaches another whose entry does not name it back, the two entries come
        from analyses that saw different sets of files (a run on a few files, then one on the project):
        the narrower one missed a caller. Both are analysed again, together."""
        claims: dict[str, set[str]] = {}
        for key, state in self.states.items():
            if state.entry is not None and state.entry.diagnostics is not None:
                for other in state.entry.reach:
                    if other in self.states:
                        claims.setdefault(other, set()).add(key)
        disputed: set[str] = set()
        for key, claimants in claims.items():
            entry = self.states[key].entry
            missing = claimants - set(entry.reach) if entry is not None and entry.diagnostics is not None else set()
            if missing:
                disputed |= missing | {key}
        self.profile.count("reports whose callers disagree", len(disputed))
        return disputed

    def _note_read(self, hashes: dict[str, str]) -> None:
        """The content hashes of the files as an analysis read them: one that differs from the survey's
        was rewritten while cslint ran, and no entry that depends on it is stored."""
        self._moved.update(key for key, digest in hashes.items()
                           if key in self.states and digest != self.states[key].hash)

    def _storable(self, state: FileState, reach: list[str]) -> bool:
        """An entry describes the very text analysed, and so does its digest of what it depended on."""
        return not self._moved or self._moved.isdisjoint(self.dependencies(state.key, reach) | {state.key})

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

    def _store(self, state: FileState, diagnostics: list[Diagnostic], reach: list[str],
               roots: list[list[str]]) -> None:
        assert self.cache is not None
        self.cache.entries[state.key] = Entry(
            hash=state.hash, mtime_ns=state.mtime_ns, size=state.size, module=state.name,
            imports=state.imports, reach=reach, deps=self.digest(self.dependencies(state.key, reach)),
            diagnostics=list(diagnostics), hints=state.hints.as_json(), roots=[list(root) for root in roots])

    def _analyse(self, analysed: set[str], wanted: set[str], fix: bool | FixChoice, unsafe: bool,
                 result: RunResult) -> tuple[dict[str, list[Diagnostic]], dict[str, frozenset[str]]]:
        names = {self.states[k].path: (self.states[k].name, self.states[k].is_package) for k in analysed}
        self._other_roots = {}
        if fix:  # fixes rewrite parsed trees in this process
            from cslint.engine.runner import Linter

            linter = Linter(self.settings, self.rules, self.profile)
            linter.aliases = self.aliases
            linter.progress = self.progress
            order = [s.path for k, s in self.states.items() if k in wanted and s.target]
            others = [s.path for k, s in self.states.items() if k in analysed and not (k in wanted and s.target)]
            with fewer_collections():
                run = linter.run(order, fix=fix, unsafe_fixes=unsafe, context=others, names=names,
                                 apply_baseline=False)  # the reports are cached whole; see `run`
            result.errors.extend(run.errors)
            result.fixed, result.changed_files, result.fixed_codes = run.fixed, run.changed_files, run.fixed_codes
            self._note_read(_keyed_hashes(linter.read_hashes))
            self._other_roots = _keyed_roots(linter.other_roots)
            return _by_key(run.diagnostics), _keyed_reach(linter.reach)
        if nothing_to_report([self.states[k].path for k in analysed], self.settings, set(self.codes)):
            self.profile.count("analyses skipped: no traced code possible")
            return {}, {}
        groups = self._groups(analysed)
        self.profile.count("groups", len(groups))
        size = sum(self.states[k].size for k in analysed)
        parallel = self.jobs > 1 and len(groups) > 1 and size >= MIN_PARALLEL_BYTES
        graph = self._import_graph(analysed, wanted)
        with contextlib.ExitStack() as workers:
            if parallel:
                self._pool = workers.enter_context(self._start_pool())
                workers.callback(setattr, self, "_pool", None)
                directory = workers.enter_context(scratch_directory("cslint-indexes-"))
                self._graph_file = os.path.join(directory, "graph.pickle")
                self._index_in_workers(analysed, names, directory, graph)
            done = self._analyse_groups(groups, graph)
        if parallel:
            self.profile.count("worker processes", self.jobs)
        return self._collect(done, result)

    def _index_in_workers(self, analysed: set[str], names: dict[Path, tuple[str, bool]], directory: str,
                          graph: ImportGraph) -> None:
        """Each file read and indexed once, by one of the workers, in parts of about equal size. Meanwhile
        this process saves the import graph with where each part goes (for the workers whose groups need
        its files: see index_store.py) and imports the rules, which the workers would otherwise wait for."""
        assert self._pool is not None
        keys = [k for k in self.states if k in analysed]
        parts = _batches(keys, [self.states[k].size for k in keys], self.jobs)
        saved = [os.path.join(directory, f"{i}.pickle") for i in range(len(parts))]
        futures = [self._pool.submit(_index_part, self.settings, [self.states[k].path for k in part],
                                     {self.states[k].path: names[self.states[k].path] for k in part}, target,
                                     self.profile.enabled)
                   for part, target in zip(parts, saved)]
        self.progress.phase("indexing", len(keys))
        graph.save(self._graph_file, {self.states[k].path: target for part, target in zip(parts, saved) for k in part})
        self._rule_set.get()  # now, while the workers index: they wait for nothing after
        for future, part in zip(futures, parts):
            self.profile.merge(future.result())
            self.progress.advance(len(part))

    def _import_graph(self, analysed: set[str], wanted: set[str]) -> ImportGraph:
        """The analysed files in survey order, with their names and imports, for every group's analysis."""
        keys = [key for key in self.states if key in analysed]
        position = {key: i for i, key in enumerate(keys)}
        states = [self.states[key] for key in keys]
        return ImportGraph([s.path for s in states], [(s.name, s.is_package) for s in states],
                           [sorted(position[o] for o in self.direct(key) if o in position) for key in keys],
                           [key in wanted for key in keys], self.aliases)

    def _analyse_groups(self, groups: list[set[str]], graph: ImportGraph) -> list[tuple[set[str], GroupReport]]:
        done: list[tuple[set[str], GroupReport]] = []
        pending = groups
        self.progress.phase("analysing", sum(map(len, groups)))
        while pending:
            outputs = self._run_tasks(pending, graph)
            for output in outputs:
                self.profile.merge(output.profile)
            done += zip(pending, outputs)
            clashes = _clashes([set(output.reach) for _, output in done])
            if not clashes:
                break
            self.profile.count("groups analysed again, together", sum(len(c) for c in clashes))
            pending = self._heaviest_first([set().union(*(done[i][0] for i in c)) for c in clashes])
            self.progress.phase("analysing again the groups whose traced code meets", sum(map(len, pending)))
            merged = set().union(*clashes)
            done = [d for i, d in enumerate(done) if i not in merged]
        return done

    def _groups(self, keys: set[str]) -> list[set[str]]:
        """The files analysed together, largest first: a file with what its cached report says reaches it,
        the files it imports that may hold roots (`def forward`, ...), and, unless many files import
        them, those that define its base classes on top of torch (mixins, caches). Traced code rarely
        calls into what else a file imports (configurations, `Auto` classes, constants); when it does,
        the groups involved are found out afterwards (`_clashes`) and analysed again as one."""
        importers: dict[str, int] = {}
        for key in keys:
            for other in self.direct(key):
                importers[other] = importers.get(other, 0) + 1
        bases = {key: self._base_files(self.states[key]) for key in keys}
        on_torch = _derived_from({k for k in keys if self.states[k].hints.torch}, bases)
        # A base class's traced method calling `self.hook()` reaches its subclasses' overrides (however many
        # files import the base): a file goes with the files its bases come from when a root may sit
        # above them.
        on_roots = _derived_from({k for k in keys if self.states[k].hints.roots}, bases)

        def links(key: str) -> set[str]:
            twin = self._generated_twin(key, keys)
            if twin is not None:  # a template holds no roots beside its twin (generated_code): it goes with
                return {twin}     # the twin alone, not with every model it imports (most of the models)
            entry = self.states[key].entry
            found = {o for o in self.direct(key) if o in keys and self.states[o].hints.roots}
            found |= {o for o in bases[key] if o in on_torch and importers.get(o, 0) <= FEW_IMPORTERS or o in on_roots}
            return found | {o for o in (entry.reach if entry else ()) if o in keys}

        return self._heaviest_first(connected(keys, ((key, other) for key in keys for other in links(key))))

    def _generated_twin(self, key: str, keys: set[str]) -> str | None:
        """The file generated from `key` when `key` is a code-generation template and its twin is analysed."""
        state = self.states[key]
        twin = generated_twin(state.name) if state.name and not state.is_package else None
        if twin is None:
            return None
        return next((o for o in self.direct(key) if o in keys and self.states[o].name == twin), None)

    def _base_files(self, state: FileState) -> set[str]:
        """The files a file imports its base classes from."""
        bases = state.hints.bases
        if not bases:
            return set()
        self.direct(state.key)  # resolves its import targets
        return {self._target_files[t] for t in state.imports  # type: ignore[misc]
                if t.rpartition(".")[2] in bases and self._target_files.get(t)}

    def _weight(self, group: set[str]) -> int:
        return sum(self.states[k].size for k in group)

    def _heaviest_first(self, groups: list[set[str]]) -> list[set[str]]:
        return sorted(groups, key=lambda group: (-self._weight(group), min(group)))

    def _collect(self, done: list[tuple[set[str], GroupReport]],
                 result: RunResult) -> tuple[dict[str, list[Diagnostic]], dict[str, frozenset[str]]]:
        """Each file's report and reach from the one analysis its traced code was in, else from its group's."""
        owner: dict[str, int] = {}
        for i, (group, _) in enumerate(done):
            owner.update(dict.fromkeys(group, i))
        for i, (_, output) in enumerate(done):
            owner.update(dict.fromkeys(output.reach, i))
        diagnostics: list[Diagnostic] = []
        reach: dict[str, frozenset[str]] = {}
        errors: dict[str, None] = {}
        for i, (_, output) in enumerate(done):
            self._note_read(output.read)
            errors.update(dict.fromkeys(output.errors))
            diagnostics.extend(d for d in output.diagnostics if owner.get(_key(d.path)) == i)
            reach.update((key, roots) for key, roots in output.reach.items() if owner[key] == i)
            for key, roots in output.roots.items():  # a file's roots are the same in each analysis finding them
                self._other_roots.setdefault(key, roots)
        result.errors.extend(errors)
        return _by_key(diagnostics), reach

    def _run_tasks(self, groups: list[set[str]], graph: ImportGraph) -> list[GroupReport]:
        """Each group's output, in order. A group's task is its files' positions in `graph` (what they
        import is found there, as far as the analysis needs). Workers get batches of about equal source,
        heaviest first, each as soon as one is free, and never more than one ahead of them."""
        def task(group: set[str]) -> list[int]:
            return sorted(graph.position[self.states[key].path] for key in group)

        if self._pool is None:
            if self._indexes is None:
                from cslint.analysis.index_store import IndexStore

                self._indexes = IndexStore()
            return check_groups(self.settings, self.rules, graph, (task(g) for g in groups), self.profile.enabled,
                                self._indexes, done=lambda i: self.progress.advance(len(groups[i])))
        from concurrent.futures import FIRST_COMPLETED, wait

        codes = [r.code for r in self.rules]
        batches = _batches(list(range(len(groups))), [self._weight(g) for g in groups], self.jobs)
        outputs: list[list[GroupReport]] = [[] for _ in batches]
        running: dict[Any, int] = {}
        waiting = iter(enumerate(batches))
        while True:
            while len(running) < 2 * self.jobs:
                nxt = next(waiting, None)
                if nxt is None:
                    break
                number, batch = nxt
                running[self._pool.submit(_check_groups, self.settings, codes, self._graph_file,
                                          [task(groups[i]) for i in batch], self.profile.enabled,
                                          _library_cache_directory())] = number
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                number = running.pop(future)
                outputs[number] = future.result()
                self.progress.advance(sum(len(groups[i]) for i in batches[number]))
        return [out for batch in outputs for out in batch]

    @contextlib.contextmanager
    def _start_pool(self) -> Iterator[Executor]:
        """Worker processes for one analysis of the run: each keeps what it read and indexed for the
        groups it is given next."""
        from concurrent.futures import ProcessPoolExecutor  # here: runs that need no workers skip the import
        from multiprocessing import get_context

        from cslint.support.isolation import isolated_workers

        with isolated_workers() as start_method, ProcessPoolExecutor(
                max_workers=self.jobs, mp_context=get_context(start_method), initializer=_start_worker) as pool:
            yield pool


def _stat(key: str) -> tuple[os.stat_result | None, bool]:
    """A file's stat and whether it is a symbolic link: one system call for a file that is not one."""
    try:
        found = os.lstat(key)
        if not stat.S_ISLNK(found.st_mode):
            return found, False
        return os.stat(key), True
    except OSError:
        return None, False


def _start_worker() -> None:
    _die_with_parent()
    atexit.register(_exit_at_once)


def _exit_at_once() -> None:
    """A worker's last act: it ends without freeing what it kept one object at a time (the run's indexes,
    slow on a large run, while the parent waits); its
    results went back through the pool's pipe already. The same as a forked worker's end (`os._exit`)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _die_with_parent() -> None:
    """Workers end when cslint is killed, instead of finishing work nobody will read (Linux only)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _batches(tasks: list[Any], weights: list[int], jobs: int) -> list[list[Any]]:
    """Tasks (heaviest first) grouped into worker calls, each a share of the source still left: large
    calls first (few round trips), ever smaller ones after, down to one task each at the end. The source
    predicts a group's time only roughly: calls of equal source left one worker busy with the last one
    while the others had nothing to do."""
    left = sum(weights)
    batches: list[list[Any]] = []
    filled = limit = 0
    for task, weight in zip(tasks, weights):
        if filled >= limit:
            batches.append([])
            filled, limit = 0, max(1, left // (jobs * 4))
        batches[-1].append(task)
        filled += weight
        left -= weight
    return batches


def _derived_from(found: set[str], bases: dict[str, set[str]]) -> set[str]:
    """The files in `found`, and those deriving classes from one of them (directly or not)."""
    derived: dict[str, set[str]] = {}
    for key, files in bases.items():
        for base in files:
            derived.setdefault(base, set()).add(key)
    return reachable(found, lambda key: derived.get(key, ()))


def _clashes(traced: list[set[str]]) -> list[set[int]]:
    """Analyses (by index) that traced code in the same file, merged transitively: their groups share a
    callee, whose parameters are the join of what all its callers pass, so they are analysed as one."""
    first: dict[str, int] = {}
    links = [(i, first.setdefault(key, i)) for i, keys in enumerate(traced) for key in keys]
    return [group for group in connected(range(len(traced)), links) if len(group) > 1]


def _check_groups(settings: Settings, codes: list[str], graph_file: str, batch: list[list[int]], profiled: bool,
                  library_directory: Path | None = None) -> list[GroupReport]:
    """In a worker process: rules travel by code (rule classes outside cslint.rules do not exist here).
    The run's import graph, and where the workers saved what they indexed, are read once per worker.
    The library summaries it works out are kept in the run's cache directory, as the parent's are."""
    from cslint.store import library_cache
    from cslint.support.deep_stack import run_with_deep_stack
    from cslint.rules import all_rules

    rules = [r for r in all_rules() if r.code in set(codes)]
    store = _worker_store()
    graph = _worker_graph(graph_file, store)
    summaries = library_cache.active()
    if library_directory is None:
        library_cache.use(None)
    elif summaries is None or summaries.directory != library_directory:
        library_cache.use(library_cache.LibraryCache(library_directory))
    try:
        return run_with_deep_stack(lambda: check_groups(settings, rules, graph, batch, profiled, store))
    finally:
        kept = library_cache.active()
        if kept is not None:
            kept.save()


def _library_cache_directory() -> Path | None:
    from cslint.store import library_cache

    summaries = library_cache.active()
    return summaries.directory if summaries is not None else None


def _index_part(settings: Settings, paths: list[Path], names: dict[Path, tuple[str, bool]],
                target: str, profiled: bool) -> dict[str, Any]:
    """In a worker process: read and index `paths`, keep them, and save them for the other workers. With
    the collector's thresholds raised, as for the groups' analyses (support/gc_thresholds.py): Python's trees are
    millions of young objects, and a collection every 700 of them, walking them all, was a large
    share of the indexing."""
    from cslint.support.deep_stack import run_with_deep_stack
    from cslint.engine.runner import Linter

    store = _worker_store()
    profile = Profile(enabled=profiled)
    linter = Linter(settings, [], profile, tree_budget=TREE_BUDGET_BYTES, store=store)
    with fewer_collections():
        run_with_deep_stack(lambda: linter.index_files(paths, names))
    store.save(paths, target)
    return profile.as_dict()


_WORKER_STORE: list[IndexStore] = []  # in a worker process (it serves one analysis): its store
_WORKER_GRAPH: dict[str, ImportGraph] = {}  # and the import graph of that analysis, by where it was saved


def _worker_graph(saved: str, store: IndexStore) -> ImportGraph:
    """The run's import graph, read once per worker, and where the workers saved what they indexed
    (given to its store then)."""
    graph = _WORKER_GRAPH.get(saved)
    if graph is None:
        graph, shared = load_graph(saved)
        for path, where in shared.items():
            store.shared.setdefault(path, where)
        _WORKER_GRAPH.clear()
        _WORKER_GRAPH[saved] = graph
    return graph


def _worker_store() -> IndexStore:
    from cslint.analysis.index_store import IndexStore

    if not _WORKER_STORE:
        _WORKER_STORE.append(IndexStore())
    return _WORKER_STORE[0]


def check_groups(settings: Settings, rules: list[Any], graph: ImportGraph, tasks: Iterable[list[int]], profiled: bool,
                 store: IndexStore, done: Callable[[int], None] | None = None) -> list[GroupReport]:
    """`check_group` for each task, with the collector's thresholds raised once for all of them:
    putting the defaults back after each one started a full collection while that group's objects
    were still alive (a large share of a cold run). A file's index is one cycle (module ->
    function -> module), so a large group's garbage is collected right after it, when little else
    is alive, instead of adding to the next group's peak."""
    outputs = []
    with fewer_collections(), _frozen_between_groups(store):
        for i, own in enumerate(tasks):
            outputs.append(check_group(settings, rules, graph.scope(own), profiled, store))
            if done is not None:
                done(i)
            store.end_analysis()
            if len(outputs[-1].read) >= COLLECT_AFTER_FILES:
                gc.collect()
                gc.freeze()
    return outputs


@contextlib.contextmanager
def _frozen_between_groups(store: IndexStore | None) -> Iterator[None]:
    """The indexes a store keeps for the rest of the run are left out of collections (`gc.freeze`): a
    full collection after each large group walked all of them, again and again. Frozen objects are
    still freed when nothing refers to them, and collected again after the groups."""
    try:
        yield
    finally:
        if store is not None:
            gc.unfreeze()


@dataclass(frozen=True)
class GroupReport:
    """What the analysis of one group hands back, from a worker process too (so it holds no syntax tree)."""

    diagnostics: list[Diagnostic]  # their fixes as summaries
    errors: list[str]
    reach: dict[str, frozenset[str]]  # by key, each file with traced code: what reaches it (Linter.reach)
    profile: dict[str, Any]
    read: dict[str, str]  # by key, the content hash of each file read
    roots: dict[str, list[list[str]]]  # by key, the roots checked for another target (Linter.other_roots)


def check_group(settings: Settings, rules: list[Any], scope: GroupScope, profiled: bool,
                store: IndexStore) -> GroupReport:
    """Analyse one group: its files are `scope.own`, the files they import are there to resolve names,
    and are reported on (when wanted) only if traced code reached them."""
    from cslint.engine.runner import Linter

    profile = Profile(enabled=profiled)
    linter = Linter(settings, rules, profile, tree_budget=TREE_BUDGET_BYTES, store=store)
    graph = scope.graph
    run = linter.run_group([(graph.paths[i], graph.wanted[i]) for i in scope.own], scope)
    diagnostics = [replace(d, fix=FixSummary(d.fix.applicability, d.fix.message))
                   if d.fix is not None and not isinstance(d.fix, FixSummary) else d for d in run.diagnostics]
    return GroupReport(diagnostics, run.errors, _keyed_reach(linter.reach), profile.as_dict(),
                       _keyed_hashes(linter.read_hashes), _keyed_roots(linter.other_roots))


def _by_key(diagnostics: list[Diagnostic]) -> dict[str, list[Diagnostic]]:
    out: dict[str, list[Diagnostic]] = {}
    for d in diagnostics:
        out.setdefault(_key(d.path), []).append(d)
    return out


def _keyed_hashes(hashes: dict[Path, str]) -> dict[str, str]:
    return {_key(path): digest for path, digest in hashes.items()}


def _keyed_roots(roots: dict[Path, list[tuple[str, str]]]) -> dict[str, list[list[str]]]:
    return {_key(path): [list(root) for root in found] for path, found in roots.items()}


def _keyed_reach(reach: dict[Path, frozenset[Path]]) -> dict[str, frozenset[str]]:
    """The same with keys, sets shared as they were: where traced code shares a helper, every file reaches
    every other one, and one set of N files stands for N sets (itself included: see Linter.analyse)."""
    keyed: dict[int, frozenset[str]] = {}
    out = {}
    for path, roots in reach.items():
        if id(roots) not in keyed:
            keyed[id(roots)] = frozenset(map(_key, roots))
        out[_key(path)] = keyed[id(roots)]
    return out


def _key(path: Path) -> str:
    """A file's key in the cache and in a run: its absolute path (symlinks not resolved)."""
    return os.path.abspath(path)
