"""Rewrite tensor-valued branches into `torch.where`, which computes both sides and selects.

An if/elif/else (or ternary) qualifies when every branch only assigns names from expressions, and every
condition is a boolean tensor. Names a branch does not assign keep their earlier value (they must be
bound before the `if`). The fix is safe when the branches are side-effect free tensor expressions; it
is unsafe (offered only with --unsafe-fixes) when computing the branch that Python would have skipped
may matter: calls with side effects or random numbers, ops that produce inf/NaN outside their domain
(whose NaN gradients flow through torch.where), or Python numbers that would become tensors.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.analysis.kinds import Tag
from cslint.analysis.walk import iter_nodes
from cslint.fixers.operands import guard_divisions, tensor_operand
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix


PYTHON_DIVISION = ("a division by a value that may be a Python number runs as a float32 tensor division "
                   "(so the branch not taken cannot raise ZeroDivisionError), not in Python's float64")


@dataclass
class Branch:
    test: cst.BaseExpression | None  # None for the final else
    assigns: dict[str, cst.BaseExpression]


# Ops whose result has another shape than their input, by their arguments: `torch.where` cannot select
# between such a result and the value kept when the branch is not taken, and running the branch every step
# runs it where the test says it is invalid (`F.pad(x, (0, n))` with `n < 0` crops).
SHAPE_CHANGING = frozenset({
    "pad", "cat", "concat", "concatenate", "stack", "hstack", "vstack", "view", "reshape", "expand", "repeat",
    "tile", "flatten", "unflatten", "unsqueeze", "squeeze", "narrow", "transpose", "permute", "interpolate",
    "repeat_interleave", "unfold", "index_select", "new_zeros", "new_ones", "new_empty", "new_full",
})


def changes_shape(value: cst.BaseExpression) -> bool:
    """Whether `value` is a call of an op in SHAPE_CHANGING (`F.pad(x, ...)`, `x.view(...)`), whatever
    calls its receiver or arguments are."""
    if type(value) is not cst.Call:
        return False
    func = value.func
    name = func.attr.value if type(func) is cst.Attribute else func.value if type(func) is cst.Name else None
    return name in SHAPE_CHANGING


def _branch_assignments(body: cst.BaseSuite) -> dict[str, cst.BaseExpression] | None:
    """`name = expr` statements of a branch, in order; None if the branch does anything else."""
    if not isinstance(body, cst.IndentedBlock):
        statements = body.body if isinstance(body, cst.SimpleStatementSuite) else ()
        smalls = list(statements)
    else:
        smalls = []
        for stmt in body.body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                return None
            smalls.extend(stmt.body)
    assigns: dict[str, cst.BaseExpression] = {}
    for small in smalls:
        if isinstance(small, cst.Assign) and len(small.targets) == 1:
            target, value = small.targets[0].target, small.value
        elif isinstance(small, cst.AnnAssign) and small.value is not None:
            target, value = small.target, small.value
        elif isinstance(small, cst.Pass):
            continue
        else:
            return None
        if not isinstance(target, cst.Name) or target.value in assigns:
            return None
        if _reads_any(value, assigns):  # `a = ...; b = a + 1` depends on the branch's own order
            return None
        assigns[target.value] = value
    return assigns


def _reads_any(expr: cst.BaseExpression, names: dict[str, cst.BaseExpression]) -> bool:
    if not names:
        return False
    found = False

    class Reader(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            nonlocal found
            if node.value in names:
                found = True

    expr.visit(Reader())
    return found


def _allclose(test: cst.BaseExpression, ctx: RuleContext) -> tuple[cst.BaseExpression, list[cst.Arg]] | None:
    """`a.allclose(b, rtol=...)` / `torch.allclose(a, b, ...)` on a tensor `a`: (`a`, the other arguments).
    It reads a Python bool; `torch.isclose(a, b, ...).all()` is the same test as a boolean tensor."""
    if not isinstance(test, cst.Call) or not isinstance(test.func, cst.Attribute) or \
            test.func.attr.value != "allclose" or any(a.star for a in test.args):
        return None
    if ctx.resolve(test.func) == "torch.allclose" and test.args and test.args[0].keyword is None:
        return test.args[0].value, list(test.args[1:])
    if ctx.is_tensor(test.func.value):
        return test.func.value, list(test.args)
    return None


def is_boolean_condition(test: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A tensor expression whose value is a boolean tensor (so it can be torch.where's condition)."""
    if _allclose(test, ctx) is not None:
        return True
    if not ctx.is_tensor(test):
        return False
    if any(type(n) is cst.NamedExpr for n in iter_nodes(test)):
        return False  # the fixes compute what the test guards first: a name it binds would be read unbound
    if isinstance(test, cst.Comparison):
        return not any(isinstance(c.operator, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for c in test.comparisons)
    if isinstance(test, cst.Call):
        func = test.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        return name in api.BOOLEAN_RESULT_CALLS
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.BitInvert):
        return is_boolean_condition(test.expression, ctx)
    if isinstance(test, cst.BinaryOperation) and isinstance(test.operator, (cst.BitAnd, cst.BitOr, cst.BitXor)):
        return all(is_boolean_condition(x, ctx) or not ctx.is_tensor(x) for x in (test.left, test.right))
    if isinstance(test, cst.BooleanOperation):  # `a == 0 or b == 0`: both sides evaluated, as logical_or does
        return all(is_boolean_condition(x, ctx) for x in (test.left, test.right))
    return False


