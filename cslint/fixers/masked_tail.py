"""Rewrite an early return on a tensor into a step whose remaining updates are masked.

    if sk_l1 == 0:                        proceed = torch.logical_not(sk_l1 == 0)
        return loss                       for group in self.param_groups:
    for group in self.param_groups:  ->       group["d"] = torch.where(proceed, d, group["d"])
        group["d"] = d                        for p in group["params"]:
        for p in group["params"]:                 p.data.copy_(torch.where(proceed, p.data.add(u), p.data))
            p.data.add_(u)                return loss
    return loss

The rest of the function runs on every step; whatever it leaves behind (in-place tensor updates, entries
and attributes it stores) keeps its old value where the condition holds, so a step the original ended
early changes nothing. Names the rest binds are local and die with the call, so they stay as they are.
The early return must be a statement of the function body itself, and the function must end by
returning the same value (or nothing). Loops and `if`s on Python values stay, their bodies masked the
same way; an `if` on a tensor in the rest is left to its own fix first. Always unsafe: the rest is
computed on every step, stored Python numbers (a counter in a param group) become tensors, and log
lines in the rest are written also on steps the original ended early.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from cslint.fixers.assignments import assignments
from cslint.analysis.syntax import string_key
from cslint.fixers.masked_block import _fresh, _read_entries, _read_root, _side_effect
from cslint.fixers.where import _condition, is_boolean_condition
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix

AUGMENTED: dict[type[cst.BaseAugOp], type[cst.Add | cst.Subtract | cst.Multiply | cst.Divide]] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide}
LOGGING = ("logging.", "print", "warnings.warn")


def same_code(a: cst.CSTNode | None, b: cst.CSTNode | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    code = cst.Module([]).code_for_node
    return " ".join(code(a).split()) == " ".join(code(b).split())


def _maskable(test: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A boolean tensor, or `and`/`or`/`not` of boolean tensors and Python values (all sides are evaluated)."""
    if isinstance(test, cst.BooleanOperation):
        return all(_maskable(x, ctx) or not ctx.truth_is_data_dependent(x) for x in (test.left, test.right))
    return is_boolean_condition(test, ctx)


def _out_of_place(call: cst.BaseExpression) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """`p.data.mul_(b).add_(g)` -> (`p.data`, `p.data.mul(b).add(g)`); `z.data.copy_(x)` -> (`z.data`, `x`)."""
    calls: list[tuple[cst.Call, str]] = []  # and the method each calls
    node = call
    while isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
        calls.append((node, node.func.attr.value))
        node = node.func.value
    if not calls or not isinstance(node, (cst.Name, cst.Attribute, cst.Subscript)):
        return None
    value: cst.BaseExpression = node
    for each, method in reversed(calls):
        if not method.endswith("_") or method.startswith("_") or method in ("requires_grad_", "share_memory_"):
            return None
        if method == "copy_":
            if len(each.args) != 1 or each.args[0].keyword is not None:
                return None
            value = each.args[0].value
        else:
            value = each.with_changes(func=cst.Attribute(value=value, attr=cst.Name(method[:-1])))
    return node, value


