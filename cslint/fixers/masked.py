"""Rewrite boolean-mask selections into fixed-shape masked arithmetic.

`x[m].sum()`  -> `torch.where(m, x, 0).sum()`
`x[m].mean()` -> `torch.where(m, x, 0).sum() / m.sum()`
`x[m] = 0`    -> `x.masked_fill_(m, 0)`  (a Python number stored through the mask)

`torch.where(m, x, 0)` rather than `x * m`: the product turns an inf or NaN in an unselected position
into NaN, the selection does not, so only `where` equals the original for every input.

Empty mask: `x[m].mean()` of an all-false mask is NaN (the mean of nothing). The rewrite keeps that:
`0 / 0` is NaN, so the fix changes no value. Code that wants 0 instead writes `m.sum().clamp(min=1)` itself;
that is a change of meaning a person has to choose, not a fix.

Shapes: `x[m]` accepts a mask over the leading dimensions of `x` (`h[(B, T)]` of an `h` of `(B, T, H)`),
while `torch.where` broadcasts from the trailing ones. The fix is therefore safe only when the mask is
visibly elementwise over `x` itself (`x[x > 0]`, `loss[loss != 0]`, `x[torch.isfinite(x)]`, or a name
assigned once from such an expression); otherwise it is unsafe and says that it assumes equal shapes.
Both `x` and `m` must be free of calls that are not tensor operations or that draw random numbers,
because the rewrite evaluates them in another order (and the mean evaluates `m` twice).
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.analysis.kinds import Tag
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix

ELEMENTWISE_PREDICATES = frozenset({"isfinite", "isnan", "isinf", "isposinf", "isneginf", "signbit", "bool",
                                    "logical_not"})


def _text(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _atom(node: cst.BaseExpression) -> str:
    """Source of `node`, parenthesised unless it already binds tighter than a method call."""
    text = _text(node)
    simple = (cst.Name, cst.Attribute, cst.Subscript, cst.Call)
    return text if isinstance(node, simple) or node.lpar else f"({text})"


def is_pure(expr: cst.BaseExpression, ctx: RuleContext) -> bool:
    """No calls except non-random torch functions and tensor methods: safe to reorder or repeat."""
    pure = True

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal pure
            func = node.func
            qualified = ctx.resolve(func)
            if qualified is not None:
                if not qualified.startswith("torch.") or qualified in api.RANDOM_FUNCTIONS:
                    pure = False
            elif isinstance(func, cst.Attribute) and ctx.is_tensor(func.value):
                if func.attr.value in api.RANDOM_METHODS or func.attr.value.endswith("_"):
                    pure = False
            else:
                pure = False

        def visit_Lambda(self, node: cst.Lambda) -> None:
            nonlocal pure
            pure = False

    expr.visit(Calls())
    return pure


def _same_code(a: cst.CSTNode, b: cst.CSTNode) -> bool:
    return " ".join(_text(a).split()) == " ".join(_text(b).split())


def _is_scalar(expr: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A Python value or a full reduction (`loss.mean()`): broadcasting it keeps the other side's shape."""
    if not ctx.is_tensor(expr):
        return True
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and not expr.args \
        and expr.func.attr.value in api.REDUCTIONS


def is_elementwise_over(mask: cst.BaseExpression, x: cst.BaseExpression, ctx: RuleContext,
                        definitions: dict[str, cst.BaseExpression]) -> bool:
    """Is `mask` visibly computed elementwise from `x` and static values, so it has `x`'s shape?"""
    if isinstance(mask, cst.Name) and mask.value in definitions:
        return is_elementwise_over(definitions[mask.value], x, ctx, {})
    if isinstance(mask, cst.Comparison) and len(mask.comparisons) == 1:
        left, right = mask.left, mask.comparisons[0].comparator
        return (_same_code(left, x) and (_is_scalar(right, ctx) or _same_code(right, x))) or \
               (_same_code(right, x) and _is_scalar(left, ctx))
    if isinstance(mask, cst.UnaryOperation) and isinstance(mask.operator, cst.BitInvert):
        return is_elementwise_over(mask.expression, x, ctx, definitions)
    if isinstance(mask, cst.BinaryOperation) and isinstance(mask.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return is_elementwise_over(mask.left, x, ctx, definitions) and \
               is_elementwise_over(mask.right, x, ctx, definitions)
    if isinstance(mask, cst.Call):
        func = mask.func
        if isinstance(func, cst.Attribute) and func.attr.value in ELEMENTWISE_PREDICATES and not mask.args:
            return _same_code(func.value, x)
        qualified = ctx.resolve(func)
        if qualified is not None and qualified.rsplit(".", 1)[-1] in ELEMENTWISE_PREDICATES and \
                len(mask.args) == 1:
            return _same_code(mask.args[0].value, x)
    return False


def masked_reduction_fix(call: cst.Call, x: cst.BaseExpression, mask: cst.BaseExpression, reduction: str,
                         ctx: RuleContext, definitions: dict[str, cst.BaseExpression]) -> Fix | None:
    """Fix for `x[mask].sum()` / `x[mask].mean()` (the whole call node), or None."""
    if reduction not in ("sum", "mean") or call.args:
        return None
    if not (is_pure(x, ctx) and is_pure(mask, ctx)):
        return None
    torch, imports = ctx.torch_name()
    selected = f"{torch}.where({_text(mask)}, {_text(x)}, 0).sum()"
    code = selected if reduction == "sum" else f"{selected} / {_atom(mask)}.sum()"
    replacement = cst.parse_expression(code).with_changes(lpar=call.lpar, rpar=call.rpar)
    if is_elementwise_over(mask, x, ctx, definitions):
        return Fix("safe", f"Replace with `{code}` (fixed shape, same value)", [(call, replacement)], imports)
    return Fix("unsafe", f"Replace with `{code}` (assumes the mask has the shape of "
                         f"`{ctx.code(x, 24)}`, not only its leading dimensions)", [(call, replacement)], imports)


def masked_store_fix(statement: cst.Assign, x: cst.BaseExpression, mask: cst.BaseExpression,
                     ctx: RuleContext, definitions: dict[str, cst.BaseExpression]) -> Fix | None:
    """Fix for `x[mask] = <Python number>`: `x.masked_fill_(mask, <number>)`, the same in-place store when
    the mask has the shape of `x` (safe when visible, unsafe otherwise, like the reductions)."""
    value = statement.value
    if len(statement.targets) != 1 or ctx.kind(value).tag is not Tag.STATIC:
        return None
    if not isinstance(value, (cst.Integer, cst.Float, cst.Name, cst.Attribute, cst.UnaryOperation)):
        return None
    if not (is_pure(x, ctx) and is_pure(mask, ctx)):
        return None
    code = f"{_atom(x)}.masked_fill_({_text(mask)}, {_text(value)})"
    replacement = cst.Expr(cst.parse_expression(code))
    if is_elementwise_over(mask, x, ctx, definitions):
        return Fix("safe", f"Replace with `{code}`", [(statement, replacement)])
    return Fix("unsafe", f"Replace with `{code}` (assumes the mask has the shape of `{ctx.code(x, 24)}`; a mask "
                         "over its leading dimensions would need `.unsqueeze(-1)`)", [(statement, replacement)])
