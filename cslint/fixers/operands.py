"""Which operands of a fix are certainly tensors, and how to make the others tensors.

Inference treats a traced root's unannotated inputs and `group["lr"]` as tensors because they are on a
static-graph device. The same code also runs on CPU/GPU, where they are Python numbers: a fix that writes
`torch.where(step % k == 0, ...)` or `torch.clamp(lr, min=...)` must still run there. A value is
*certainly* a tensor when it is made by a torch op or a tensor method from one that certainly is, or is a
parameter, its gradient or a module's tensor attribute; anything else a fix hands to an op that requires
a tensor is wrapped in `torch.as_tensor(...)` (which leaves a tensor as it is).
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.syntax import string_value
from cslint.analysis.torch_api import TORCH_PREFIXES
from cslint.fixers.assignments import assignments
from cslint.rule_api.context import RuleContext

TENSOR_ATTRIBUTES = frozenset({"grad", "data", "T", "mT"})
NUMBER_METHODS = frozenset({"conjugate", "is_integer", "as_integer_ratio", "hex", "bit_length", "to_bytes",
                            "__abs__", "__neg__", "__round__", "__float__", "__int__"})


def certainly_tensor(expr: cst.BaseExpression, ctx: RuleContext, _seen: frozenset[str] = frozenset()) -> bool:
    """Is `expr` a tensor whether the step runs traced or eagerly with Python-number hyperparameters?"""
    if not ctx.is_tensor(expr):
        return False
    if isinstance(expr, cst.Call):
        func = expr.func
        qualified = ctx.resolve(func)
        if qualified is not None and qualified.startswith(TORCH_PREFIXES):
            return True
        # `x.norm()`: had `x` been a Python number, the original would have failed too
        return isinstance(func, cst.Attribute) and func.attr.value not in NUMBER_METHODS
    if isinstance(expr, cst.Attribute):
        if expr.attr.value in TENSOR_ATTRIBUTES:
            return True
        return isinstance(expr.value, cst.Name) and expr.value.value == "self"  # a parameter or buffer
    if isinstance(expr, cst.BinaryOperation):
        return certainly_tensor(expr.left, ctx, _seen) or certainly_tensor(expr.right, ctx, _seen)
    if isinstance(expr, cst.UnaryOperation):
        return certainly_tensor(expr.expression, ctx, _seen)
    if isinstance(expr, cst.Comparison):
        return certainly_tensor(expr.left, ctx, _seen) or \
            any(certainly_tensor(c.comparator, ctx, _seen) for c in expr.comparisons)
    if isinstance(expr, cst.Subscript):
        return certainly_tensor(expr.value, ctx, _seen)
    if isinstance(expr, cst.Name):
        if expr.value in _seen:
            return False
        if expr.value in _parameter_loop_names(ctx):
            return True
        values = assignments(ctx).get(expr.value, [])
        seen = _seen | {expr.value}
        return bool(values) and all(v is not None and certainly_tensor(v, ctx, seen) for v in values)
    return False


def _parameter_loop_names(ctx: RuleContext) -> set[str]:
    """Names bound by `for p in group["params"]` (each one an nn.Parameter)."""
    key = "operands.parameter_loops"
    if key not in ctx.scratch:
        found: set[str] = set()
        for node in ctx.walk():
            if isinstance(node, cst.For) and isinstance(node.target, cst.Name):
                it = node.iter
                if isinstance(it, cst.Subscript) and len(it.slice) == 1 and \
                        isinstance(it.slice[0].slice, cst.Index) and string_value(it.slice[0].slice.value) == "params":
                    found.add(node.target.value)
        ctx.scratch[key] = found
    return ctx.scratch[key]  # type: ignore[no-any-return]


def as_tensor(expr: cst.BaseExpression, torch: str) -> cst.Call:
    """`torch.as_tensor(expr)`."""
    return cst.Call(func=cst.Attribute(cst.Name(torch), cst.Name("as_tensor")),
                    args=[cst.Arg(expr.with_changes(lpar=[], rpar=[]) if _bare_ok(expr) else expr)])


def tensor_operand(expr: cst.BaseExpression, ctx: RuleContext, torch: str) -> tuple[cst.BaseExpression, bool]:
    """`expr` if it certainly is a tensor, else `torch.as_tensor(expr)`; and whether it was wrapped."""
    if certainly_tensor(expr, ctx):
        return expr, False
    return as_tensor(expr, torch), True


def _bare_ok(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Comparison, cst.Call, cst.Name, cst.Attribute, cst.Subscript, cst.BinaryOperation,
                             cst.UnaryOperation))


class _GuardDivisions(cst.CSTTransformer):
    """`a / b` with `b` maybe a Python number -> `a / torch.as_tensor(b)`: computed unconditionally (as
    torch.where does), a Python division by zero would raise where the original never divided."""

    def __init__(self, ctx: RuleContext, torch: str) -> None:
        self.ctx = ctx
        self.torch = torch
        self.originals: list[cst.BinaryOperation] = []
        self.changed = False

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        self.originals.append(node)

    def leave_BinaryOperation(self, original: cst.BinaryOperation, updated: cst.BinaryOperation
                              ) -> cst.BaseExpression:
        self.originals.pop()
        if isinstance(original.operator, (cst.Divide, cst.FloorDivide, cst.Modulo)) and \
                not certainly_tensor(original.right, self.ctx) and not _is_nonzero_literal(original.right):
            self.changed = True
            return updated.with_changes(right=as_tensor(updated.right, self.torch))
        return updated

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _is_nonzero_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return _is_nonzero_literal(expr.expression)
    if isinstance(expr, (cst.Integer, cst.Float)):
        return float(expr.value.replace("_", "")) != 0.0
    return False


def guard_divisions(expr: cst.BaseExpression, ctx: RuleContext, torch: str) -> tuple[cst.BaseExpression, bool]:
    """`expr` with every division by a maybe-Python-number divisor made a tensor division."""
    guard = _GuardDivisions(ctx, torch)
    return expr.visit(guard), guard.changed  # type: ignore[return-value]
