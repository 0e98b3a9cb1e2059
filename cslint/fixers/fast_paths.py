"""Drop the tensor test of a fast path that the code's own tracing guard already skips under torch.compile.

    def can_skip_mask(mask, q_len, kv_len):                 def can_skip_mask(mask, q_len, kv_len):
        if is_torchdynamo_compiling() or is_tracing(mask):      if is_torchdynamo_compiling() or is_tracing(mask):
            return False                                            return False
        if q_len == kv_len and (mask is None or mask.all()): ->    if q_len == kv_len and (mask is None):
            return True                                             return True
        return False                                            return False

Library helpers (transformers' `_ignore_causal_mask_sdpa`) answer "can the general path be skipped?" and
return the general path's answer while dynamo traces: their authors state that answer is right whatever the
tensor says. Lazy-tensor tracers are none of the tracers those guards know, so the test of the tensor's value
runs and syncs the host. The fix makes the shortcut's condition what it is on a static graph: every part of
it that tests a tensor value becomes false, so the shortcut is taken only where Python values alone decide
it, and otherwise the function goes on to the answer its guard gives.

Offered only for an `if` without else, in the function's own body, after a tracing guard that does not hold
for the target (`if <guard>: return R`), whose body returns a constant, in a function that ends with the same
`return R`. Always unsafe: the general path computes what the shortcut skipped (numerically the same only
when the shortcut is an optimisation: check the outputs), also when running eagerly, and the calls of the
dropped test are no longer made.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.tracing_guards import Guards, guard_text
from cslint.analysis.walk import iter_nodes
from cslint.core.targets import DYNAMO
from cslint.fixers.masked_tail import returned_value, same_code
from cslint.fixers.where import unsafe_reason
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix

_CONSTANTS = ("True", "False", "None")
_HELPER_CALLS = "it calls code whose side effects cslint cannot see"


def skip_fast_path(node: cst.If, ctx: RuleContext) -> Fix | None:
    """The fix for `if <Python values> and/or <tensor test>: return <constant>` after a tracing guard, or None."""
    function = ctx.traced.func.node
    body = list(function.body.body) if isinstance(function.body, cst.IndentedBlock) else []
    if ctx.project is None or node.orelse is not None or not any(stmt is node for stmt in body):
        return None
    shortcut = returned_value(node.body)
    final = returned_value(cst.IndentedBlock([body[-1]]))
    general = final[0] if final is not None else None
    if shortcut is None or general is None or not _constant(shortcut[0]) or not _constant(general):
        return None
    if same_code(shortcut[0], general):
        return None  # a check that returns the general answer early: dropping it would run the shortcuts after it
    guards = Guards(ctx.project, DYNAMO)
    guard = _inline_guard(node.test, guards, ctx) or \
        _compile_guard(body[:[id(s) for s in body].index(id(node))], general, guards, ctx)
    if guard is None:
        return None
    dropped: list[cst.BaseExpression] = []
    try:
        test = _static(node.test, ctx, dropped)
    except _NotOnlyATest:
        return None
    if not dropped:
        return None
    reasons = {unsafe_reason(part, ctx) for part in dropped} - {None}
    if any(not reason.startswith(_HELPER_CALLS) for reason in reasons if reason is not None):
        return None  # the dropped test modifies state or draws random numbers: not only a fast path
    replacement: cst.CSTNode | cst.RemovalSentinel = cst.RemoveFromParent() if test is None else \
        node.with_changes(test=test)
    tests = ", ".join(f"`{ctx.code(part, 40)}`" for part in dropped)
    message = (f"Take the general path on a static graph, as `{guard}` does under torch.compile: drop the "
               f"fast path's tensor test {tests}; unsafe: where the test held the function now goes on to its "
               f"general path (which ends `return {ctx.code(general)}`), and the caller computes what the fast path "
               "skipped (the same numbers only if the fast path is an optimisation: compare the outputs), "
               "also when run eagerly")
    if reasons:
        message += ", and the calls in the dropped test are no longer made"
    return Fix("unsafe", message, [(node, replacement)])


def _compile_guard(before: list[cst.BaseStatement], general: cst.BaseExpression, guards: Guards,
                   ctx: RuleContext) -> str | None:
    """The text of an `if <guard>: return <general>` among `before` (no else) whose guard holds while dynamo
    traces (where the tensor it names is there), or None."""
    for stmt in before:
        if not isinstance(stmt, cst.If) or stmt.orelse is not None:
            continue
        returned = returned_value(stmt.body)
        if returned is not None and same_code(returned[0], general) and _holds_while_compiling(stmt.test, guards, ctx):
            return guard_text(stmt.test)
    return None


def _inline_guard(test: cst.BaseExpression, guards: Guards, ctx: RuleContext) -> str | None:
    """The text of a `not <guard>` among the conjuncts of the shortcut's own test (`if not (is_exporting() or
    is_tracing(mask)) and mask.all(): return True`): dynamo never takes the shortcut there."""
    for conjunct in _operands(test, cst.And):
        if isinstance(conjunct, cst.UnaryOperation) and isinstance(conjunct.operator, cst.Not) and \
                _holds_while_compiling(conjunct.expression, guards, ctx):
            return guard_text(conjunct.expression)
    return None


def _holds_while_compiling(test: cst.BaseExpression, guards: Guards, ctx: RuleContext) -> bool:
    """Is one of the alternatives of `test` (its `or`) true under dynamo, or true there once the tensor it
    names is there: a tracing predicate, alone or beside `x is not None` / `isinstance(x, ...)` tests
    (`is_exporting() or (mask is not None and is_tracing(mask))`)?"""
    for alternative in _operands(test, cst.Or):
        conjuncts = _operands(alternative, cst.And)
        decided = [guards.value(ctx.module, c) for c in conjuncts]
        if True in decided and all(d is True or _presence_test(c) for c, d in zip(conjuncts, decided)):
            return True
    return False


def _operands(expr: cst.BaseExpression, operator: type[cst.And] | type[cst.Or]) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, operator):
        return _operands(expr.left, operator) + _operands(expr.right, operator)
    return [expr]


def _presence_test(expr: cst.BaseExpression) -> bool:
    """`x is not None`, `isinstance(x, T)`: does a value exist (and have a type), not what it holds."""
    if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
        comparison = expr.comparisons[0]
        return isinstance(comparison.operator, cst.IsNot) and isinstance(comparison.comparator, cst.Name) and \
            comparison.comparator.value == "None"
    return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "isinstance"


def _constant(expr: cst.BaseExpression | None) -> bool:
    if isinstance(expr, cst.Name):
        return expr.value in _CONSTANTS
    return isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString))


class _NotOnlyATest(Exception):
    """The condition skips a call of Python-valued code once its tensor test is false: no fix."""


def _static(test: cst.BaseExpression, ctx: RuleContext, dropped: list[cst.BaseExpression]
            ) -> cst.BaseExpression | None:
    """`test` with every operand of its and/or that tests a tensor value made false (None: always false).
    `and`/`or` are monotone in their operands, so the new test holds only where the old one held."""
    if isinstance(test, cst.BooleanOperation):
        left = _static(test.left, ctx, dropped)
        right = _static(test.right, ctx, dropped)
        if isinstance(test.operator, cst.And):
            if left is None or right is None:
                skipped = test.left if right is None else test.right
                if _has_call(skipped) and (left is not None or right is not None):
                    raise _NotOnlyATest
                return None
            return _with_parens(test.with_changes(left=left, right=right), test)
        if left is None or right is None:
            other = right if left is None else left
            return None if other is None else _with_parens(other, test)
        return _with_parens(test.with_changes(left=left, right=right), test)
    if ctx.truth_is_data_dependent(test):
        dropped.append(test)
        return None
    return test


def _with_parens(expr: cst.BaseExpression, outer: cst.BaseExpression) -> cst.BaseExpression:
    """`expr` in the place of `outer`, keeping the parentheses that grouped `outer` (`(a or b) and c`)."""
    if expr is outer or not outer.lpar or expr.lpar:
        return expr
    return expr.with_changes(lpar=outer.lpar, rpar=outer.rpar)


def _has_call(expr: cst.BaseExpression) -> bool:
    return any(type(node) is cst.Call for node in iter_nodes(expr))
