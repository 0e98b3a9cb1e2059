"""The lint pipeline: read, parse once, index, find traced code, run rules, locate, suppress, fix."""

from __future__ import annotations

import ast
import weakref
from collections.abc import Callable, Collection, Iterable, Mapping
from contextlib import ExitStack
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import libcst as cst
from libcst._position import CodePosition, CodeRange

from cslint.core import baseline

from cslint.store import library_cache
from cslint.analysis.carry_over import carry_over
from cslint.analysis.entry_points import is_entry_point
from cslint.analysis.libraries import Libraries, LibraryPathError, environment_for
from cslint.analysis.index import FunctionInfo, ModuleInfo, TreeBudget, index_module, index_module_from_ast
from cslint.analysis.index_store import IndexStore
from cslint.analysis.module_names import assign_module_names, import_aliases
from cslint.analysis.project import LazyModules, Project
from cslint.analysis.root_targets import roots_by_target
from cslint.analysis.traced import Root, TracedFunction, TracedProgram, find_root_calls
from cslint.engine.checker import Checker, internal_error
from cslint.core.config import Settings
from cslint.core.fixability import is_fixable
from cslint.engine.import_graph import GroupScope
from cslint.core.noqa import is_suppressed, noqa_lines
from cslint.analysis.warm import WarmIndexes, keep_buffer_tree, warm_indexes
from cslint.engine.positions import locate, piece_layout, piece_positions, whole_module_positions
from cslint.support.profile import Profile
from cslint.core.reparse import reparse
from cslint.support.progress import Progress
from cslint.core.report import BUG_HINT, INTERNAL_ERROR, NOT_ANALYSED, SYNTAX_ERROR, Diagnostic, FixSummary, FixView
from cslint.core.run_result import RunResult
from cslint.rule_api.findings import Finding, Fix
from cslint.rules import Rule, all_rules
from cslint.analysis.imports import module_level_alias
from cslint.rules.noqa_usage import UNUSED_NOQA, removal_fix, unused_noqa
from cslint.engine.root_passes import merged_by_place, other_target_findings
from cslint.engine.selection import ignored_for_file, rules_for_target
from cslint.core.sources import (NotAnalysed, ReadError, SourceFile, UndecodableError, for_parser, keep_final_newline,
                             parse, parse_unvalidated, python_refuses, read_source, within_token_limit)
from cslint.core.targets import get_target

if TYPE_CHECKING:
    from cslint.analysis.reuse import KeptAnalyses

__all__ = ["INTERNAL_ERROR", "SYNTAX_ERROR", "Diagnostic", "Linter", "RunResult"]

MAX_FIX_PASSES = 10
FixChoice = Callable[[Diagnostic], bool]  # which diagnostics' fixes to apply
FILE_START = CodeRange(CodePosition(1, 0), CodePosition(1, 0))  # where a finding with no node of its own goes


class Unparsable(SyntaxError):
    """A file `ast` indexed and libcst then rejected; it is reported as a syntax error."""


