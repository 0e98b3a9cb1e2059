"""Drop an `if` that only skips a masked store which would write nothing.

    if idxs.max() > limit:                  idxs[idxs > limit] = limit
        idxs[idxs > limit] = limit    ->

When the test is false no element of the mask holds (`idxs.max() > limit` is false exactly when no element is
above `limit`), and a store through an all-false mask writes nothing, so the store may run every time. The
forms: `X.max()`/`X.amax()` (or `torch.max(X)`, `np.max(X)`, ...) compared with `>`/`>=` to `c`, guarding
`X[X > c] = v` with the same comparison (`X.min()` with `<`/`<=` likewise), and `M.any()`/`torch.any(M)`
guarding `Y[M] = v` with the same mask `M`; the body may hold several such stores, each through the guard's
mask, and nothing else. The stored value must be a Python value (an empty mask takes any scalar; a tensor of
values would have to be empty), and the mask and value free of calls with effects (they are now evaluated
every time).

Safe on NumPy arrays of host data (wav2vec2's span-mask indices): the same array in every case. Unsafe on a
tensor: the in-place store now runs on every step, and autograd counts it as a modification even when it
writes nothing, so a tensor saved for backward or a leaf that requires grad makes backward (or the store)
raise where the skipped store did not.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.kinds import Tag
from cslint.fixers.masked import _same_code, _text, is_pure
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix

_ABOVE = {"max", "amax"}
_BELOW = {"min", "amin"}
_SYMBOLS = {cst.GreaterThan: ">", cst.GreaterThanEqual: ">=", cst.LessThan: "<", cst.LessThanEqual: "<="}
# the same comparison read from the other side: `c < X.max()` is `X.max() > c`
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">="}
_NAMESPACES = ("torch.", "numpy.")


def drop_noop_store_guard(node: cst.If, ctx: RuleContext) -> Fix | None:
    """`if <no element of M holds>: <stores through M>` -> the stores alone."""
    if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock):
        return None
    mask = _guarded_mask(node.test, ctx)
    if mask is None or not is_pure(mask, ctx):
        return None
    lines = [stmt for stmt in node.body.body if isinstance(stmt, cst.SimpleStatementLine)]
    stores = [_store(stmt, mask, ctx) for stmt in lines]
    if not stores or len(lines) != len(node.body.body) or any(store is None for store in stores):
        return None
    lines[0] = lines[0].with_changes(leading_lines=[*node.leading_lines, *lines[0].leading_lines])
    tensors = [s for s in stores if s is not None and ctx.kind(s).tag is Tag.TENSOR]
    what = "a store through a mask with no element set writes nothing"
    if not tensors:
        return Fix("safe", f"Remove the `if`: {what}, so the store may run every time",
                   [(node, cst.FlattenSentinel(lines))])
    return Fix("unsafe", f"Remove the `if`: {what}; unsafe: the in-place store on `{ctx.code(tensors[0], 24)}` now "
                         "runs on every step, and autograd counts it as a modification even when it writes nothing "
                         "(backward raises if the tensor was saved for it; a leaf that requires grad raises)",
               [(node, cst.FlattenSentinel(lines))])


def _guarded_mask(test: cst.BaseExpression, ctx: RuleContext) -> cst.BaseExpression | None:
    """The mask whose having any element set is exactly `test`: `X > c` for `X.max() > c`, `M` for `M.any()`."""
    any_of = _reduced(test, ctx, {"any"})
    if any_of is not None:
        return any_of[1].with_changes(lpar=[], rpar=[])
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    target = test.comparisons[0]
    symbol, left, right = _SYMBOLS.get(type(target.operator)), test.left, target.comparator
    if symbol is None:
        return None
    reduced = _reduced(left, ctx, _ABOVE | _BELOW)
    if reduced is None:  # `c < X.max()`: read it as `X.max() > c`
        reduced = _reduced(right, ctx, _ABOVE | _BELOW)
        if reduced is None:
            return None
        symbol, right = _FLIPPED[symbol], left
    name, array = reduced
    if symbol not in ((">", ">=") if name in _ABOVE else ("<", "<=")):
        return None
    return cst.parse_expression(f"{_operand(array)} {symbol} {_operand(right)}")


def _operand(expr: cst.BaseExpression) -> str:
    """Source of a comparison's operand, parenthesised only where it binds more loosely than a comparison."""
    bare = _text(expr.with_changes(lpar=[], rpar=[]))
    loose = (cst.Comparison, cst.BooleanOperation, cst.IfExp, cst.Lambda, cst.NamedExpr)
    looser_not = isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not)
    return f"({bare})" if isinstance(expr, loose) or looser_not else bare


def _reduced(expr: cst.BaseExpression, ctx: RuleContext, names: set[str]) -> tuple[str, cst.BaseExpression] | None:
    """(reduction, operand) of a whole-array reduction: `X.max()`, `torch.max(X)`, `np.any(M)`."""
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    if isinstance(func, cst.Attribute) and not expr.args and func.attr.value in names \
            and ctx.kind(func.value).tag in (Tag.TENSOR, Tag.HOST):
        return func.attr.value, func.value
    qualified = ctx.resolve(func)
    if qualified is None or not qualified.startswith(_NAMESPACES) or len(expr.args) != 1 \
            or expr.args[0].keyword is not None or expr.args[0].star:
        return None
    last = qualified.rsplit(".", 1)[-1]
    operand = expr.args[0].value
    if last in names and ctx.kind(operand).tag in (Tag.TENSOR, Tag.HOST):
        return last, operand
    return None


def _store(stmt: cst.SimpleStatementLine, mask: cst.BaseExpression, ctx: RuleContext) -> cst.BaseExpression | None:
    """The array of `Y[<mask>] = <Python value>` (the statement's only target), else None."""
    if len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Subscript):
        return None
    target = assign.targets[0].target
    if len(target.slice) != 1 or not isinstance(target.slice[0].slice, cst.Index):
        return None
    index = target.slice[0].slice.value
    if not _same_code(index.with_changes(lpar=[], rpar=[]), mask):
        return None
    if ctx.kind(target.value).tag not in (Tag.TENSOR, Tag.HOST) or ctx.kind(assign.value).tag is Tag.TENSOR:
        return None
    if not (is_pure(assign.value, ctx) and is_pure(target.value, ctx)):
        return None
    return target.value