def unsafe_reason(expr: cst.BaseExpression, ctx: RuleContext) -> str | None:
    """Why evaluating `expr` unconditionally could differ from evaluating it only when selected."""
    reason: str | None = None

    class Checker(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> bool:
            nonlocal reason
            if reason is None:
                reason = _call_reason(node, ctx)
            return reason is None

        def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
            nonlocal reason
            if reason is None and isinstance(node.operator, (cst.Divide, cst.FloorDivide, cst.Modulo, cst.Power)):
                if ctx.is_tensor(node):
                    reason = "it divides or raises to a power, which may give inf/NaN (and NaN gradients) " \
                             "on the side the condition excluded"

        def visit_Lambda(self, node: cst.Lambda) -> bool:
            return False

    expr.visit(Checker())
    return reason


def _call_reason(node: cst.Call, ctx: RuleContext) -> str | None:
    func = node.func
    qualified = ctx.resolve(func)
    if qualified is not None and qualified.startswith(api.TORCH_PREFIXES):
        last = qualified.rsplit(".", 1)[-1]
        if qualified in api.RANDOM_FUNCTIONS or "dropout" in last:
            return f"{qualified} draws random numbers, so computing both sides changes the random stream"
        if last.endswith("_"):
            return f"{qualified} modifies its argument in place"
        if last in api.PARTIAL_FUNCTIONS:
            return f"{qualified} may give inf/NaN (and NaN gradients) on the side the condition excluded"
        return None
    if isinstance(func, cst.Attribute) and ctx.is_tensor(func.value):
        method = func.attr.value
        if method.endswith("_") or method in api.RANDOM_METHODS:
            return f".{method}() modifies a tensor in place or draws random numbers"
        if method in api.PARTIAL_FUNCTIONS:
            return f".{method}() may give inf/NaN (and NaN gradients) on the side the condition excluded"
        return None
    if qualified is not None and qualified.split(".")[0] in ("math",):
        return None
    return "it calls code whose side effects cslint cannot see (a module, helper or library function)"


def _where(torch: str, test: cst.BaseExpression, a: cst.BaseExpression, b: cst.BaseExpression) -> cst.Call:
    return cst.Call(
        func=cst.Attribute(value=cst.Name(torch), attr=cst.Name("where")),
        args=[cst.Arg(test.with_changes(lpar=[], rpar=[]) if _bare_ok(test) else test), cst.Arg(a), cst.Arg(b)],
    )


def _condition(test: cst.BaseExpression, ctx: RuleContext, torch: str) -> cst.BaseExpression:
    """The condition, wrapped in torch.as_tensor unless it certainly is a tensor: run eagerly with a
    Python-number input (`if step % k == 0` with an int step) it is a Python bool, which torch.where
    rejects. `a and b` / `a or b` of two boolean tensors become torch.logical_and / torch.logical_or (Python's
    `and` would call bool() on `a`)."""
    if isinstance(test, cst.BooleanOperation):
        name = "logical_and" if isinstance(test.operator, cst.And) else "logical_or"
        return cst.Call(cst.Attribute(cst.Name(torch), cst.Name(name)),
                        [cst.Arg(_condition(test.left, ctx, torch)), cst.Arg(_condition(test.right, ctx, torch))])
    close = _allclose(test, ctx)
    if close is not None:
        args = [cst.Arg(close[0])] + [a.with_changes(comma=cst.MaybeSentinel.DEFAULT) for a in close[1]]
        isclose = cst.Call(cst.Attribute(cst.Name(torch), cst.Name("isclose")), args)
        return cst.Call(cst.Attribute(isclose, cst.Name("all")), [])
    return tensor_operand(test, ctx, torch)[0]


def _side(value: cst.BaseExpression, ctx: RuleContext, torch: str, guarded: list[bool]) -> cst.BaseExpression:
    """A branch value made safe to compute when its branch is not taken (no Python division by zero)."""
    new, changed = guard_divisions(value, ctx, torch)
    if changed:
        guarded.append(True)
    return new


def _bare_ok(expr: cst.BaseExpression) -> bool:
    # `(m == k).any()` keeps its parentheses; `(t > 0)` as an argument does not need them.
    return isinstance(expr, (cst.Comparison, cst.Call, cst.Name, cst.Attribute))


def _safety(values: list[cst.BaseExpression], ctx: RuleContext) -> str | None:
    for value in values:
        reason = unsafe_reason(value, ctx)
        if reason is not None:
            return reason
    return None


def if_to_where(node: cst.If, ctx: RuleContext) -> Fix | None:
    branches: list[Branch] = []
    current: cst.If | cst.Else | None = node
    while isinstance(current, cst.If):
        if not is_boolean_condition(current.test, ctx):
            return None
        assigns = _branch_assignments(current.body)
        if assigns is None:
            return None
        branches.append(Branch(current.test, assigns))
        current = current.orelse
    final: dict[str, cst.BaseExpression] = {}
    if isinstance(current, cst.Else):
        maybe = _branch_assignments(current.body)
        if maybe is None:
            return None
        final = maybe
    names: list[str] = []
    for assigns in [*(b.assigns for b in branches), final]:
        names.extend(n for n in assigns if n not in names)
    if not names:
        return None
    bound = ctx.bound_before(node)
    torch, imports = ctx.torch_name()
    guarded: list[bool] = []
    new_lines: list[cst.SimpleStatementLine] = []
    values: list[cst.BaseExpression] = []
    python_numbers: list[str] = []
    for name in names:
        before = bound.get(name)
        if name not in final and name not in bound:
            return None  # no value to keep when no branch is taken
        if any(name not in b.assigns for b in branches) and name not in bound:
            return None
        branch_values = [b.assigns.get(name) for b in branches] + [final.get(name)]
        if any(is_none(v) for v in branch_values if v is not None):
            return None  # torch.where selects between tensors: `x = None` in a branch has no such form
        if any(changes_shape(v) for v in branch_values if v is not None):
            return None
        values.extend(v for v in branch_values if v is not None)
        if all(v is None or ctx.kind(v).tag is not Tag.TENSOR for v in branch_values) and \
                (before is None or before.tag is not Tag.TENSOR):
            python_numbers.append(name)
        final_value = final.get(name)
        expr: cst.BaseExpression = _side(final_value, ctx, torch, guarded) if final_value else cst.Name(name)
        for branch in reversed(branches):
            assert branch.test is not None
            value = branch.assigns.get(name)
            expr = _where(torch, _condition(branch.test, ctx, torch),
                          _side(value, ctx, torch, guarded) if value else cst.Name(name), expr)
        new_lines.append(cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))],
                                                                  value=expr)]))
    new_lines[0] = new_lines[0].with_changes(leading_lines=node.leading_lines)
    reason = _safety(values, ctx)
    if reason is None and python_numbers:
        reason = f"{', '.join(python_numbers)} becomes a tensor where it was a Python value"
    if reason is None and guarded:
        reason = PYTHON_DIVISION
    message = f"Compute both branches and select with {torch}.where (assigns {', '.join(names)})"
    if reason:
        message += f"; unsafe: {reason}"
    return Fix("unsafe" if reason else "safe", message, [(node, cst.FlattenSentinel(new_lines))], imports)