class Linter:
    """`tree_budget` (bytes of source) bounds memory when only reporting: files are indexed with `ast`,
    each function is parsed with libcst on its own when it is analysed (the whole file only when
    something needs it), trees are given back least recently used first, and each function's findings
    are located as soon as it is analysed. Without it (and always when fixing, which edits whole trees)
    every tree parsed stays in memory until the run ends. `store` (with `tree_budget` only) holds what
    other analyses of the run read and indexed, so this one does not do it again."""

    def __init__(self, settings: Settings, rules: list[type[Rule]], profile: Profile | None = None,
                 tree_budget: int | None = None, store: IndexStore | None = None) -> None:
        self.settings = settings
        self.profile = profile or Profile(enabled=False)
        self.checker = Checker(rules, settings, self.profile)
        self.enabled_codes = frozenset(r.code for r in rules)
        self._rules = rules
        self._checkers: dict[str, Checker] = {}  # the checkers of the roots of other targets (root_targets.py)
        # the roots each file defines that are checked for another target than the run's: (target, function)
        self.other_roots: dict[Path, list[tuple[str, str]]] = {}
        self.reach: dict[Path, frozenset[Path]] = {}  # see analyse
        self.read_hashes: dict[Path, str] = {}  # content hash of every file as read, for the cache
        # other names files are imported by (namespace packages), when the caller worked them out over
        # more files than this run sees; else from the project root (module_names.import_aliases)
        self.aliases: dict[str, Path] | None = None
        self._module_aliases: dict[str, str] = {}
        self.tree_budget = tree_budget
        self._budget: TreeBudget | None = None
        self.store = store if tree_budget is not None else None
        self.progress = Progress.off()  # what a whole-tree run in this process shows (a fix: see run)
        self.modules_by_path: dict[Path, ModuleInfo] = {}
        self._pieces_given: set[int] = set()  # parsed functions an editor's analysis reused (analysis/warm.py)
        # an editor's analysis wants findings in its documents only: no rules run on other files' code
        self.only_in: Collection[Path] | None = None
        self.traced: dict[Path, list[tuple[list[str], str]]] = {}  # with `only_in`: their traced chains, why
        self.read_later: dict[Path, SourceFile] = {}  # the files an analysis read when a lookup needed them
        self._targets: set[Path] = set()  # a group's reported files, resolved (see run_group)
        self._baseline: baseline.Baseline | None = None  # read when a fix pass first needs it
        self._lines: dict[Path, list[str]] = {}  # see analyse_bounded

    # ---- loading ---------------------------------------------------------------------------------

    def load(self, paths: list[Path], result: RunResult) -> list[SourceFile]:
        sources = []
        for path in paths:
            try:
                with self.profile.phase("read"):
                    source = self._read(path)
            except NotAnalysed as exc:  # a finding for the file, not an error of the run
                source = _not_analysed(path, str(exc), exc.digest)
            except (RecursionError, MemoryError) as exc:  # nor is a file that exhausts the reader
                source = _not_analysed(path, f"file not analysed: {_exhausted(exc)} reading it")
            except UndecodableError as exc:  # reported like a syntax error, as Python reports it
                result.diagnostics.append(Diagnostic(path, exc.line, 1, exc.line, 2, SYNTAX_ERROR,
                                                     f"cannot decode the file: {exc}"))
                continue
            except ReadError as exc:
                result.errors.append(f"{path}: {exc}")
                continue
            self.read_hashes[path] = source.digest
            sources.append(source)  # parsed in analyse(), and with libcst only where it is needed
        return sources

    def _read(self, path: Path) -> SourceFile:
        tokens = self.settings.max_file_tokens
        if self.store is None:
            warm = warm_indexes()  # an editor's analysis: unchanged files are not read again
            if warm is not None:
                return within_token_limit(warm.read(path, self.settings.max_file_size), tokens)
            return within_token_limit(read_source(path, self.settings.max_file_size), tokens)
        return self.store.read(path, lambda p: within_token_limit(read_source(p, self.settings.max_file_size), tokens))

    def index_files(self, paths: list[Path], names: dict[Path, tuple[str, bool]]) -> None:
        """Read and index `paths` into the store, and nothing else: a worker's share of a run's indexing."""
        assert self.store is not None
        self.aliases = self.aliases or {}
        self._budget = TreeBudget(self.tree_budget or 0)
        self._index_all(self.load(paths, RunResult()), names, {})
        self.store.end_analysis()

    # ---- analysis --------------------------------------------------------------------------------

    def analyse(self, sources: list[SourceFile], result: RunResult,
                names: dict[Path, tuple[str, bool]] | None = None,
                roots_in: Collection[Path] | None = None) -> dict[Path, list[Finding]]:
        """Findings per file, every tree kept. Also sets `self.reach`: for each file with traced code,
        the files whose traced roots reach code in it (what its findings depend on besides its own
        imports), itself included; files with the same such files share one set. Roots are looked for in
        `roots_in` only, when given."""
        self._budget = None
        for source in sources:  # an editor's fix needs the trees of its documents only (`only_in`)
            if source.tree is None and source.syntax_error is None and _likely_traced(source.text) and \
                    (self.only_in is None or source.path in self.only_in):
                with self.profile.phase("parse"):
                    parse(source, self.settings.analysis_budget)
        findings: dict[Path, list[Finding]] = {}
        modules, by_module = self._index_all(sources, names, findings)
        project = self.checker.project = self._project(modules.values())
        with self.profile.phase("traced code and tensor inference"):
            by_target = self._roots_by_target(project, _module_names(by_module, roots_in))
            program = TracedProgram(project, tracer=get_target(self.settings.target).tracer,
                                    roots=by_target.pop(self.settings.target)).run()
        programs = [program]
        self._collect(program, self._check, by_module, findings)
        if self.checker.module_rules:
            for name, module in modules.items():
                if self.only_in is None or by_module[name].path in self.only_in:
                    findings.setdefault(by_module[name].path, []).extend(self.checker.check_module(module, project))
        for target, roots in by_target.items():  # after the run's target: see _diagnostics
            checker = self._checker_for(target)
            with self.profile.phase("traced code and tensor inference"):
                other = TracedProgram(project, tracer=get_target(target).tracer, roots=roots).run()
            programs.append(other)
            self._collect(other, partial(self._check_other, checker=checker, run_program=program), by_module,
                          findings)
        self._record_reach(programs, by_module)
        return findings

    def _check_other(self, traced: TracedFunction, checker: Checker, run_program: TracedProgram) -> list[Finding]:
        return other_target_findings(self._check(traced, checker), traced, run_program)

    def _collect(self, program: TracedProgram, check: Callable[[TracedFunction], list[Finding]],
                 by_module: dict[str, SourceFile], findings: dict[Path, list[Finding]]) -> None:
        """A traced program's analysis errors and its functions' findings (`check`), added to `findings`."""
        for traced, exc in program.errors:
            source = by_module[traced.func.module.name]
            if source.syntax_error is None:  # else libcst rejects the file (Python accepts it): a syntax error
                findings.setdefault(source.path, []).append(_analysis_error(traced, exc))
        for traced in program.functions.values():
            path = by_module[traced.func.module.name].path
            if self.only_in is None or path in self.only_in:
                findings.setdefault(path, []).extend(check(traced))

    def analyse_bounded(self, sources: list[SourceFile], result: RunResult,
                        names: dict[Path, tuple[str, bool]] | None = None,
                        roots_in: Collection[Path] | None = None,
                        reported: Collection[Path] | None = None,
                        scope: GroupScope | None = None) -> dict[Path, list[Diagnostic]]:
        """`analyse` within `tree_budget`: findings located as they are found, trees given back. Whole-file
        rules run on the `reported` files (all, if None) and on every file with traced code. With a
        `scope` (a group of a whole-tree run: `sources` are its files), the files they import are read
        and indexed only if a lookup needs them (those that are not hold nothing traced code reaches),
        and the files reported are the scope's wanted ones. The lines of the files with findings are kept
        for `bounded_diagnostics_for`."""
        assert self.tree_budget is not None
        self._lines = {}
        texts = {s.path: s.text for s in sources}
        warm = warm_indexes()
        self._budget = warm.budget(self.tree_budget) if warm is not None else TreeBudget(self.tree_budget)
        early: dict[Path, list[Finding]] = {}
        modules, by_module = self._index_all(sources, names, early, scope)
        located = {path: self._at_file_start(path, texts[path], found) for path, found in early.items()}
        every: Mapping[str, ModuleInfo] = modules
        if scope is not None:
            every = self._on_demand(modules, by_module, scope, early)
        per_function: dict[str, tuple[tuple[object, ...], list[Diagnostic]]] = {}
        # An editor's analysis keeps its documents' trees (a few functions' pieces) for the whole run and
        # checks their functions once, with their final analyses: not after each of the analyses a
        # function goes through before its callers' and callees' kinds settle.
        held = [m for m in modules.values() if m.path in self.only_in] if warm is not None and \
            self.only_in is not None else None
        later_checked: dict[str, TracedFunction] = {}

        def check_now(traced: TracedFunction) -> None:  # the module is held; its analysis is final or not
            if self.only_in is None or traced.func.module.path in self.only_in:
                if held is not None:
                    later_checked[traced.func.qualname] = traced
                    return
                found = self._check_reusing(traced, warm.analyses) if warm is not None else self._check(traced)
                per_function[traced.func.qualname] = (_rule_inputs(traced), self._locate(traced.func.module, found))
            traced.analysis = None  # its node-keyed maps would keep the tree alive

        project = self.checker.project = self._project(every if isinstance(every, LazyModules) else modules.values())
        with ExitStack() as holding:
            for module in held or ():
                holding.enter_context(module.held())
            with self.profile.phase("traced code and tensor inference"):
                by_target = self._roots_by_target(project, _module_names(by_module, roots_in))
                program = TracedProgram(project, after_analysis=check_now,
                                        tracer=get_target(self.settings.target).tracer,
                                        kept=warm.analyses if warm is not None else None,
                                        roots=by_target.pop(self.settings.target)).run()
            held = None  # from here on, checked at once
            for traced in later_checked.values():
                if traced.analysis is not None:
                    check_now(traced)
        programs = [program] + [self._bounded_pass(project, by_module, target, roots, program, located)
                                for target, roots in by_target.items()]
        if isinstance(every, LazyModules):  # the files indexed on demand, in the project's order
            modules = {name: every.loaded[name] for name in every.in_order()}
            for path, found in early.items():
                if path not in located:
                    text = texts[path] if path in texts else self.read_later[path].text
                    located[path] = self._at_file_start(path, text, found)
        self._settle(program, per_function, check_now, by_module, located)
        self._record_reach(programs, by_module)
        if self.checker.module_rules:
            for name, module in modules.items():
                path = by_module[name].path
                if scope is not None and not scope.wanted(path) and path not in self.reach or \
                        reported is not None and path not in reported and path not in self.reach or \
                        self.only_in is not None and path not in self.only_in:
                    continue
                with module.held():
                    try:
                        found = self.checker.check_module(module, project)
                        if found:
                            located.setdefault(by_module[name].path, []).extend(self._locate(module, found))
                    except Unparsable:
                        continue
        self.modules_by_path = {by_module[name].path: module for name, module in modules.items()}
        return located

    def _project(self, modules: Iterable[ModuleInfo] | LazyModules) -> Project:
        """The linted modules as one program, with the installed libraries its traced calls may reach."""
        project = Project(modules, self._module_aliases)
        try:
            environment = environment_for(self.settings.python)
        except LibraryPathError:  # the command line reports it before any analysis
            environment = None
        if environment is not None:
            project.libraries = Libraries(environment, project, library_cache.active())
        return project

    def _index_all(self, sources: list[SourceFile], names: dict[Path, tuple[str, bool]] | None,
                   findings: dict[Path, list[Finding]], scope: GroupScope | None = None,
                   ) -> tuple[dict[str, ModuleInfo], dict[str, SourceFile]]:
        modules: dict[str, ModuleInfo] = {}
        by_module: dict[str, SourceFile] = {}
        parsed = [s for s in sources if s.syntax_error is None]
        if scope is not None:  # the run's order, names and aliases, worked out once for all its groups
            parsed.sort(key=lambda s: scope.position(s.path))
            names = scope.graph.names_by_path
            self._module_aliases = scope.graph.module_aliases
        else:
            if names is None or any(s.path not in names for s in parsed):
                names = {**assign_module_names([s.path for s in parsed]), **(names or {})}
            else:  # the caller's order (the whole tree's), so roots are met in the same order in every subset
                order = {path: i for i, path in enumerate(names)}
                parsed.sort(key=lambda s: order[s.path])
            roots = [self.settings.project_root] if self.settings.project_root is not None else []
            aliases = self.aliases if self.aliases is not None else import_aliases(names, roots)
            self._module_aliases = {alias: names[path][0] for alias, path in aliases.items() if path in names}
        for source in parsed:
            self.progress.advance()
            name, is_package = names[source.path]
            info = self._index_one(source, name, is_package, findings)
            if info is not None:
                modules[name] = info
                by_module[name] = source
        return modules, by_module

    def _index_one(self, source: SourceFile, name: str, is_package: bool,
                   findings: dict[Path, list[Finding]]) -> ModuleInfo | None:
        """The file's index; None for a syntax error found while indexing, a file that exhausts the
        recursion limit or memory (not analysed, as one over the budget), or an error indexing it (a finding)."""
        try:
            with self.profile.phase("index"):
                return self._index(source, name, is_package)
        except (RecursionError, MemoryError) as exc:
            source.tree, source.problem_code = None, NOT_ANALYSED
            source.syntax_error = (1, 1, f"file not analysed: {_exhausted(exc)} indexing it")
            return None
        except Exception as exc:
            findings.setdefault(source.path, []).append(
                internal_error(source.tree or cst.Module([]), None, "indexing", exc))
            return None

    def _on_demand(self, modules: dict[str, ModuleInfo], by_module: dict[str, SourceFile], scope: GroupScope,
                   findings: dict[Path, list[Finding]]) -> LazyModules:
        """`modules`, and the files the group's files import read and indexed when a lookup first needs
        them (each added to `by_module` then): what a group's analysis uses of its import closure."""
        self.read_later = {}
        names = scope.graph.names_by_path

        def load(name: str) -> ModuleInfo | None:
            path = scope.find(name)
            if path is None or self.store is not None and self.store.resolve(path) in self._targets:
                return None  # (a link to one of the group's reported files is that file)
            loaded = self.load([path], RunResult())
            if not loaded:
                return None
            self.read_later[loaded[0].path] = loaded[0]
            if loaded[0].syntax_error is not None:
                return None
            info = self._index_one(loaded[0], name, names[path][1], findings)
            if info is not None:
                by_module[name] = loaded[0]
            return info

        return LazyModules(modules, load, scope.rank, scope.module_names)

    def _roots_by_target(self, project: Project, root_modules: Collection[str] | None) -> dict[str, list[Root]]:
        """The roots of the run (in `root_modules` only, when given) by the target each is checked for."""
        roots = find_root_calls(project, self.settings.trace_roots, root_modules, self.settings.entry_points)
        by_target = roots_by_target(roots, self.settings.target)
        self.other_roots = {}
        for target, of_target in by_target.items():
            if target != self.settings.target:
                for func, _, _ in of_target:
                    self.other_roots.setdefault(func.module.path, []).append((target, func.display_name))
        return by_target

    def _checker_for(self, target: str) -> Checker:
        """The checker of the roots of another target than the run's: its rules, wording and fixes."""
        checker = self._checkers.get(target)
        if checker is None:
            settings = self.settings.with_overrides(target=target)
            checker = self._checkers[target] = Checker(rules_for_target(self._rules, self.settings, target),
                                                       settings, self.profile)
        checker.project = self.checker.project
        return checker

    def _bounded_pass(self, project: Project, by_module: dict[str, SourceFile], target: str, roots: list[Root],
                      run_program: TracedProgram, located: dict[Path, list[Diagnostic]]) -> TracedProgram:
        """The roots of another target than the run's, traced and checked for it within the tree budget
        (as `analyse_bounded` does the run's), their diagnostics added to `located`."""
        checker = self._checker_for(target)
        per_function: dict[str, tuple[tuple[object, ...], list[Diagnostic]]] = {}

        def check_now(traced: TracedFunction) -> None:
            if self.only_in is None or traced.func.module.path in self.only_in:
                found = self._check_other(traced, checker, run_program)
                per_function[traced.func.qualname] = (_rule_inputs(traced), self._locate(traced.func.module, found))
            traced.analysis = None

        with self.profile.phase("traced code and tensor inference"):
            program = TracedProgram(project, after_analysis=check_now, tracer=get_target(target).tracer,
                                    roots=roots).run()
        self._settle(program, per_function, check_now, by_module, located)
        return program

    def _settle(self, program: TracedProgram, per_function: dict[str, tuple[tuple[object, ...], list[Diagnostic]]],
                check_now: Callable[[TracedFunction], None], by_module: dict[str, SourceFile],
                located: dict[Path, list[Diagnostic]]) -> None:
        """After a bounded trace: the functions whose rule inputs changed since they were checked are checked
        again (rules that read callers see their final state), analysis errors are placed, and every
        function's diagnostics are added to `located`."""
        for traced in program.functions.values():
            seen = per_function.get(traced.func.qualname)
            if seen is not None and seen[0] != _rule_inputs(traced):
                with traced.func.module.held():
                    if program.analyse(traced):
                        check_now(traced)
        for traced, exc in program.errors:
            per_function.pop(traced.func.qualname, None)
            module, source = traced.func.module, by_module[traced.func.module.name]
            if source.syntax_error is None:  # else libcst rejects the file (Python accepts it): a syntax error
                with module.held():
                    located.setdefault(source.path, []).extend(self._locate(module, [_analysis_error(traced, exc)]))
        for traced in program.functions.values():
            if traced.func.qualname in per_function:
                located.setdefault(by_module[traced.func.module.name].path, []).extend(
                    per_function[traced.func.qualname][1])

    def _record_reach(self, programs: list[TracedProgram], by_module: dict[str, SourceFile]) -> None:
        """`reach` over the programs of every target the run's roots have."""
        self.reach = {}
        for program in programs:
            paths: dict[int, frozenset[Path]] = {}  # one set of paths for each set of modules (most are shared)
            for module, reached in program.influencing_modules().items():
                if module in by_module:
                    if id(reached) not in paths:
                        paths[id(reached)] = frozenset(by_module[r].path for r in reached if r in by_module)
                    path = by_module[module].path
                    before = self.reach.get(path)
                    self.reach[path] = paths[id(reached)] if before is None or before == paths[id(reached)] \
                        else before | paths[id(reached)]
        if self.only_in is not None:  # an editor's hover on a traced `def` says which root reaches it
            self.traced = {}
            for program in programs:
                for traced in program.functions.values():
                    path = by_module[traced.func.module.name].path
                    if path in self.only_in:
                        self.traced.setdefault(path, []).append((traced.chain, traced.root.reason))

    def _check(self, traced: TracedFunction, checker: Checker | None = None) -> list[Finding]:
        try:
            with self.profile.phase("rules"):
                return (checker or self.checker).check(traced)
        except Exception as exc:
            return [internal_error(traced.func.node.name, traced, f"checking {traced.func.display_name}", exc)]

    def _check_reusing(self, traced: TracedFunction, kept: KeptAnalyses) -> list[Finding]:
        """`_check`, in an editor's analysis: the findings of the last analyses when the rules would read
        the same (the same kept analysis, callers, parameters and settings; the same file's text if a
        rule read all of it)."""
        analysis = traced.analysis
        if analysis is None:
            return []
        chain = []
        current: TracedFunction | None = traced
        while current is not None:
            chain.append(current)
            current = current.parent
        values: tuple[object, ...] = (_rule_inputs(traced), traced.root.reason,
                                      tuple(traced.annotation_overrides.items()), tuple(traced.keywords.items()),
                                      self.settings, self.enabled_codes)
        # the functions up the chain (their nodes), and their classes' methods (rules read a class's others)
        objects = (*(t.func for t in chain), *(m for t in chain if t.func.cls is not None
                                               for m in t.func.cls.methods.values()))
        found = kept.findings(analysis, (values, objects))
        if found is None:
            values += (traced.func.module.source,)  # the key with the text, for rules that read it all
            found = kept.findings(analysis, (values, objects))
        if found is not None:
            self.profile.count("functions whose rule findings were reused")
            return [replace(f, traced=traced, notes=list(f.notes)) for f in found]
        try:
            with self.profile.phase("rules"):
                found, read_text = self.checker.check_noting(traced)
        except Exception as exc:
            return [internal_error(traced.func.node.name, traced, f"checking {traced.func.display_name}", exc)]
        if all(f.traced is traced and f.code != INTERNAL_ERROR for f in found):
            kept.keep_findings(analysis, (values if read_text else values[:-1], objects),
                               [replace(f, traced=None, notes=list(f.notes)) for f in found])
        return found

    def _index(self, source: SourceFile, name: str, is_package: bool) -> ModuleInfo | None:
        """The index from the libcst tree when the file is already parsed (files likely to hold traced code,
        when every tree is kept); else from Python's `ast` (several times faster), with libcst parsing
        functions (or the whole file) only when something needs them, under a tree budget given back
        again."""
        if self.store is not None and source.tree is None:
            info, new = self.store.index(source, name, is_package, lambda: self._index_anew(source, name, is_package))
            if new:
                self.profile.count("files indexed")
            elif info is not None:  # its loader and budget are this analysis's
                info.loader = self._tree_loader(source)
                info.budget = self._budget
                info.piece_parser = self._piece_parser(source.path)
            if info is not None and info.piece_parser is not None and warm_indexes() is None:
                info.spare_pieces = self.store.pieces
            return info
        return self._index_anew(source, name, is_package)

    def _index_anew(self, source: SourceFile, name: str, is_package: bool) -> ModuleInfo | None:
        if source.tree is None:
            # parsed piecemeal: a report's files, and those an editor's fix reads but does not edit
            piecemeal = self._budget is not None or self.only_in is not None and source.path not in self.only_in
            warm = warm_indexes() if piecemeal else None  # an editor's: see analysis/warm.py
            budget = self._budget if self._budget is not None or warm is None else warm.kept_budget()
            info = warm.module(source.path, source.text, name, is_package) if warm is not None else None
            if info is not None:
                info.budget, info.piece_parser = budget, self._piece_parser(source.path)
                info.loader = self._tree_loader(source)
                return info
            before = warm.buffer_parse(source.path) if warm is not None else None  # an edited buffer's last
            tree = reparse(before[0], before[1], source.text) if before is not None else None
            if tree is None:
                try:
                    tree = ast.parse(for_parser(source.text))
                except (SyntaxError, ValueError, RecursionError, MemoryError):
                    tree = None
            costs = warm.statement_costs(source.path) if warm is not None else None
            if tree is not None and python_refuses(source, self.settings.analysis_budget, tree, costs):
                return None
            if tree is not None:
                keep_buffer_tree(source.path, source.text, tree)
                info = index_module_from_ast(source.path, source.text, tree, name, is_package,
                                             loader=self._tree_loader(source))
                info.budget = budget if warm is not None else self._budget
                if piecemeal:  # fixes edit whole trees
                    info.piece_parser = self._piece_parser(source.path)
                if warm is not None:
                    self._carry_over(warm, source.path, info)
                    warm.keep_module(source.path, source.text, name, is_package, info)
                return info
            with self.profile.phase("parse"):
                parse(source, self.settings.analysis_budget)
            if source.tree is None:
                return None
        return index_module(source.path, source.text, source.tree, name, is_package)

    def _carry_over(self, warm: WarmIndexes, path: Path, info: ModuleInfo) -> None:
        """An edited buffer indexed again keeps its unchanged classes and functions (carry_over.py), so
        their kept analyses and findings are reused."""
        old = warm.indexed(path)
        if old is None or old is info:
            return
        moved = carry_over(old, info)
        if not moved:
            return
        self.profile.count("functions carried over from the last index of an edited buffer", len(moved))
        for func in moved:
            if func.piece is not None:
                self._pieces_given.add(id(func.piece.module))
                warm.used(func.piece.module)  # kept for the new text, as if asked for by it
        if old.budget is not None:  # the trees they hold are the new module's to give back
            size = old.budget.resident.pop(old, 0)
            old.budget.size -= size
            if size and info.budget is not None:
                info.loaded = True
                info.budget.loaded(info, size)

    def _piece_parser(self, path: Path) -> Callable[[str], cst.Module]:
        """The parser of `path`'s functions an index holds: this analysis's, held weakly. An index an editor
        keeps for its next edit is given the next analysis's parser and loader (`_index`); held strongly,
        this analysis's linter (whose modules hold the index) and the index would form a cycle that only a
        full collection frees, one per edit (lsp/collector.py). Called after the linter is gone (a hover
        on a kept index), a piece is parsed afresh."""
        parse_piece = weakref.WeakMethod(self._parse_piece)

        def parse_one(text: str) -> cst.Module:
            bound = parse_piece()
            return bound(path, text) if bound is not None else parse_unvalidated(text)
        return parse_one

    def _tree_loader(self, source: SourceFile) -> Callable[[], cst.Module]:
        """The loader of `source`'s whole tree an index holds: this analysis's, held weakly (`_piece_parser`)."""
        load_tree = weakref.WeakMethod(self._load_tree)

        def load() -> cst.Module:
            bound = load_tree()
            if bound is not None:
                return bound(source)
            if source.tree is None:
                parse(source)
            if source.tree is None:
                raise Unparsable(f"cslint's parser rejects {source.path} (Python accepts it)")
            return source.tree
        return load

    def _parse_piece(self, path: Path, text: str) -> cst.Module:
        warm = warm_indexes()
        if warm is not None:  # an editor's analysis: the function may be unchanged since the last one
            tree: cst.Module | None = warm.piece(path, text)
            if tree is not None and id(tree) not in self._pieces_given:  # two same-text functions: own trees
                self._pieces_given.add(id(tree))
                return tree
        elif self.store is not None:  # a function of the same text as one an earlier analysis gave back
            tree = self.store.pieces.take(text)
            if tree is not None:
                self.profile.count("pieces parsed before, for a function of the same text")
                return tree
        with self.profile.phase("parse"):
            self.profile.count("pieces parsed (functions, assignments)")
            tree = parse_unvalidated(text)
        if warm is not None:
            self._pieces_given.add(id(tree))
            if warm.piece(path, text) is None:
                warm.keep_piece(path, text, tree)
        return tree

    def _load_tree(self, source: SourceFile) -> cst.Module:
        with self.profile.phase("parse"):
            parse(source)
        self.profile.count("files parsed on demand")
        tree = source.tree
        if tree is None:
            raise Unparsable(f"cslint's parser rejects {source.path} (Python accepts it)")
        if self._budget is not None:
            source.tree = None  # the module holds it, and may give it back
        return tree

    # ---- locating and filtering ------------------------------------------------------------------

    def _locate(self, module: ModuleInfo, findings: list[Finding]) -> list[Diagnostic]:
        """Findings of one module as diagnostics, their fixes reduced to what a report shows."""
        if not findings:
            return []
        lines = self._lines.get(module.path)
        if lines is None:
            lines = self._lines[module.path] = module.source.splitlines()
        try:
            with self.profile.phase("positions"):
                positions = self._module_positions(module, findings)
        except RecursionError:
            return [_too_deep(module.path, lines, len(findings))]
        return [_placed(module.path, lines, f, positions[f.node], _summary(f.fix)) for f in findings
                if f.node in positions]

    def _at_file_start(self, path: Path, text: str, findings: list[Finding]) -> list[Diagnostic]:
        """Findings of a file that could not be indexed (an error indexing it) placed at its start."""
        lines = self._lines[path] = text.splitlines()
        return [_placed(path, lines, f, FILE_START, _summary(f.fix)) for f in findings]

    def _module_positions(self, module: ModuleInfo, findings: list[Finding]) -> dict[cst.CSTNode, CodeRange]:
        """Findings in functions parsed alone are placed from their function's text; the others from
        the module's tree."""
        alone: dict[FunctionInfo, list[cst.CSTNode]] = {}
        rest = []
        for f in findings:
            owner = _owner(f)
            if owner is not None and owner.piece is not None:
                alone.setdefault(owner, []).append(f.node)
            else:
                rest.append(f)
        found: dict[cst.CSTNode, CodeRange] = {}
        for owner, nodes in alone.items():
            assert owner.piece is not None and owner._node is not None
            warm = warm_indexes()  # an editor's analysis: an unchanged function's code is not generated again
            piece, node = owner.piece, owner._node
            layout = warm.layout(piece.module, partial(piece_layout, piece, node)) if warm is not None else None
            placed = piece_positions(piece, node, module.source, nodes, layout)
            if placed is None:  # not expected: the function's first line rather than no finding
                self.profile.count("findings placed at their function's first line")
                span, indent = owner.piece.span, len(owner.piece.indent)
                first = CodeRange(CodePosition(span.line, indent), CodePosition(span.line, indent))
                placed = dict.fromkeys(nodes, first)
            found.update(placed)
        if rest:
            found.update(locate(module.tree, module.source, ((f.node, *_statement_of(f)) for f in rest)))
        return found

    def diagnostics_for(self, source: SourceFile, findings: list[Finding]) -> list[Diagnostic]:
        if source.syntax_error is not None:
            return [self._syntax_error(source)]
        check_noqa = UNUSED_NOQA in self.enabled_codes and "noqa" in source.text.lower()
        if not findings and not check_noqa:
            return []
        if source.tree is None:
            parse(source)
            if source.tree is None:
                return [self._syntax_error(source)] if source.syntax_error is not None else []
        lines = source.text.splitlines()
        try:
            with self.profile.phase("positions"):
                positions = self._positions(source, findings, check_noqa)
        except RecursionError:
            return [_too_deep(source.path, lines, len(findings))]
        placed = [_placed(source.path, lines, f, positions[f.node], f.fix) for f in findings if f.node in positions]
        return self._diagnostics(source, placed, positions if check_noqa else None, lines)

    def bounded_diagnostics_for(self, source: SourceFile, placed: list[Diagnostic]) -> list[Diagnostic]:
        """A file's diagnostics from what `analyse_bounded` placed in it."""
        lines = self._lines.pop(source.path, None)
        if source.syntax_error is not None:
            return [self._syntax_error(source)]
        noqa_positions = None
        module = self.modules_by_path.get(source.path)
        if UNUSED_NOQA in self.enabled_codes and "noqa" in source.text.lower() and module is not None:
            with module.held():
                try:
                    noqa_positions = whole_module_positions(module.tree)
                except RecursionError:
                    return [_too_deep(source.path, source.text.splitlines(), len(placed))]
        if not placed and noqa_positions is None:
            return []
        if noqa_positions is not None and lines is None:
            lines = source.text.splitlines()
        return self._diagnostics(source, placed, noqa_positions, lines or [])

    def _syntax_error(self, source: SourceFile) -> Diagnostic:
        assert source.syntax_error is not None
        line, column, message = source.syntax_error
        lines = source.text.splitlines()
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        if source.problem_code == SYNTAX_ERROR:
            message = f"syntax error: {message}"
        return Diagnostic(source.path, line, column, line, column + 1, source.problem_code, message,
                          source_line=text, targets=(self.settings.target,))

    def _diagnostics(self, source: SourceFile, placed: list[Diagnostic],
                     noqa_positions: Mapping[cst.CSTNode, CodeRange] | None, lines: list[str]) -> list[Diagnostic]:
        """Suppression (`# noqa`, per-file ignores), duplicates dropped, unused `noqa` directives (`lines`:
        the file's, needed only for those)."""
        suppressed = noqa_lines(source.text)
        per_file = ignored_for_file(source.path, self.settings)
        out = []
        used: set[tuple[int, str]] = set()  # (line, code as written in the noqa) that suppressed something
        for d in merged_by_place(placed, self.settings.target):
            line = d.line
            if d.code != INTERNAL_ERROR and is_suppressed(d.code, line, suppressed):
                used.update((line, c) for c in suppressed[line] if d.code.startswith(c))
                continue
            if d.code != INTERNAL_ERROR and any(d.code.startswith(c) for c in per_file):
                continue
            out.append(d)
        if noqa_positions is not None and not any(UNUSED_NOQA.startswith(c) for c in per_file):
            known = [r.code for r in all_rules()] + [SYNTAX_ERROR, INTERNAL_ERROR]
            enabled = self.enabled_codes.union(*({rule.code for rule in c.rules} for c in self._checkers.values()))
            for unused in unused_noqa(source.text, used, enabled, known):  # the rules of every root's target
                directive = unused.directive
                out.append(Diagnostic(source.path, directive.line, directive.column, directive.line,
                                      directive.end_column, UNUSED_NOQA, unused.message,
                                      removal_fix(noqa_positions, unused)
                                      if is_fixable(UNUSED_NOQA, self.settings) else None,
                                      source_line=lines[directive.line - 1] if 0 < directive.line <= len(lines)
                                      else ""))
        out.sort(key=lambda d: (d.line, d.column, d.code))
        return out

    @staticmethod
    def _positions(source: SourceFile, findings: list[Finding], whole: bool) -> Mapping[cst.CSTNode, CodeRange]:
        assert source.tree is not None
        if whole:
            return whole_module_positions(source.tree)
        return locate(source.tree, source.text, ((f.node, *_statement_of(f)) for f in findings))

    # ---- whole runs ------------------------------------------------------------------------------

    def run(self, paths: list[Path], fix: bool | FixChoice = False, unsafe_fixes: bool = False,
            context: tuple[Path, ...] | list[Path] = (), names: dict[Path, tuple[str, bool]] | None = None,
            roots_in: Collection[Path] | None = None, apply_baseline: bool = True) -> RunResult:
        """Lint (and fix) `paths`. `context` files are analysed too, so call chains through them resolve,
        but they are neither written nor reported on. Roots are looked for in `roots_in` only, when given.
        `fix` may choose which diagnostics' fixes to apply (an editor's "fix this one"): then one pass only.
        The findings the baseline accepts are left out, unless `apply_baseline` is False (a caller that
        keeps the full report, and applies the baseline to its own result)."""
        result = self._run(paths, fix, unsafe_fixes, context, names, roots_in)
        if not apply_baseline:
            return result
        unread = {error.split(":", 1)[0] for error in result.errors}
        return baseline.apply(result, self.settings.baseline, [p for p in paths if str(p) not in unread],
                              self.enabled_codes)

    def _run(self, paths: list[Path], fix: bool | FixChoice, unsafe_fixes: bool,
             context: tuple[Path, ...] | list[Path], names: dict[Path, tuple[str, bool]] | None,
             roots_in: Collection[Path] | None) -> RunResult:
        result = RunResult()
        sources = self.load(paths, result)
        result.files_checked = len(sources)
        warm = warm_indexes()
        resolve = self.store.resolve if self.store is not None else warm.resolve if warm is not None else Path.resolve
        targets = {resolve(s.path) for s in sources}
        context = [p for p in context if resolve(p) not in targets]
        if self.tree_budget is not None and not fix:
            extra = self.load(context, RunResult())
            located = self.analyse_bounded(sources + extra, result, names, roots_in, {s.path for s in sources})
            for source in sources:
                result.diagnostics.extend(self.bounded_diagnostics_for(source, located.get(source.path, [])))
            self._lines = {}
            self._note_other_roots(result, sources)
            return result
        extra = self.load(context, RunResult())
        self.progress.phase("indexing and analysing", len(sources) + len(extra))
        findings = self.analyse(sources + extra, result, names, roots_in)
        if fix:
            for number in range(MAX_FIX_PASSES):
                self.progress.phase(f"fixing (pass {number + 1})")
                applied = self._fix_pass(sources, findings, unsafe_fixes, result, fix)
                if not applied:
                    break
                result.fixed += applied
                self.progress.phase(f"analysing the fixed files (pass {number + 1})", len(sources) + len(extra))
                findings = self.analyse(sources + extra, result, names, roots_in)
                if callable(fix):
                    break
            result.changed_files = [s for s in sources if s.changed]
        for source in sources:
            result.diagnostics.extend(self.diagnostics_for(source, findings.get(source.path, [])))
        self._note_other_roots(result, sources)
        return result

    def _note_other_roots(self, result: RunResult, sources: Iterable[SourceFile]) -> None:
        result.other_roots = [(target, name, source.path) for source in sources
                              for target, name in self.other_roots.get(source.path, ())]

    def run_group(self, files: list[tuple[Path, bool]], scope: GroupScope) -> RunResult:
        """Lint a group of a whole-tree run (incremental.py): `files` are its own (path, whether reported
        on), in the run's order; roots are looked for there. The files they import, directly or not
        (`scope`), are read and indexed when a lookup needs them, and reported on when wanted and some
        traced code reaches them."""
        assert self.tree_budget is not None and self.store is not None
        result = RunResult()
        sources = self.load([path for path, wanted in files if wanted], result)
        result.files_checked = len(sources)
        resolve = self.store.resolve
        self._targets = {resolve(s.path) for s in sources}
        extra = self.load([path for path, wanted in files if not wanted and resolve(path) not in self._targets],
                          RunResult())
        located = self.analyse_bounded(sources + extra, result, roots_in=[path for path, _ in files], scope=scope)
        reached = sorted([*extra, *self.read_later.values()], key=lambda s: scope.position(s.path))
        for source in sources + [s for s in reached if scope.wanted(s.path) and s.path in self.reach]:
            result.diagnostics.extend(self.bounded_diagnostics_for(source, located.get(source.path, [])))
        self._lines = {}
        return result

    def _not_baselined(self, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
        """One file's diagnostics without those the baseline accepts: a fix leaves an accepted finding
        alone, as it leaves one under `# noqa`."""
        if self.settings.baseline is None:
            return diagnostics
        if self._baseline is None:
            self._baseline = baseline.load(self.settings.baseline)
        return baseline.apply_loaded(RunResult(diagnostics=list(diagnostics)), self._baseline, ()).diagnostics

    def _fix_pass(self, sources: list[SourceFile], findings: dict[Path, list[Finding]], unsafe: bool,
                  result: RunResult, choice: bool | FixChoice = True) -> int:
        applied = 0
        for source in sources:
            if source.tree is None:
                continue
            fixing = [d for d in self._not_baselined(self.diagnostics_for(source, findings.get(source.path, [])))
                      if isinstance(d.fix, Fix) and (d.fix.applicability == "safe" or unsafe)
                      and (not callable(choice) or choice(d))]
            if not fixing:
                continue
            wanted = [d.fix for d in fixing if isinstance(d.fix, Fix)]  # all of them: the findings are this run's
            module_imports = _bound_module_names(source.tree)
            new_tree, chosen = _apply(source.tree, wanted, module_imports)
            new_text = keep_final_newline(source.original_text, new_tree.code)
            try:
                reparsed = cst.parse_module(new_text)
            except cst.ParserSyntaxError as exc:
                result.errors.append(f"{source.path}: {INTERNAL_ERROR} a fix produced code that does not parse "
                                     f"({' '.join(str(exc.message).split())}); file left unchanged; {BUG_HINT}")
                continue
            source.text, source.tree = new_text, reparsed
            applied += len(chosen)
            code_of = {id(d.fix): d.code for d in fixing}
            counts = result.fixed_codes.setdefault(source.path, {})
            for fix in chosen:
                counts[code_of[id(fix)]] = counts.get(code_of[id(fix)], 0) + 1
        return applied


def _module_names(by_module: dict[str, SourceFile], paths: Collection[Path] | None) -> set[str] | None:
    if paths is None:
        return None
    wanted = set(paths)
    return {name for name, source in by_module.items() if source.path in wanted}


def _not_analysed(path: Path, message: str, digest: str = "") -> SourceFile:
    """A file reported as one WSC004 finding, unanalysed (no digest: the cache keeps no report that
    depends on it)."""
    return SourceFile(path, "", original_text="", syntax_error=(1, 1, message), problem_code=NOT_ANALYSED,
                      digest=digest)


def _exhausted(exc: BaseException) -> str:
    return "too deeply nested for the recursion limit" if isinstance(exc, RecursionError) else "out of memory"


def _too_deep(path: Path, lines: list[str], count: int) -> Diagnostic:
    return Diagnostic(path, 1, 1, 1, 1, INTERNAL_ERROR,
                      f"internal error: too deeply nested to locate {count} findings; {BUG_HINT}",
                      source_line=lines[0] if lines else "")


def _placed(path: Path, lines: list[str], finding: Finding, span: CodeRange, fix: FixView | None) -> Diagnostic:
    """The finding where it is in the file at `path` (`lines`: that file's): from here on, a diagnostic."""
    line = span.start.line
    traced = finding.traced
    return Diagnostic(path, line, span.start.column + 1, span.end.line, span.end.column + 1, finding.code,
                      finding.message, fix, chain=traced.chain if traced else [],
                      reason=traced.root.reason if traced else "",
                      source_line=lines[line - 1] if 0 < line <= len(lines) else "", notes=list(finding.notes),
                      assumption=finding.assumption or (
                          traced.root.reason if traced and is_entry_point(traced.root.reason) else ""),
                      targets=(finding.target,) if finding.target else (), library_sites=finding.library_sites)


def _summary(fix: Fix | None) -> FixSummary | None:
    """A fix as reports show it: what an analysis that gives its trees back keeps of it."""
    return FixSummary(fix.applicability, fix.message) if fix is not None else None


def _analysis_error(traced: TracedFunction, exc: Exception) -> Finding:
    return internal_error(traced.func.node.name, traced, f"the analysis of {traced.func.display_name}", exc)


def _rule_inputs(traced: TracedFunction) -> tuple[object, ...]:
    """What rules read besides the function's own analysis: its callers up to the root, and their
    parameters. When these change after the function was checked, it is checked again."""
    chain = []
    current: TracedFunction | None = traced
    while current is not None:
        chain.append((current.func.qualname, tuple(current.params.items()), current.compile, current.eager))
        current = current.parent
    return tuple(chain)


def _likely_traced(text: str) -> bool:
    """Files worth parsing with libcst straight away: they define a forward or an optimizer step."""
    return "def forward" in text or "def step" in text or "def _init_group" in text


def _owner(finding: Finding) -> FunctionInfo | None:
    """The indexed function holding a finding (a training loop's step stands in for its function)."""
    if finding.traced is None:
        return None
    func = finding.traced.func
    return getattr(func, "enclosing", None) or func


def _statement_of(finding: Finding) -> tuple[cst.CSTNode | None, cst.CSTNode | None]:
    """The top-level statement holding a finding (its traced function's class, or the function), and
    the method of that class holding it."""
    owner = _owner(finding)
    if owner is None:
        return None, None
    return (owner.cls.node, owner.node) if owner.cls is not None else (owner.node, None)


def _apply(tree: cst.Module, fixes: list[Fix], bound: set[str]) -> tuple[cst.Module, list[Fix]]:
    from cslint.fixers.apply import apply_fixes

    return apply_fixes(tree, fixes, bound)


def _bound_module_names(tree: cst.Module) -> set[str]:
    return {name for name in ("torch",) if module_level_alias(tree, name) == name}
