"""Layer-drop: `if not to_drop: hidden = layer(hidden, ...)` -> run the layer and select its result.

LayerDrop (transformers' BART, wav2vec2, ...) draws `torch.rand([])` per layer and skips the layer when it
is below the drop rate. The flag that says so is a boolean tensor, or `False` outside training:

    to_drop = False
    if self.training and self.layerdrop > 0.0:
        to_drop = torch.where(torch.rand([]) < self.layerdrop, True, to_drop)   # (the where fix's output)
    if not to_drop:                          # or `if not skip_the_layer or synced_gpus:`
        hidden = layer(hidden, mask)

The branch on the flag is the break. The rewrite runs the call every step and selects:
`hidden = torch.where(torch.logical_not(torch.as_tensor(to_drop)), layer(hidden, mask), hidden)`. The
condition is built from the flags with `torch.logical_not/and/or`, each operand made a tensor when it may be
a Python bool; a Python-valued part (`synced_gpus`) is kept as a tensor of its value.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.kinds import Tag
from cslint.analysis.walk import iter_nodes
from cslint.fixers.assignments import assignments
from cslint.fixers.operands import tensor_operand
from cslint.fixers.where import changes_shape, is_boolean_condition
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix

UNSAFE = ("the call runs every step, also when it was skipped (its compute, and its side effects such as a cache "
          "it updates), a skipped call's parameters get "
          "zero gradients instead of none (an optimizer with momentum or weight decay still moves them), and "
          "random numbers it draws (dropout) shift the random stream")
_BOOLEAN_LITERALS = ("True", "False")


def run_and_select(node: cst.If, ctx: RuleContext) -> Fix | None:
    """`if <flags>: name = <call>` (no else), `name` a tensor bound before:
    `name = torch.where(<flags>, <call>, name)`."""
    if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock) or len(node.body.body) != 1:
        return None
    stmt = node.body.body[0]
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, cst.Name):
        return None
    name = assign.targets[0].target.value
    before = ctx.bound_before(node).get(name)
    if before is None or before.tag is not Tag.TENSOR or ctx.kind(assign.value).tag is not Tag.TENSOR:
        return None  # torch.where selects between tensors: a tuple or a Python value has no such form
    if changes_shape(assign.value):
        return None
    if not _flag_condition(node.test, ctx):
        return None
    torch, imports = ctx.torch_name()
    where = cst.Call(cst.Attribute(cst.Name(torch), cst.Name("where")),
                     [cst.Arg(_on_device(_tensor_condition(node.test, ctx, torch), name, torch)), cst.Arg(assign.value),
                      cst.Arg(cst.Name(name))])
    replacement = stmt.with_changes(body=[assign.with_changes(value=where)],
                                    leading_lines=[*node.leading_lines, *stmt.leading_lines])
    return Fix("unsafe", f"Run it every step and select `{name}` with {torch}.where; unsafe: {UNSAFE}",
               [(node, replacement)], imports)


def _flag_condition(test: cst.BaseExpression, ctx: RuleContext) -> bool:
    """not/and/or over boolean tensor conditions, boolean flags and Python values none of which has side
    effects, so evaluating every operand (as logical_and/or do) is what Python's short circuit could do."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _flag_condition(test.expression, ctx)
    if isinstance(test, cst.BooleanOperation):
        return _flag_condition(test.left, ctx) and _flag_condition(test.right, ctx)
    if isinstance(test, cst.Name):
        return not ctx.is_data_dependent(test) or _boolean_flag(test.value, ctx, frozenset())
    if isinstance(test, cst.Attribute):
        return not ctx.is_data_dependent(test)  # `self.training`; a tensor attribute's truth is another shape
    return is_boolean_condition(test, ctx) and not any(isinstance(n, cst.Call) for n in iter_nodes(test))


def _boolean_flag(name: str, ctx: RuleContext, seen: frozenset[str]) -> bool:
    """Every binding of the local `name` is a bool: `True`/`False`, a comparison, a boolean tensor condition,
    `torch.where(c, <flag>, <flag>)` or another such flag."""
    if name in seen:  # `to_drop = torch.where(c, True, to_drop)`: its other bindings decide
        return True
    values = assignments(ctx).get(name, [])
    return bool(values) and all(v is not None and _boolean_value(v, ctx, seen | {name}) for v in values)


def _boolean_value(value: cst.BaseExpression, ctx: RuleContext, seen: frozenset[str]) -> bool:
    if isinstance(value, cst.Name):
        return value.value in _BOOLEAN_LITERALS or _boolean_flag(value.value, ctx, seen)
    if isinstance(value, cst.Comparison):
        return not any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in value.comparisons)
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Not):
        return True
    if isinstance(value, cst.Call) and ctx.resolve(value.func) == "torch.where" and len(value.args) == 3:
        return all(_boolean_value(a.value, ctx, seen) for a in value.args[1:])
    return is_boolean_condition(value, ctx)


def _tensor_condition(test: cst.BaseExpression, ctx: RuleContext, torch: str) -> cst.BaseExpression:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _call(torch, "logical_not", _tensor_condition(test.expression, ctx, torch))
    if isinstance(test, cst.BooleanOperation):
        name = "logical_and" if isinstance(test.operator, cst.And) else "logical_or"
        return _call(torch, name, _tensor_condition(test.left, ctx, torch), _tensor_condition(test.right, ctx, torch))
    return tensor_operand(test.with_changes(lpar=[], rpar=[]) if test.lpar else test, ctx, torch)[0]


