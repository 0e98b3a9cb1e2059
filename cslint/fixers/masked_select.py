"""Rewrite a reduction of `masked_select` into a fixed-shape masked reduction.

`torch.masked_select(x, m).sum()` / `x.masked_select(m).sum()` -> `torch.where(m, x, 0).sum()`
`....mean()`                                                    -> `torch.where(m, x, 0).sum() / m.sum()`

`masked_select` broadcasts `x` and `m` against each other exactly as `torch.where` does, so the sum adds the
same elements (the zeros add nothing; only the float summation order differs): safe. The mean divides by
the number of selected elements, which is `m.sum()` only when `m` already has the broadcast shape: safe when
the mask is visibly elementwise over `x`, unsafe otherwise. `x` and `m` must be free of impure calls, since
the rewrite evaluates them in another order and the mean evaluates `m` twice.
"""

from __future__ import annotations

import libcst as cst

from cslint.fixers.masked import _atom, _text, is_elementwise_over, is_pure
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix


def masked_select_operands(call: cst.Call, ctx: RuleContext) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(x, mask) of `torch.masked_select(x, mask)` or `x.masked_select(mask)`, positional arguments only."""
    if any(arg.keyword is not None or arg.star for arg in call.args):
        return None
    if ctx.resolve(call.func) == "torch.masked_select" and len(call.args) == 2:
        return call.args[0].value, call.args[1].value
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "masked_select" and len(call.args) == 1 \
            and ctx.is_tensor(func.value):
        return func.value, call.args[0].value
    return None


def masked_select_reduction_fix(reduction: cst.Call, ctx: RuleContext,
                                definitions: dict[str, cst.BaseExpression]) -> tuple[cst.Call, Fix] | None:
    """For `<masked_select call>.sum()` / `.mean()` (the reduction call): the masked_select call and the fix."""
    func = reduction.func
    if reduction.args or not isinstance(func, cst.Attribute) or func.attr.value not in ("sum", "mean") \
            or not isinstance(func.value, cst.Call):
        return None
    selected = func.value
    operands = masked_select_operands(selected, ctx)
    if operands is None:
        return None
    x, mask = operands
    if not (is_pure(x, ctx) and is_pure(mask, ctx)):
        return None
    torch, imports = ctx.torch_name()
    total = f"{torch}.where({_text(mask)}, {_text(x)}, 0).sum()"
    code = total if func.attr.value == "sum" else f"{total} / {_atom(mask)}.sum()"
    replacement = cst.parse_expression(code).with_changes(lpar=reduction.lpar, rpar=reduction.rpar)
    if func.attr.value == "sum" or is_elementwise_over(mask, x, ctx, definitions):
        return selected, Fix("safe", f"Replace with `{code}` (fixed shape, the same elements)",
                             [(reduction, replacement)], imports)
    return selected, Fix("unsafe", f"Replace with `{code}` (the count assumes the mask has the broadcast shape of "
                                   f"`{ctx.code(x, 24)}`)", [(reduction, replacement)], imports)
