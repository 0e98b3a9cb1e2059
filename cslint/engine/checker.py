"""Run the enabled rules over every traced function of a module."""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import libcst as cst

from cslint.analysis.compile_options import CompileOptions
from cslint.analysis.index import ModuleInfo
from cslint.analysis.project import Project
from cslint.analysis.traced import TracedFunction
from cslint.analysis.tracing_guards import guard_note, guard_regions
from cslint.core.config import Settings
from cslint.fixers.preinitialize import aliases_remembered
from cslint.support.profile import Profile
from cslint.core.report import BUG_HINT, INTERNAL_ERROR
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Finding, Fix
from cslint.rules import Rule
from cslint.engine.messages import compose
from cslint.core.targets import get_target, is_cerebras_fix


Handler = Callable[[cst.CSTNode, RuleContext], None]


def internal_error(node: cst.CSTNode, traced: TracedFunction | None, where: str, exc: BaseException) -> Finding:
    detail = "too deeply nested to analyse" if isinstance(exc, RecursionError) else \
        f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return Finding(code=INTERNAL_ERROR, message=f"internal error in {where} ({detail}); {BUG_HINT}",
                   node=node, traced=traced)


def _dispatch(table: dict[type, list[tuple[Rule, Handler]]], ctx: RuleContext,
              profile: Profile | None = None) -> None:
    if profile is not None and profile.enabled:
        table = _timed_table(table, profile)
    # nested classes are not part of the traced function
    for node in ctx.walk(prune=(cst.ClassDef,)):
        handlers = table.get(type(node))
        if not handlers:
            continue
        for rule, handler in handlers:
            ctx.current_code = rule.code
            try:
                handler(node, ctx)
            except Exception as exc:  # one rule's bug must not stop the run or hide other findings
                ctx.findings.append(internal_error(node, ctx.traced, f"rule {rule.code}", exc))


def _timed_table(table: dict[type, list[tuple[Rule, Handler]]],
                 profile: Profile) -> dict[type, list[tuple[Rule, Handler]]]:
    """`table` with each handler adding its time to its rule's (`--profile` only: two clock reads per
    handler call, kept out of the runs that do not print them)."""
    return {kind: [(rule, _timed(rule.code, handler, profile)) for rule, handler in handlers]
            for kind, handlers in table.items()}


def _timed(code: str, handler: Handler, profile: Profile) -> Handler:
    def timed(node: cst.CSTNode, ctx: RuleContext) -> None:
        start = time.perf_counter()
        try:
            handler(node, ctx)
        finally:
            profile.add_rule_time(code, time.perf_counter() - start)
    return timed


class Checker:
    def __init__(self, rules: Iterable[type[Rule]], settings: Settings, profile: Profile | None = None) -> None:
        self.settings = settings
        self.profile = profile
        self._project: weakref.ref[Project] | None = None
        self.rules = [rule() for rule in rules]
        self.module_rules = [rule for rule in self.rules if getattr(rule, "scope", "function") == "module"]
        self.table: dict[type, list[tuple[Rule, Handler]]] = {}
        for rule in self.rules:
            if rule in self.module_rules:
                continue
            for node_type, handler in rule.handlers().items():
                cls = getattr(cst, node_type, None)
                if cls is None:
                    raise TypeError(f"{type(rule).__name__}.visit_{node_type}: no libcst node {node_type}")
                self.table.setdefault(cls, []).append((rule, handler))

    @property
    def project(self) -> Project | None:
        """The program the functions checked next belong to (set by the runner for a run)."""
        return self._project() if self._project is not None else None

    @project.setter
    def project(self, project: Project | None) -> None:
        # Held weakly: a checker outlives its run (an editor's kept modules hold the linter that parses
        # their functions, and the linter its checker), and a project held here kept every earlier run's
        # modules and edited texts alive.
        self._project = weakref.ref(project) if project is not None else None

    def check(self, traced: TracedFunction) -> list[Finding]:
        return self.check_noting(traced)[0]

    def check_noting(self, traced: TracedFunction) -> tuple[list[Finding], bool]:
        """The function's findings, and whether a rule read the whole file's text to find them."""
        if traced.analysis is None or not self.table or traced.eager:
            return [], False
        ctx = RuleContext(traced=traced, settings=self.settings, project=self.project)
        with aliases_remembered():
            _dispatch(self.table, ctx, self.profile)
        analysis = traced.analysis
        if analysis.dead or analysis.unguarded:
            ctx.findings = _placed_by_guards(ctx, analysis.dead, analysis.unguarded)
        return adapt_to_target(ctx.findings, self.settings, traced.func.module, traced.root.compile), \
            ctx.read_module_text

    def check_module(self, module: ModuleInfo, project: Project) -> list[Finding]:
        """Rules with `scope = "module"` look at a whole file once (training scripts, loss classes)."""
        findings: list[Finding] = []
        for rule in self.module_rules:
            ctx = ModuleContext(module=module, project=project, settings=self.settings, current_rule=rule)
            try:
                rule.check_module(ctx)  # type: ignore[attr-defined]
            except Exception as exc:
                findings.append(internal_error(module.tree, None, f"rule {rule.code}", exc))
            findings.extend(ctx.findings)
        return adapt_to_target(findings, self.settings, module)


