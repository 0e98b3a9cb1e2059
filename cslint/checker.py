"""Run the enabled rules over every traced function of a module."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import libcst as cst

from cslint.analysis.traced import TracedFunction
from cslint.config import Settings
from cslint.rules import Finding, Rule, RuleContext

Handler = Callable[[cst.CSTNode, RuleContext], None]


class _Dispatcher(cst.CSTVisitor):
    def __init__(self, table: dict[type, list[tuple[Rule, Handler]]], ctx: RuleContext) -> None:
        self.table = table
        self.ctx = ctx

    def on_visit(self, node: cst.CSTNode) -> bool:
        handlers = self.table.get(type(node))
        if handlers:
            for rule, handler in handlers:
                self.ctx.current_rule = rule
                handler(node, self.ctx)
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
