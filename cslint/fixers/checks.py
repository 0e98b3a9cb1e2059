"""Keep a check on a tensor value as a device-side assertion: `if labels.max() >= n: raise ValueError(...)`
and `assert torch.isfinite(h).all(), "..."` become `torch._assert_async(<tensor that holds when the check
passes>, "...")`.

A traced step cannot raise on a value it does not have yet, but a check that rejects bad input must survive
a fix. `torch._assert_async` records the assertion in the graph and raises when the value is computed; under
torch.compile it stays in the graph (`torch._check` rejects a tensor condition, and `torch._check_tensor_all`
turns it into an unbacked scalar and loses the message). The lazy-tensor targets document no device-side
assertion, and PyTorch's lazy-tensor backend has no lowering for it: it runs the op on the host, a sync
the runtime checker reports (WSC104), so there the check gets no fix: it stays where it is, to be moved by
a person to where the data is loaded.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.syntax import string_value
from cslint.fixers.operands import tensor_operand
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix
from cslint.core.targets import get_target

UNSAFE = ("unsafe: the check raises RuntimeError (not the original exception), and on an accelerator when the "
          "value is computed, after the step was launched")


def keep_raising_check(node: cst.If, ctx: RuleContext) -> Fix | None:
    """`if <tensor condition>: raise ...` (no else, nothing but the raise) -> an assertion on the device.
    Leading Python-valued conditions (`labels is not None and labels.max() >= n`) stay as the `if`."""
    if not _has_device_assertions(ctx) or node.orelse is not None or not isinstance(node.body, cst.IndentedBlock):
        return None
    body = node.body.body
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1 or \
            not isinstance(body[0].body[0], cst.Raise):
        return None
    guards, checked = _split(node.test, cst.And, ctx)
    torch, imports = ctx.torch_name()
    failing = _truth(_join(checked, cst.And), ctx, torch)
    if failing is None:
        return None
    message = _raise_message(body[0].body[0], ctx)
    if message is None:
        return None
    holds = _negation(failing, torch)
    replacement = _assertion(node, guards, torch, holds, message)
    return Fix("unsafe", f"Check `{ctx.code(node.test)}` on the device with {torch}._assert_async; {UNSAFE}",
               [(node, replacement)], imports)


def keep_assert(node: cst.Assert, ctx: RuleContext) -> Fix | None:
    """`assert <tensor condition>, "..."` -> an assertion on the device. No fix for a Python-valued
    alternative (`mask is None or mask.any()`): the assertion would evaluate the tensor side on None."""
    if not _has_device_assertions(ctx):
        return None
    torch, imports = ctx.torch_name()
    holds = _truth(node.test, ctx, torch)
    if holds is None:
        return None
    message = _message(node.msg, ctx) if node.msg is not None else _literal(f"assert {ctx.code(node.test, 200)}")
    if message is None:
        return None
    return Fix("unsafe", f"Check `{ctx.code(node.test)}` on the device with {torch}._assert_async; {UNSAFE}",
               [(node, cst.Expr(_call(torch, "_assert_async", holds, message)))], imports)


def _has_device_assertions(ctx: RuleContext) -> bool:
    return get_target(ctx.settings.target).has_device_assertions


def _split(test: cst.BaseExpression, operator: type, ctx: RuleContext
           ) -> tuple[list[cst.BaseExpression], list[cst.BaseExpression]]:
    """The operands of an `and` (`or`) chain: the leading ones on Python values, and the rest."""
    operands: list[cst.BaseExpression] = []

    def flatten(expr: cst.BaseExpression) -> None:
        if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, operator) and not expr.lpar:
            flatten(expr.left)
            flatten(expr.right)
        else:
            operands.append(expr)

    flatten(test)
    leading = 0
    while leading < len(operands) - 1 and not ctx.truth_is_data_dependent(operands[leading]):
        leading += 1
    return operands[:leading], operands[leading:]


def _join(operands: list[cst.BaseExpression], operator: type) -> cst.BaseExpression:
    expr = operands[0]
    for right in operands[1:]:
        expr = cst.BooleanOperation(left=expr, operator=operator(), right=right)
    return expr


def _truth(expr: cst.BaseExpression, ctx: RuleContext, torch: str) -> cst.BaseExpression | None:
    """A tensor that holds where `expr` is true, evaluating no Python bool() of a tensor; None if the
    condition has a part cslint cannot turn into one (a Python value inside a tensor test)."""
    if isinstance(expr, cst.BooleanOperation):
        left, right = _truth(expr.left, ctx, torch), _truth(expr.right, ctx, torch)
        if left is None or right is None:
            return None
        return _call(torch, "logical_and" if isinstance(expr.operator, cst.And) else "logical_or", left, right)
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        inner = _truth(expr.expression, ctx, torch)
        return None if inner is None else _negation(inner, torch)
    if isinstance(expr, cst.Comparison):
        operators = [c.operator for c in expr.comparisons]
        if any(isinstance(o, (cst.Is, cst.IsNot)) for o in operators):
            return None
        if any(isinstance(o, (cst.In, cst.NotIn)) for o in operators):
            return _membership(expr, ctx, torch)
    if not ctx.is_data_dependent(expr):
        return None
    return tensor_operand(expr, ctx, torch)[0]


def _membership(expr: cst.Comparison, ctx: RuleContext, torch: str) -> cst.BaseExpression | None:
    """`x in [a, b]` -> `logical_or(x == a, x == b)` (Python's `in` calls bool() on each `x == e`)."""
    if len(expr.comparisons) != 1:
        return None
    [target] = expr.comparisons
    if not isinstance(target.comparator, (cst.List, cst.Tuple)) or not target.comparator.elements or \
            any(isinstance(e, cst.StarredElement) for e in target.comparator.elements):
        return None
    found: cst.BaseExpression | None = None
    for element in target.comparator.elements:
        equal = cst.Comparison(expr.left.with_changes(lpar=[], rpar=[]) if not isinstance(expr.left, cst.Comparison)
                               else expr.left, [cst.ComparisonTarget(cst.Equal(), element.value)])
        operand = tensor_operand(equal, ctx, torch)[0]
        found = operand if found is None else _call(torch, "logical_or", found, operand)
    assert found is not None
    return found if isinstance(target.operator, cst.In) else _negation(found, torch)


def _raise_message(statement: cst.Raise, ctx: RuleContext) -> cst.BaseExpression | None:
    exc = statement.exc
    if exc is None:
        return None  # a bare `raise` re-raises the exception being handled: not a check
    name = exc.func if isinstance(exc, cst.Call) else exc
    if isinstance(exc, cst.Call) and exc.args and exc.args[0].keyword is None and not exc.args[0].star:
        message = _message(exc.args[0].value, ctx)
        if message is not None and isinstance(name, (cst.Name, cst.Attribute)):
            return message
    return _literal(f"{ctx.code(exc, 200)}")


def _message(expr: cst.BaseExpression, ctx: RuleContext) -> cst.BaseExpression | None:
    """The message as a string the trace knows: a literal, or an f-string of Python values only."""
    if string_value(expr) is not None or isinstance(expr, cst.ConcatenatedString) and \
            not any(isinstance(part, cst.FormattedString) for part in (expr.left, expr.right)):
        return expr
    if isinstance(expr, cst.FormattedString):
        values = [part.expression for part in expr.parts if isinstance(part, cst.FormattedStringExpression)]
        if not any(ctx.is_tensor(v) or ctx.is_data_dependent(v) for v in values):
            return expr
    return None


def _negation(expr: cst.BaseExpression, torch: str) -> cst.BaseExpression:
    """`torch.logical_not(expr)`, or the operand of `expr` when it already is one."""
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "logical_not" \
            and isinstance(expr.func.value, cst.Name) and expr.func.value.value == torch:
        return expr.args[0].value
    return _call(torch, "logical_not", expr)


def _literal(text: str) -> cst.SimpleString:
    return cst.SimpleString(repr(text))


def _call(torch: str, name: str, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(cst.Name(torch), cst.Name(name)),
                    [cst.Arg(a.with_changes(lpar=[], rpar=[]) if isinstance(a, (cst.Comparison, cst.Call)) else a)
                     for a in args])


def _assertion(node: cst.If, guards: list[cst.BaseExpression], torch: str, holds: cst.BaseExpression,
               message: cst.BaseExpression) -> cst.BaseStatement:
    """`torch._assert_async(holds, message)`, under an `if` on the Python-valued guards when there are any."""
    line = cst.SimpleStatementLine([cst.Expr(_call(torch, "_assert_async", holds, message))])
    if not guards:
        return line.with_changes(leading_lines=node.leading_lines)
    return node.with_changes(test=_join(guards, cst.And), body=node.body.with_changes(body=[line]))
