"""Every value each local name of a traced function is bound to: what the fixers read to tell whether a
name holds a tensor or is free to use."""

from __future__ import annotations

import libcst as cst

from cslint.rule_api.context import RuleContext


def assignments(ctx: RuleContext) -> dict[str, list[cst.BaseExpression | None]]:
    """Every value each local name is bound to in the function (None: bound some other way)."""
    key = "host.assignments"
    if key not in ctx.scratch:
        found: dict[str, list[cst.BaseExpression | None]] = {}
        for node in ctx.walk():  # the body's nodes in source order, from the walk the rules share
            kind = type(node)
            if kind is cst.Assign:
                for target in node.targets:  # type: ignore[attr-defined]
                    if isinstance(target.target, cst.Name):
                        found.setdefault(target.target.value, []).append(node.value)  # type: ignore[attr-defined]
                    else:
                        for name in _names_in(target.target):
                            found.setdefault(name, []).append(None)
            elif kind is cst.AugAssign:
                if isinstance(node.target, cst.Name):  # type: ignore[attr-defined]
                    found.setdefault(node.target.value, []).append(None)  # type: ignore[attr-defined]
            elif kind is cst.For:
                for name in _names_in(node.target):  # type: ignore[attr-defined]
                    found.setdefault(name, []).append(None)
        func = ctx.traced.func.node
        p = func.params
        for param in [*p.posonly_params, *p.params, *p.kwonly_params]:
            found.setdefault(param.name.value, []).append(None)
        ctx.scratch[key] = found
    return ctx.scratch[key]  # type: ignore[no-any-return]


def _names_in(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        return [n for e in target.elements for n in _names_in(e.value)]
    return []