def _on_device(condition: cst.BaseExpression, name: str, torch: str) -> cst.Call:
    """`torch.as_tensor(<condition>, device=<name>.device)`: the flag is drawn on the host (`torch.rand([])`
    has no device), and a host condition of `torch.where` gives a host gradient for a device tensor, which a
    lazy-tensor backend rejects."""
    device = cst.Arg(cst.Attribute(cst.Name(name), cst.Name("device")), keyword=cst.Name("device"),
                     equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
    if isinstance(condition, cst.Call) and len(condition.args) == 1 and isinstance(condition.func, cst.Attribute) \
            and condition.func.attr.value == "as_tensor":
        return condition.with_changes(args=[condition.args[0].with_changes(comma=cst.MaybeSentinel.DEFAULT), device])
    return _call(torch, "as_tensor", condition).with_changes(args=[cst.Arg(condition), device])


def _call(torch: str, name: str, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(cst.Name(torch), cst.Name(name)), [cst.Arg(a) for a in args])


def skip_rest_of_loop(node: cst.If, ctx: RuleContext) -> Fix | None:
    """BART's decoder: `if dropout_probability < self.layerdrop: continue` (possibly inside static `if`s),
    the rest of the loop body one `hidden = layer(hidden, ...)`. The condition is kept in a flag and the
    assignment selects: `hidden = torch.where(skip, hidden, layer(hidden, ...))`."""
    if node.orelse is not None or not _only_continue(node.body):
        return None
    found = _loop_position(node, ctx)
    if found is None:
        return None
    loop, index = found
    body = loop.body.body
    rest = body[index + 1:]
    if len(rest) != 1 or not isinstance(rest[0], cst.SimpleStatementLine) or len(rest[0].body) != 1:
        return None
    tail, assign = rest[0], rest[0].body[0]
    if not isinstance(assign, cst.Assign) or len(assign.targets) != 1 or \
            not isinstance(assign.targets[0].target, cst.Name):
        return None
    name = assign.targets[0].target.value
    before = ctx.bound_before(node).get(name)
    if before is None or before.tag is not Tag.TENSOR or ctx.kind(assign.value).tag is not Tag.TENSOR:
        return None
    if not (_flag_condition(node.test, ctx) or is_boolean_condition(node.test, ctx)):
        return None
    flag = _free_name("skip_layer", ctx)
    torch, imports = ctx.torch_name()
    flag_line = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(flag))],
                                                    _tensor_condition(node.test, ctx, torch))],
                                        leading_lines=node.leading_lines)
    where = _call(torch, "where", _on_device(cst.Name(flag), name, torch), cst.Name(name), assign.value)
    new_tail = tail.with_changes(body=[assign.with_changes(value=where)])
    replacements: list[tuple[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.CSTNode]]] = [(tail, new_tail)]
    if body[index] is node:
        replacements.append((node, flag_line))
    else:  # the flag is False when the enclosing `if`s are not taken
        outer = body[index]
        if not isinstance(outer, cst.If):
            return None
        start = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(flag))], cst.Name("False"))],
                                        leading_lines=outer.leading_lines)
        rewritten = outer.with_changes(leading_lines=[]).deep_replace(node, flag_line)
        replacements.append((outer, cst.FlattenSentinel([start, rewritten])))
    return Fix("unsafe", f"Keep the condition in `{flag}` and select `{name}` with {torch}.where instead of "
                         f"`continue`; unsafe: {UNSAFE}", replacements, imports)  # type: ignore[arg-type]


def _only_continue(suite: cst.BaseSuite) -> bool:
    lines = suite.body if isinstance(suite, cst.IndentedBlock) else [suite]
    return len(lines) == 1 and isinstance(lines[0], (cst.SimpleStatementLine, cst.SimpleStatementSuite)) and \
        len(lines[0].body) == 1 and isinstance(lines[0].body[0], cst.Continue)


def _loop_position(node: cst.If, ctx: RuleContext) -> tuple[cst.For, int] | None:
    """The `for` loop whose body holds `node`, directly or as the last statement of `if`s without `else`
    (so nothing after it is skipped but the rest of the loop body), and the index of that statement."""
    for loop in ctx.walk():
        if type(loop) is not cst.For or loop.orelse is not None or \
                not isinstance(loop.body, cst.IndentedBlock):
            continue
        for index, stmt in enumerate(loop.body.body):
            if _ends_with(stmt, node):
                return loop, index
    return None


def _ends_with(stmt: cst.BaseStatement, node: cst.If) -> bool:
    if stmt is node:
        return True
    if not isinstance(stmt, cst.If) or stmt.orelse is not None or not isinstance(stmt.body, cst.IndentedBlock) \
            or not stmt.body.body:
        return False
    return _ends_with(stmt.body.body[-1], node)


def _free_name(base: str, ctx: RuleContext) -> str:
    taken = set(assignments(ctx)) | {n.value for n in ctx.walk() if type(n) is cst.Name}
    name, i = base, 1
    while name in taken:
        i += 1
        name = f"{base}_{i}"
    return name