def is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def ifexp_to_where(node: cst.IfExp, ctx: RuleContext) -> Fix | None:
    if not is_boolean_condition(node.test, ctx) or is_none(node.body) or is_none(node.orelse):
        return None
    torch, imports = ctx.torch_name()
    guarded: list[bool] = []
    replacement = _where(torch, _condition(node.test, ctx, torch), _side(node.body, ctx, torch, guarded),
                         _side(node.orelse, ctx, torch, guarded))
    replacement = replacement.with_changes(lpar=node.lpar, rpar=node.rpar)
    reason = _safety([node.body, node.orelse], ctx)
    if reason is None and not (ctx.is_tensor(node.body) or ctx.is_tensor(node.orelse)):
        reason = "the result becomes a tensor where it was a Python value"
    if reason is None and guarded:
        reason = PYTHON_DIVISION
    message = f"Compute both sides and select with {torch}.where"
    if reason:
        message += f"; unsafe: {reason}"
    return Fix("unsafe" if reason else "safe", message, [(node, replacement)], imports)


def _inplace_chain(stmt: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    """`buf.mul_(b).add_(g, alpha=a)` -> ("buf", `buf.mul(b).add(g, alpha=a)`): the value the statement
    leaves in `buf`, computed out of place; `buf.copy_(x)` -> x. None for any other statement."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Expr):
        return None
    calls: list[cst.Call] = []
    node = stmt.body[0].value
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        calls.append(node)
        node = node.func.value
    if not isinstance(node, cst.Name) or not calls:
        return None
    value: cst.BaseExpression = node
    for call in reversed(calls):
        func = call.func
        assert isinstance(func, cst.Attribute)
        method = func.attr.value
        if not method.endswith("_") or method.startswith("_") or method in ("requires_grad_", "share_memory_"):
            return None
        if method == "copy_":
            if len(call.args) != 1 or call.args[0].keyword is not None:
                return None
            value = call.args[0].value
        else:
            value = call.with_changes(func=cst.Attribute(value=value, attr=cst.Name(method[:-1])))
    return node.value, value


def inplace_if_to_where(node: cst.If, ctx: RuleContext) -> Fix | None:
    """`if c: buf.copy_(x) else: buf.mul_(b).add_(g)` -> `buf.copy_(torch.where(c, x, buf.mul(b).add(g)))`:
    each branch is one in-place update of the same tensor, so the update keeps the tensor's identity
    (optimizer state, a buffer) and only its value is selected."""
    if not isinstance(node.orelse, cst.Else) or not is_boolean_condition(node.test, ctx):
        return None
    sides = []
    for suite in (node.body, node.orelse.body):
        statements = suite.body if isinstance(suite, cst.IndentedBlock) else ()
        if len(statements) != 1:
            return None
        found = _inplace_chain(statements[0])
        if found is None:
            return None
        sides.append(found)
    (target, a), (other, b) = sides
    if target != other or not _names_tensor(target, node, ctx):
        return None
    torch, imports = ctx.torch_name()
    guarded: list[bool] = []
    where = _where(torch, _condition(node.test, ctx, torch), _side(a, ctx, torch, guarded),
                   _side(b, ctx, torch, guarded))
    replacement = cst.SimpleStatementLine(
        [cst.Expr(cst.Call(func=cst.Attribute(cst.Name(target), cst.Name("copy_")), args=[cst.Arg(where)]))],
        leading_lines=node.leading_lines)
    reason = _safety([a, b], ctx) or "both updates are computed and one is selected"
    return Fix("unsafe", f"Update `{target}` in place with {torch}.where selecting the branch's value; unsafe: "
                         f"{reason}", [(node, replacement)], imports)


def _names_tensor(name: str, node: cst.If, ctx: RuleContext) -> bool:
    kind = ctx.bound_before(node).get(name)
    return kind is not None and kind.tag is Tag.TENSOR
