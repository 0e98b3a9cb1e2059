"""`.item()` of a one-element NumPy draw -> the scalar draw: `np.random.rand(1).item()` -> `np.random.rand()`.

NumPy's module-level random functions called without a size return one Python number drawn exactly as the
one element of a size-1 draw (the same generator call: equal values and type for every seed, checked in
tests/test_numpy_draw_fixes.py). Under torch.compile dynamo traces a NumPy array as a tensor, so `.item()`
on the drawn array is a second graph break after the draw's own (WSC704); the scalar form has no array to
read. Exact, so safe. The draw itself stays a host draw: WSC704 still reports it.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.numpy_draws import DIMENSIONS, size_argument
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix


def scalar_draw(item: cst.Call, ctx: RuleContext) -> Fix | None:
    """For `<np.random.f(..., size 1)>.item()` (the `.item()` call): the draw without a size."""
    func = item.func
    if item.args or not isinstance(func, cst.Attribute) or func.attr.value != "item" \
            or not isinstance(func.value, cst.Call):
        return None
    draw = func.value
    qualified = ctx.resolve(draw.func)
    if qualified is None or not qualified.startswith("numpy.random.") or qualified.count(".") != 2:
        return None
    args = _without_size(qualified.rsplit(".", 1)[-1], list(draw.args))
    if args is None:
        return None
    replacement = draw.with_changes(args=args, lpar=item.lpar, rpar=item.rpar)
    code = ctx.code(replacement.with_changes(lpar=[], rpar=[]), 60)
    return Fix("safe", f"Draw the number itself: `{code}` (the same value; no array to read)",
               [(item, replacement)])


def _without_size(name: str, args: list[cst.Arg]) -> list[cst.Arg] | None:
    """The arguments with the size 1 removed, or None when the call does not draw exactly one number."""
    size = size_argument(name, args)
    if size is None:
        return None
    if name in DIMENSIONS:  # `rand(1, 1)`: every dimension 1
        return [] if all(arg.keyword is None and _is_one(arg.value) for arg in args) else None
    if not _is_one(size.value):
        return None
    kept = [arg for arg in args if arg is not size]
    if kept:  # the last argument loses the comma that separated it from the size
        kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return kept


def _is_one(value: cst.BaseExpression) -> bool:
    """`1`, `(1,)` or `[1]`: a size of one element."""
    if isinstance(value, cst.Integer):
        return value.value == "1"
    if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == 1:
        return _is_one(value.elements[0].value)
    return False