@dataclass
class ModuleContext:
    """What a module-scope rule sees: the file's index, the project, and a place to report."""

    module: ModuleInfo
    project: Project
    settings: Settings
    current_rule: Rule
    findings: list[Finding] = field(default_factory=list)

    def resolve(self, node: cst.BaseExpression) -> str | None:
        return self.module.imports.resolve(node)

    def code(self, node: cst.CSTNode, limit: int = 48) -> str:
        text = " ".join(cst.Module([]).code_for_node(node).split())
        return text if len(text) <= limit else text[: limit - 3] + "..."

    def report(self, node: cst.CSTNode, message: str, fix: Fix | None = None,
               notes: list[str] | None = None) -> None:
        self.findings.append(Finding(code=self.current_rule.code, message=message, node=node, traced=None, fix=fix,
                                     notes=list(notes or ())))


def _placed_by_guards(ctx: RuleContext, dead: set[int], unguarded: dict[int, str]) -> list[Finding]:
    """Findings in code the tracer never runs are dropped; those after a tracing guard that does not hold
    for this target say so."""
    regions = guard_regions(ctx.body, dead, unguarded)
    tracer = get_target(ctx.settings.target).tracer
    kept = []
    for finding in ctx.findings:
        key = id(finding.node)
        if key not in regions or finding.code == INTERNAL_ERROR:
            kept.append(finding)
        elif (guard := regions[key]) is not None:
            finding.notes.append(guard_note(guard, tracer))
            kept.append(finding)
    return kept


def adapt_to_target(findings: list[Finding], settings: Settings, module: ModuleInfo | None = None,
                    compiled: CompileOptions | None = None) -> list[Finding]:
    """Each message composed (cslint/engine/messages.py) with the target's note (what a graph break costs under the
    root's `compiled` options) and the analysis's notes;
    fixes that write cerebras.pytorch calls only on the WSC target, no fix that imports a package neither
    the file nor the project imports already, and none of a rule the settings make unfixable."""
    from cslint.core.fixability import is_fixable

    target = get_target(settings.target)
    known: set[str] | None = None  # read from the imports only when a fix imports something
    for finding in findings:
        finding.target = target.name
        if finding.code == INTERNAL_ERROR:
            continue
        finding.message = compose(finding.message, finding.code, target, compiled, finding.consequence)
        finding.consequence = ""
        if finding.fix is None:
            continue
        if not is_fixable(finding.code, settings):
            finding.fix = None
        elif not target.cerebras_fixes and is_cerebras_fix(finding.fix.message, finding.fix.imports):
            finding.fix = None
        elif finding.fix.imports and module is not None:
            if known is None:
                known = imported_packages(module, settings)
            if known is not None and any(name.split(".")[0] not in known for name in finding.fix.imports):
                finding.fix = None
    return findings


def imported_packages(module: ModuleInfo | None, settings: Settings) -> set[str] | None:
    """Top-level packages a fix may import: those the file or (when it was scanned) the project imports."""
    if module is None:
        return None
    known = {qualified.split(".")[0] for qualified in module.imports.names.values()}
    return known | set(settings.project_packages or ())