class _Tail:
    def __init__(self, ctx: RuleContext, torch: str, proceed: str) -> None:
        self.ctx = ctx
        self.torch = torch
        self.proceed = proceed
        self.logs = False
        self.stores: list[str] = []
        self.fresh: set[str] = set()  # local names bound to a tensor the rest made (`buf = torch.zeros(2)`)
        self.read_entries = _read_entries(ctx)

    def _where(self, new: cst.BaseExpression, old: cst.BaseExpression) -> cst.Call:
        return cst.Call(cst.Attribute(cst.Name(self.torch), cst.Name("where")),
                        [cst.Arg(cst.Name(self.proceed)), cst.Arg(new), cst.Arg(old)])

    def block(self, statements: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement] | None:
        lines: list[cst.BaseStatement] = []
        for stmt in statements:
            new = self.statement(stmt)
            if new is None:
                return None
            lines.append(new)
        return lines

    def statement(self, stmt: cst.BaseStatement) -> cst.BaseStatement | None:
        if isinstance(stmt, cst.If):
            return self._if(stmt)
        if isinstance(stmt, cst.For):
            if stmt.orelse is not None or self.ctx.is_data_dependent(stmt.iter) or \
                    not isinstance(stmt.body, cst.IndentedBlock):
                return None
            body = self.block(stmt.body.body)
            return None if body is None else stmt.with_changes(body=stmt.body.with_changes(body=body))
        if not isinstance(stmt, cst.SimpleStatementLine):
            return None
        smalls = [self._small(s) for s in stmt.body]
        if any(s is None for s in smalls):
            return None
        return stmt.with_changes(body=smalls)

    def _if(self, node: cst.If) -> cst.If | None:
        if self.ctx.truth_is_data_dependent(node.test) or not isinstance(node.body, cst.IndentedBlock):
            return None  # a tensor `if` gets its own fix first
        body = self.block(node.body.body)
        orelse: cst.If | cst.Else | None = None
        if isinstance(node.orelse, cst.If):
            orelse = self._if(node.orelse)
            if orelse is None:
                return None
        elif isinstance(node.orelse, cst.Else):
            if not isinstance(node.orelse.body, cst.IndentedBlock):
                return None
            else_body = self.block(node.orelse.body.body)
            if else_body is None:
                return None
            orelse = node.orelse.with_changes(body=node.orelse.body.with_changes(body=else_body))
        if body is None:
            return None
        return node.with_changes(body=node.body.with_changes(body=body), orelse=orelse)

    def _small(self, small: cst.BaseSmallStatement) -> cst.BaseSmallStatement | None:
        if isinstance(small, (cst.Pass, cst.Continue, cst.Break)):
            return small
        if isinstance(small, cst.Assign):
            if all(isinstance(t.target, (cst.Name, cst.Tuple, cst.List)) for t in small.targets):
                if _updates_in_place(small.value):
                    return None
                for t in small.targets:  # a local name: it dies with the call
                    names = {n.value for n in _names(t.target)}
                    fresh = isinstance(t.target, cst.Name) and _read_root(small.value) is None
                    self.fresh = self.fresh | names if fresh else self.fresh - names
                return small
            if len(small.targets) != 1 or not isinstance(small.targets[0].target, (cst.Subscript, cst.Attribute)):
                return None
            target = small.targets[0].target
            if isinstance(target.value, cst.Name) and target.value.value in self.fresh:
                return small  # `buf[0] = x` into a tensor the rest made
            return self._store(target, small.value)
        if isinstance(small, cst.AugAssign):
            if isinstance(small.target, cst.Name):  # `x += y` on a tensor would update it in place
                return None if self.ctx.is_tensor(small.target) or _updates_in_place(small.value) else small
            if type(small.operator) not in AUGMENTED or not isinstance(small.target, (cst.Subscript, cst.Attribute)):
                return None
            operator = AUGMENTED[type(small.operator)](whitespace_before=cst.SimpleWhitespace(" "),
                                                        whitespace_after=cst.SimpleWhitespace(" "))
            right = small.value
            if isinstance(right, cst.BinaryOperation) and not right.lpar:
                right = right.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            return self._store(small.target, cst.BinaryOperation(small.target, operator, right))
        if isinstance(small, cst.Expr):
            if isinstance(small.value, (cst.SimpleString, cst.ConcatenatedString, cst.Ellipsis)):
                return small
            if not isinstance(small.value, cst.Call):
                return None
            qualified = self.ctx.resolve(small.value.func) or ""
            func = small.value.func
            if qualified.startswith(LOGGING) or (isinstance(func, cst.Name) and func.value == "print"):
                self.logs = True
                return small
            if qualified.startswith("torch.") and not _side_effect(small, self.ctx):
                written = [a.value for a in small.value.args if self.ctx.is_tensor(a.value)]
                if written and all(isinstance(w, cst.Name) and w.value in self.fresh for w in written):
                    return small  # `dist.all_reduce(buf)` on a tensor the rest made
            found = _out_of_place(small.value)
            if found is None or _side_effect(small, self.ctx):
                return None
            receiver, value = found
            self.stores.append(self.ctx.code(receiver, 24))
            return small.with_changes(value=cst.Call(cst.Attribute(receiver, cst.Name("copy_")),
                                                     [cst.Arg(self._where(value, receiver))]))
        return None

    def _store(self, target: cst.Subscript | cst.Attribute, value: cst.BaseExpression) -> cst.BaseSmallStatement:
        """`group["d"] = d` -> `group["d"] = torch.where(proceed, d, group["d"])` (an assignment, not `copy_`:
        the entry may still hold a Python number, `group["d"]` does until the first step stores a tensor).
        An entry the function never reads may not exist before the first step stores it:
        `group.get("d_denom", value)` stands for its old value then."""
        self.stores.append(self.ctx.code(target, 24))
        old: cst.BaseExpression = target
        key = string_key(target)
        index = target.slice[0].slice if key is not None and isinstance(target, cst.Subscript) else None
        if isinstance(index, cst.Index) and (self.ctx.code(target.value, 200), key) not in self.read_entries:
            old = cst.Call(cst.Attribute(target.value, cst.Name("get")), [cst.Arg(index.value), cst.Arg(value)])
        return cst.Assign([cst.AssignTarget(target)], self._where(value, old))


