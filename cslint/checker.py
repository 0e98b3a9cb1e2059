"""Run the enabled rules over every traced function of a module."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import libcst as cst

from cslint.analysis.traced import TracedFunction
from cslint.config import Settings
from cslint.rules import Finding, Rule, RuleContext

INTERNAL_ERROR = "WSC002"
BUG_HINT = "please report it, with the file, at the cslint issue tracker"

Handler = Callable[[cst.CSTNode, RuleContext], None]


def internal_error(node: cst.CSTNode, traced: TracedFunction | None, where: str, exc: BaseException) -> Finding:
    detail = "too deeply nested to analyse" if isinstance(exc, RecursionError) else \
        f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
    return Finding(code=INTERNAL_ERROR, message=f"internal error in {where} ({detail}); {BUG_HINT}",
                   node=node, traced=traced)


class _Dispatcher(cst.CSTVisitor):
    def __init__(self, table: dict[type, list[tuple[Rule, Handler]]], ctx: RuleContext) -> None:
        self.table = table
        self.ctx = ctx

    def on_visit(self, node: cst.CSTNode) -> bool:
        handlers = self.table.get(type(node))
        if handlers:
            for rule, handler in handlers:
                self.ctx.current_rule = rule
                try:
                    handler(node, self.ctx)
                except Exception as exc:  # one rule's bug must not stop the run or hide other findings
                    self.ctx.findings.append(internal_error(node, self.ctx.traced, f"rule {rule.code}", exc))
        # nested classes are not part of the traced function
        return not isinstance(node, cst.ClassDef)


class Checker:
    def __init__(self, rules: Iterable[type[Rule]], settings: Settings) -> None:
        self.settings = settings
        self.rules = [rule() for rule in rules]
        self.table: dict[type, list[tuple[Rule, Handler]]] = {}
        for rule in self.rules:
            for node_type, handler in rule.handlers().items():
                cls = getattr(cst, node_type, None)
                if cls is None:
                    raise TypeError(f"{type(rule).__name__}.visit_{node_type}: no libcst node {node_type}")
                self.table.setdefault(cls, []).append((rule, handler))

    def check(self, traced: TracedFunction) -> list[Finding]:
        if traced.analysis is None or not self.table:
            return []
        ctx = RuleContext(traced=traced, settings=self.settings)
        dispatcher = _Dispatcher(self.table, ctx)
        traced.func.node.body.visit(dispatcher)
        return ctx.findings
