"""Turn a Python counter on a module into a tensor buffer that the traced step updates in place.

`self.calls = 0` in `__init__` and `self.calls += 1` in `forward`: the increment runs once, while
tracing. As `self.register_buffer("calls", torch.tensor(0), persistent=False)` the same `+= 1` is an
in-place tensor op recorded in the graph and replayed every step. `persistent=False` keeps the
state_dict as it was (the Python attribute was not saved either).
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.index import ClassInfo
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix


def _self_attribute(target: cst.BaseExpression) -> str | None:
    if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name) and target.value.value == "self":
        return target.attr.value
    return None


def _is_number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _is_number(expr.expression)
    return isinstance(expr, (cst.Integer, cst.Float))


def _init_assignment(cls: ClassInfo, attr: str) -> cst.SimpleStatementLine | None:
    """The one `self.<attr> = <number>` line of `__init__`, after `super().__init__()`."""
    init = cls.methods.get("__init__")
    if init is None or not isinstance(init.node.body, cst.IndentedBlock):
        return None
    after_super = False
    found: cst.SimpleStatementLine | None = None
    for stmt in init.node.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        code = cst.Module([]).code_for_node(stmt)
        if "super(" in code and "__init__" in code:
            after_super = True
        for small in stmt.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1 \
                    and _self_attribute(small.targets[0].target) == attr:
                if found is not None or not after_super or len(stmt.body) != 1 or not _is_number(small.value):
                    return None
                found = stmt
    return found


def _reassigned_elsewhere(cls: ClassInfo, attr: str, init_line: cst.SimpleStatementLine) -> bool:
    """Does any method rebind `self.<attr>` with `=` (which would replace the buffer by a number)?"""
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            nonlocal found
            if any(_self_attribute(t.target) == attr for t in node.targets) and node not in init_line.body:
                found = True

    for method in cls.methods.values():
        method.node.visit(Finder())
    return found


def counter_to_buffer(node: cst.AugAssign, ctx: RuleContext) -> Fix | None:
    """For `self.calls += 1` in a module's traced method: register `calls` as a buffer in __init__."""
    attr = _self_attribute(node.target)
    cls = ctx.traced.func.cls
    if attr is None or cls is None or ctx.kind(node.target.value).role != "module":  # type: ignore[attr-defined]
        return None
    init_line = _init_assignment(cls, attr)
    if init_line is None or _reassigned_elsewhere(cls, attr, init_line):
        return None
    assign = init_line.body[0]
    assert isinstance(assign, cst.Assign)
    torch, imports = ctx.torch_name()
    register = cst.parse_statement(
        f'self.register_buffer("{attr}", {torch}.tensor({cst.Module([]).code_for_node(assign.value)}), '
        "persistent=False)\n")
    register = register.with_changes(leading_lines=init_line.leading_lines,
                                     trailing_whitespace=init_line.trailing_whitespace)
    return Fix("unsafe", f"Keep `{attr}` as a tensor buffer updated in place (registered in __init__); unsafe: "
                         f"`self.{attr}` becomes a tensor everywhere it is read, so Python code that tests or "
                         "formats it changes", [(init_line, register)], imports)