def early_return(node: cst.If, ctx: RuleContext) -> Fix | None:
    """The fix for `if <boolean tensor>: return X` in a function's own body, or None."""
    function = ctx.traced.func.node
    body = function.body.body if isinstance(function.body, cst.IndentedBlock) else ()
    if node.orelse is not None or not any(stmt is node for stmt in body) or not _maskable(node.test, ctx):
        return None
    returned = returned_value(node.body)
    if returned is None:
        return None
    tail = list(body[[id(s) for s in body].index(id(node)) + 1:])
    final = returned_value(cst.IndentedBlock([tail[-1]])) if tail else None
    if final is not None:
        if not same_code(final[0], returned[0]) or _rebinds(tail[:-1], final[0]):
            return None
        tail = tail[:-1]
    elif returned[0] is not None:
        return None  # the function falls off its end (returns None) where it returned a value early
    torch, imports = ctx.torch_name()
    proceed = _fresh("proceed", set(assignments(ctx)))
    masked = _Tail(ctx, torch, proceed)
    lines = masked.block(tail)
    if lines is None or not masked.stores:
        return None
    keep = cst.Call(cst.Attribute(cst.Name(torch), cst.Name("logical_not")),
                    [cst.Arg(_condition(node.test, ctx, torch))])
    first = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(proceed))], keep)],
                                    leading_lines=node.leading_lines)
    replacements: list[tuple[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.CSTNode] | cst.RemovalSentinel]] = \
        [(node, first)]
    replacements.extend((old, new) for old, new in zip(tail, lines) if not new.deep_equals(old))
    stored = ", ".join(dict.fromkeys(masked.stores))
    message = (f"Run the rest of the step every time and keep what it stores only where the condition is false "
               f"({torch}.where over {stored}); unsafe: the rest is computed on every step and the values it "
               "stores become tensors")
    if masked.logs:
        message += ", and its log lines are written also on the steps the original ended early"
    return Fix("unsafe", message, replacements, imports)


def _updates_in_place(expr: cst.BaseExpression) -> bool:
    """`buf.add_(1)` inside an expression: an in-place update of a value that may exist outside the step
    (`x.sqrt().add_(eps)` updates a temporary and is fine)."""
    found = False

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            func = node.func
            if isinstance(func, cst.Attribute) and func.attr.value.endswith("_") and \
                    not func.attr.value.startswith("_") and \
                    isinstance(func.value, (cst.Name, cst.Attribute, cst.Subscript)):
                found = True

    expr.visit(Calls())
    return found


def returned_value(suite: cst.BaseSuite) -> tuple[cst.BaseExpression | None] | None:
    """(the value) of a suite that is only `return value` / `return`, else None."""
    statements = suite.body if isinstance(suite, cst.IndentedBlock) else ()
    if len(statements) != 1 or not isinstance(statements[0], cst.SimpleStatementLine):
        return None
    smalls = statements[0].body
    if len(smalls) != 1 or not isinstance(smalls[0], cst.Return):
        return None
    return (smalls[0].value,)


def _rebinds(statements: Sequence[cst.BaseStatement], value: cst.BaseExpression | None) -> bool:
    """Does any statement bind a name the returned value reads (then the two returns differ)?"""
    if value is None:
        return False
    read = {n.value for n in _names(value)}
    bound: set[str] = set()

    class Binder(cst.CSTVisitor):
        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            bound.update(n.value for n in _names(node.target))

        def visit_AugAssign(self, node: cst.AugAssign) -> None:
            bound.update(n.value for n in _names(node.target))

        def visit_For(self, node: cst.For) -> None:
            bound.update(n.value for n in _names(node.target))

    for stmt in statements:
        stmt.visit(Binder())
    return bool(read & bound)


def _names(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.append(name)

    node.visit(Names())
    return found
