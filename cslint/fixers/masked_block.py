"""Rewrite an `if` on a tensor that guards a block of updates into a masked update.

    if group_lr > 0.0:                         taken = torch.as_tensor(group_lr > 0.0)
        num += dlr * torch.dot(g, s)           num_taken = num + dlr * torch.dot(g, s)
        s.data.add_(grad, alpha=dlr)    ->     s_taken = s.data.add(grad, alpha=dlr)
        sk += (s * s).sum()                    sk_taken = sk + (s_taken * s_taken).sum()
                                               num = torch.where(taken, num_taken, num)
                                               s.copy_(torch.where(taken, s_taken, s))
                                               sk = torch.where(taken, sk_taken, sk)

The block runs on every step; its results are kept only where the condition holds. Each name bound
before the `if` and each tensor updated in place gets its new value under a fresh name, later
statements of the block read those, and one `torch.where` per name selects at the end (an in-place
update stays in place through `copy_`, so optimizer state keeps its identity). Names the block binds
for the first time are computed unconditionally under their own names. Always unsafe: both outcomes are
computed, augmented assignments become out-of-place, and the selected values are tensors.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.fixers.host import assignments
from cslint.fixers.where import _call_reason, _condition, _inplace_chain, is_boolean_condition
from cslint.rules.base import Fix, RuleContext

AUGMENTED = {cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
             cst.DivideAssign: cst.Divide}


class _Reads(cst.CSTTransformer):
    """Reads of renamed names (`s`, and `s` in `s.data`) replaced by their fresh names."""

    def __init__(self, renamed: dict[str, str]) -> None:
        self.renamed = renamed

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.renamed[original.value]) if original.value in self.renamed else updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)  # `x.s` is an attribute, not the name s

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _receiver(stmt: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    """`s.data.add_(g)` / `buf.mul_(b).add_(g)`: (the updated name, its value computed out of place)."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Expr):
        return None
    call = stmt.body[0].value
    inner = call
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
        inner = inner.func.value
    data = isinstance(inner, cst.Attribute) and inner.attr.value == "data" and isinstance(inner.value, cst.Name)
    if data:  # `s.data.add_(...)` updates `s`: rebuild the chain on a plain name, then put `.data` back
        assert isinstance(inner, cst.Attribute)
        plain = cst.SimpleStatementLine([cst.Expr(_replace_base(call, inner, cst.Name("__receiver__")))])
        found = _inplace_chain(plain)
        if found is None:
            return None
        return inner.value.value, _replace_base(found[1], cst.Name("__receiver__"), inner)  # type: ignore[union-attr]
    return _inplace_chain(stmt)


def _replace_base(expr: cst.BaseExpression, old: cst.CSTNode, new: cst.BaseExpression) -> cst.BaseExpression:
    class Swap(cst.CSTTransformer):
        def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode):  # type: ignore[no-untyped-def, override]
            if original is old or (isinstance(old, cst.Name) and isinstance(original, cst.Name)
                                   and original.value == old.value):
                return new
            return updated

    return expr.visit(Swap())  # type: ignore[return-value]


def _fresh(base: str, taken: set[str]) -> str:
    candidate, n = base, 2
    while candidate in taken:
        candidate, n = f"{base}{n}", n + 1
    taken.add(candidate)
    return candidate


def _side_effect(expr: cst.CSTNode, ctx: RuleContext) -> str | None:
    """A call that must not run when the condition is false: unknown code, random numbers."""
    found: list[str] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and ctx.is_tensor(func.value):
                if func.attr.value in api.RANDOM_METHODS:
                    found.append(f".{func.attr.value}() draws random numbers")
                return  # a tensor method: in-place updates are what the rewrite selects
            reason = _call_reason(node, ctx)
            if reason is not None and ("side effects" in reason or "random" in reason):
                found.append(reason)

    expr.visit(Calls())
    return found[0] if found else None


def masked_block(node: cst.If, ctx: RuleContext) -> Fix | None:
    """The fix for `if <boolean tensor>:` (no else) guarding assignments and in-place updates, or None."""
    if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock) or \
            not is_boolean_condition(node.test, ctx):
        return None
    bound = ctx.bound_before(node)
    names = set(assignments(ctx))
    renamed: dict[str, str] = {}
    selected: list[tuple[str, bool]] = []  # (name, updated in place)
    created: set[str] = set()  # names the block binds for the first time
    lines: list[cst.BaseStatement] = []
    for stmt in node.body.body:
        if _side_effect(stmt, ctx):
            return None
        reads = _Reads(renamed)
        inplace = _receiver(stmt)
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if inplace is not None:
            target, value = inplace[0], inplace[1].visit(reads)
            is_inplace = True
        elif isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                isinstance(small.targets[0].target, cst.Name):
            target, value, is_inplace = small.targets[0].target.value, small.value.visit(reads), False
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and \
                type(small.operator) in AUGMENTED:
            target = small.target.value
            operator = AUGMENTED[type(small.operator)](whitespace_before=cst.SimpleWhitespace(" "),
                                                        whitespace_after=cst.SimpleWhitespace(" "))
            right = small.value.visit(reads)
            if isinstance(right, cst.BinaryOperation) and not right.lpar:
                right = right.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            value, is_inplace = cst.BinaryOperation(cst.Name(renamed.get(target, target)), operator, right), False
        elif isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, cst.Pass) for s in stmt.body):
            continue
        else:
            return None
        if target not in bound and target not in renamed:
            if target in created and isinstance(small, cst.AugAssign):  # a value the block made itself
                lines.append(cst.SimpleStatementLine([small.with_changes(value=small.value.visit(reads))]))
                continue
            if is_inplace or isinstance(small, cst.AugAssign):
                return None  # updates a value the block does not own and that did not exist before it
            created.add(target)
            lines.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(target))], value)]))
            continue
        if target not in renamed:
            renamed[target] = _fresh(f"{target}_taken", names)
            selected.append((target, is_inplace))
        lines.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(renamed[target]))], value)]))
    if not selected:
        return None
    torch, imports = ctx.torch_name()
    condition = _condition(node.test, ctx, torch)
    if len(selected) > 1:
        flag = _fresh("taken", names)
        lines.insert(0, cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(flag))], condition)]))
        condition = cst.Name(flag)
    for target, is_inplace in selected:
        where = cst.Call(cst.Attribute(cst.Name(torch), cst.Name("where")),
                         [cst.Arg(condition), cst.Arg(cst.Name(renamed[target])), cst.Arg(cst.Name(target))])
        if is_inplace:
            line = cst.Expr(cst.Call(cst.Attribute(cst.Name(target), cst.Name("copy_")), [cst.Arg(where)]))
        else:
            line = cst.Assign([cst.AssignTarget(cst.Name(target))], where)  # type: ignore[assignment]
        lines.append(cst.SimpleStatementLine([line]))
    lines[0] = lines[0].with_changes(leading_lines=node.leading_lines)
    updated = ", ".join(t for t, _ in selected)
    return Fix("unsafe", f"Compute the block on every step and keep its results where the condition holds "
                         f"({torch}.where over {updated}); unsafe: both outcomes are computed, in-place and "
                         "augmented updates become out-of-place values selected afterwards, and the selected "
                         "values are tensors", [(node, cst.FlattenSentinel(lines))], imports)
