"""The lint pipeline: read, parse once, index, find traced code, run rules, locate, suppress, fix."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from pathlib import Path

import libcst as cst
from libcst._position import CodeRange

from cslint.analysis.index import ModuleInfo, index_module, index_module_from_ast
from cslint.analysis.module_names import assign_module_names
from cslint.analysis.project import Project
from cslint.analysis.traced import TracedProgram
from cslint.checker import Checker, internal_error
from cslint.config import Settings
from cslint.noqa import is_suppressed, noqa_lines
from cslint.positions import locate, whole_module_positions
from cslint.profile import Profile
from cslint.report import BUG_HINT, INTERNAL_ERROR, SYNTAX_ERROR, Diagnostic, RunResult
from cslint.rules import Finding, Fix, Rule, all_rules
from cslint.rules.base import module_level_alias
from cslint.rules.noqa_usage import UNUSED_NOQA, removal_fix, unused_noqa
from cslint.selection import ignored_for_file
from cslint.sources import ReadError, SourceFile, parse, read_source

__all__ = ["INTERNAL_ERROR", "SYNTAX_ERROR", "Diagnostic", "Linter", "RunResult"]

MAX_FIX_PASSES = 10


class Linter:
    def __init__(self, settings: Settings, rules: list[type[Rule]], profile: Profile | None = None) -> None:
        self.settings = settings
        self.profile = profile or Profile(enabled=False)
        self.checker = Checker(rules, settings, self.profile)
        self.enabled_codes = frozenset(r.code for r in rules)
        self.reach: dict[Path, set[Path]] = {}

    # ---- loading ---------------------------------------------------------------------------------

    def load(self, paths: list[Path], result: RunResult) -> list[SourceFile]:
        sources = []
        for path in paths:
            try:
                with self.profile.phase("read"):
                    source = read_source(path)
            except ReadError as exc:
                result.errors.append(f"{path}: {exc}")
                continue
            sources.append(source)  # parsed in analyse(), and with libcst only where it is needed
        return sources

    # ---- analysis --------------------------------------------------------------------------------

    def analyse(self, sources: list[SourceFile], result: RunResult,
                names: dict[Path, tuple[str, bool]] | None = None) -> dict[Path, list[Finding]]:
        """Findings per file. Also sets `self.reach`: for each file, the files whose traced roots reach
        code in it (what its findings depend on besides its own imports)."""
        modules: dict[str, ModuleInfo] = {}
        by_module: dict[str, SourceFile] = {}
        findings: dict[Path, list[Finding]] = {}
        for source in sources:
            if source.tree is None and source.syntax_error is None and _likely_traced(source.text):
                with self.profile.phase("parse"):
                    parse(source)
        parsed = [s for s in sources if s.syntax_error is None]
        if names is None or any(s.path not in names for s in parsed):
            names = {**assign_module_names([s.path for s in parsed]), **(names or {})}
        else:  # the caller's order (the whole tree's), so roots are met in the same order in every subset
            order = {path: i for i, path in enumerate(names)}
            parsed.sort(key=lambda s: order[s.path])
        for source in parsed:
            name, is_package = names[source.path]
            try:
                with self.profile.phase("index"):
                    info = self._index(source, name, is_package)
                if info is None:  # a syntax error, found while indexing
                    continue
                modules[name] = info
            except Exception as exc:
                findings.setdefault(source.path, []).append(
                    internal_error(source.tree or cst.Module([]), None, "indexing", exc))
                continue
            by_module[name] = source
        project = Project(modules.values())
        with self.profile.phase("traced code and tensor inference"):
            program = TracedProgram(project, self.settings.trace_roots).run()
        for traced, exc in program.errors:
            source = by_module[traced.func.module.name]
            where = f"the analysis of {traced.func.display_name}"
            findings.setdefault(source.path, []).append(internal_error(traced.func.node.name, traced, where, exc))
        self.reach = {by_module[m].path: {by_module[r].path for r in rs if r in by_module}
                      for m, rs in program.influencing_modules().items() if m in by_module}
        for traced in program.functions.values():
            source = by_module[traced.func.module.name]
            try:
                with self.profile.phase("rules"):
                    found = self.checker.check(traced)
            except Exception as exc:
                found = [internal_error(traced.func.node.name, traced, f"checking {traced.func.display_name}", exc)]
            findings.setdefault(source.path, []).extend(found)
        if self.checker.module_rules:
            for name, module in modules.items():
                findings.setdefault(by_module[name].path, []).extend(self.checker.check_module(module, project))
        return findings

    def _index(self, source: SourceFile, name: str, is_package: bool) -> ModuleInfo | None:
        """libcst's index for files likely to hold traced code; Python's `ast` (several times faster) for
        the rest, with their libcst tree parsed only if something turns out to need it."""
        if source.tree is None:
            try:
                tree = ast.parse(source.text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                tree = None
            if tree is not None:
                return index_module_from_ast(source.path, source.text, tree, name, is_package,
                                             loader=lambda: self._load_tree(source))
            with self.profile.phase("parse"):
                parse(source)
            if source.tree is None:
                return None
        return index_module(source.path, source.text, source.tree, name, is_package)

    def _load_tree(self, source: SourceFile) -> cst.Module:
        with self.profile.phase("parse"):
            parse(source)
        self.profile.count("files parsed on demand")
        if source.tree is None:
            raise SyntaxError(f"cslint's parser rejects {source.path} (Python accepts it)")
        return source.tree

    # ---- locating and filtering ------------------------------------------------------------------

    def diagnostics_for(self, source: SourceFile, findings: list[Finding]) -> list[Diagnostic]:
        lines = source.text.splitlines()
        if source.syntax_error is not None:
            line, column, message = source.syntax_error
            text = lines[line - 1] if 0 < line <= len(lines) else ""
            return [Diagnostic(source.path, line, column, line, column + 1, SYNTAX_ERROR,
                               f"syntax error: {message}", source_line=text)]
        check_noqa = UNUSED_NOQA in self.enabled_codes and "noqa" in source.text.lower()
        if not findings and not check_noqa:
            return []
        if source.tree is None:
            parse(source)
            if source.tree is None:
                return self.diagnostics_for(source, findings) if source.syntax_error is not None else []
        try:
            with self.profile.phase("positions"):
                positions = self._positions(source, findings, check_noqa)
        except RecursionError:
            text = lines[0] if lines else ""
            return [Diagnostic(source.path, 1, 1, 1, 1, INTERNAL_ERROR, f"internal error: too deeply nested to "
                               f"locate {len(findings)} findings; {BUG_HINT}", source_line=text)]
        suppressed = noqa_lines(source.text)
        per_file = ignored_for_file(source.path, self.settings)
        out = []
        seen: set[tuple[str, int, int]] = set()
        used: set[tuple[int, str]] = set()  # (line, code as written in the noqa) that suppressed something
        for finding in findings:
            span = positions.get(finding.node)
            if span is None:
                continue
            line, column = span.start.line, span.start.column + 1
            if (finding.code, line, column) in seen:
                continue
            seen.add((finding.code, line, column))
            if finding.code != INTERNAL_ERROR and is_suppressed(finding.code, line, suppressed):
                used.update((line, c) for c in suppressed[line] if finding.code.startswith(c))
                continue
            if finding.code != INTERNAL_ERROR and any(finding.code.startswith(c) for c in per_file):
                continue
            traced = finding.traced
            out.append(Diagnostic(
                path=source.path, line=line, column=column, end_line=span.end.line,
                end_column=span.end.column + 1, code=finding.code, message=finding.message, fix=finding.fix,
                chain=traced.chain if traced else [], reason=traced.root.reason if traced else "",
                source_line=lines[line - 1] if 0 < line <= len(lines) else "",
            ))
        if check_noqa and not any(UNUSED_NOQA.startswith(c) for c in per_file):
            known = [r.code for r in all_rules()] + [SYNTAX_ERROR, INTERNAL_ERROR]
            for item in unused_noqa(source.text, used, self.enabled_codes, known):
                d = item.directive
                out.append(Diagnostic(source.path, d.line, d.column, d.line, d.end_column, UNUSED_NOQA,
                                      item.message, removal_fix(positions, item),
                                      source_line=lines[d.line - 1] if 0 < d.line <= len(lines) else ""))
        out.sort(key=lambda d: (d.line, d.column, d.code))
        return out

    @staticmethod
    def _positions(source: SourceFile, findings: list[Finding], whole: bool) -> Mapping[cst.CSTNode, CodeRange]:
        assert source.tree is not None
        if whole:
            return whole_module_positions(source.tree)
        return locate(source.tree, source.text, ((f.node, _statement_of(f)) for f in findings))

    # ---- whole runs ------------------------------------------------------------------------------

    def run(self, paths: list[Path], fix: bool = False, unsafe_fixes: bool = False,
            context: tuple[Path, ...] | list[Path] = (), names: dict[Path, tuple[str, bool]] | None = None,
            ) -> RunResult:
        """Lint (and fix) `paths`. `context` files are analysed too, so call chains through them resolve,
        but they are never reported on or written."""
        result = RunResult()
        sources = self.load(paths, result)
        result.files_checked = len(sources)
        targets = {s.path.resolve() for s in sources}
        extra = self.load([p for p in context if p.resolve() not in targets], RunResult())
        findings = self.analyse(sources + extra, result, names)
        if fix:
            for _ in range(MAX_FIX_PASSES):
                applied = self._fix_pass(sources, findings, unsafe_fixes, result)
                if not applied:
                    break
                result.fixed += applied
                findings = self.analyse(sources + extra, result, names)
            result.changed_files = [s for s in sources if s.changed]
        for source in sources:
            result.diagnostics.extend(self.diagnostics_for(source, findings.get(source.path, [])))
        return result

    def _fix_pass(self, sources: list[SourceFile], findings: dict[Path, list[Finding]], unsafe: bool,
                  result: RunResult) -> int:
        applied = 0
        for source in sources:
            if source.tree is None:
                continue
            wanted = [d.fix for d in self.diagnostics_for(source, findings.get(source.path, []))
                      if d.fix is not None and (d.fix.applicability == "safe" or unsafe)]
            if not wanted:
                continue
            module_imports = _bound_module_names(source.tree)
            new_tree, chosen = _apply(source.tree, wanted, module_imports)
            new_text = new_tree.code
            try:
                reparsed = cst.parse_module(new_text)
            except cst.ParserSyntaxError as exc:
                result.errors.append(f"{source.path}: {INTERNAL_ERROR} a fix produced code that does not parse "
                                     f"({' '.join(str(exc.message).split())}); file left unchanged; {BUG_HINT}")
                continue
            source.text, source.tree = new_text, reparsed
            applied += len(chosen)
        return applied


def _likely_traced(text: str) -> bool:
    """Files worth parsing with libcst straight away: they define a forward or an optimizer step."""
    return "def forward" in text or "def step" in text or "def _init_group" in text


def _statement_of(finding: Finding) -> cst.CSTNode | None:
    """The top-level statement holding a finding: its traced function's class, or the function."""
    if finding.traced is None:
        return None
    func = finding.traced.func
    owner = getattr(func, "enclosing", None) or func  # a training loop's step stands in for its function
    return owner.cls.node if owner.cls is not None else owner.node


def _apply(tree: cst.Module, fixes: list[Fix], bound: set[str]) -> tuple[cst.Module, list[Fix]]:
    from cslint.fixers.apply import apply_fixes

    return apply_fixes(tree, fixes, bound)


def _bound_module_names(tree: cst.Module) -> set[str]:
    return {name for name in ("torch",) if module_level_alias(tree, name) == name}
