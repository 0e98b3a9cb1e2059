"""Rewrite a mixture-of-experts loop over the experts that received tokens into a dense dispatch.

The shape (Mixtral, Qwen2-MoE, OLMoE, DeepSeek-V3, ... `*Experts.forward` in Hugging Face transformers):

    expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
    for expert_idx in expert_hit:
        expert_idx = expert_idx[0]
        if expert_idx == self.num_experts:
            continue
        top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
        current = expert(hidden_states[token_idx]) * top_k_weights[token_idx, top_k_pos, None]
        final.index_add_(0, token_idx, current.to(final.dtype))

becomes

    for expert_idx in range(expert_mask.shape[0]):
        if expert_idx == self.num_experts:
            continue
        current = expert(hidden_states) * (top_k_weights * expert_mask[expert_idx].transpose(0, 1)).sum(-1)[:, None]
        final.add_(current.to(final.dtype))

Every expert runs on every token; a token the router did not send to an expert gets the weight 0, so its
row adds exactly 0. The loop count is the mask's static first dimension and the loop variable a Python int,
so nothing is read from the device and no shape depends on the routing. The routing weight of a row is a
sum over the top-k slots in which only the chosen slot is non-zero, so it equals the gathered weight.

Unsafe: the experts compute on all tokens (compute grows by num_experts / top_k), and an expert whose
output is inf or NaN on a token it was not routed gives NaN there (0 * inf), where the original skipped it.
The rewrite is refused unless every use of the token and slot indices is one of the three above.
"""

from __future__ import annotations

import libcst as cst

from cslint.rule_api.context import RuleContext

from cslint.rule_api.findings import Fix

MESSAGE = ("Run every expert on every token and weight each row by its routing mask (dense dispatch: static "
           "shapes, the same values up to float summation order; unsafe: experts compute on all tokens, "
           "num_experts / top_k times the expert FLOPs, and an inf/NaN expert output on an unrouted token "
           "becomes NaN)")


def _text(node: cst.CSTNode) -> str:
    return cst.Module([]).code_for_node(node)


def _name(node: cst.CSTNode | None) -> str | None:
    return node.value if isinstance(node, cst.Name) else None


def _single_assign(stmt: cst.BaseStatement) -> cst.Assign | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign) \
            and len(stmt.body[0].targets) == 1:
        return stmt.body[0]
    return None


def _element_of(value: cst.BaseExpression, loop_var: str) -> bool:
    """`v[0]`, `v.item()`, `int(v.item())`, `int(v)`: the Python index a row of `nonzero()` holds."""
    if isinstance(value, cst.Subscript) and _name(value.value) == loop_var and len(value.slice) == 1:
        index = value.slice[0].slice
        return isinstance(index, cst.Index) and isinstance(index.value, cst.Integer) and index.value.value == "0"
    if isinstance(value, cst.Call) and not value.args and isinstance(value.func, cst.Attribute) \
            and value.func.attr.value == "item":
        return _name(value.func.value) == loop_var
    if isinstance(value, cst.Call) and _name(value.func) == "int" and len(value.args) == 1:
        inner = value.args[0].value
        return _name(inner) == loop_var or _element_of(inner, loop_var)
    return False


def _where_of_expert(stmt: cst.BaseStatement, var: str) -> tuple[str, str, cst.BaseExpression, cst.Subscript] | None:
    """`a, b = torch.where(MASK[var])` (or `MASK[var].squeeze(0)`): names a and b, the expert's mask,
    and the `MASK[var]` subscript."""
    assign = _single_assign(stmt)
    if assign is None or not isinstance(assign.targets[0].target, cst.Tuple):
        return None
    names = [_name(e.value) for e in assign.targets[0].target.elements]
    call = assign.value
    if len(names) != 2 or None in names or not isinstance(call, cst.Call) or len(call.args) != 1:
        return None
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "where"):
        return None
    mask = call.args[0].value
    row = mask
    if isinstance(row, cst.Call) and isinstance(row.func, cst.Attribute) and row.func.attr.value == "squeeze" \
            and len(row.args) == 1 and _text(row.args[0].value) == "0":
        row = row.func.value
    if not (isinstance(row, cst.Subscript) and len(row.slice) == 1 and isinstance(row.slice[0].slice, cst.Index)
            and _name(row.slice[0].slice.value) == var and isinstance(row.value, (cst.Name, cst.Attribute))):
        return None
    return names[0], names[1], mask, row  # type: ignore[return-value]


class _Dense(cst.CSTTransformer):
    """Token gathers become whole-tensor reads, slot-weight gathers become masked sums, index_add_ add_."""

    def __init__(self, first: str, second: str, mask: cst.BaseExpression) -> None:
        self.first, self.second, self.mask = first, second, mask
        self.token, self.slot = second, first  # the caller sets them once it knows which one index_add_ takes
        self.refused = False

    def _is(self, element: cst.SubscriptElement, name: str) -> bool:
        return isinstance(element.slice, cst.Index) and _name(element.slice.value) == name

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        elements = list(updated.slice)
        tokens = [i for i, e in enumerate(elements) if self._is(e, self.token)]
        slots = [i for i, e in enumerate(elements) if self._is(e, self.slot)]
        if not tokens and not slots:
            return updated
        if len(tokens) == 1 and not slots:  # x[token_idx] / x[None, token_idx]: every token
            if len(elements) == 1:
                return updated.value.with_changes(lpar=updated.lpar, rpar=updated.rpar)
            elements[tokens[0]] = cst.SubscriptElement(cst.Slice(lower=None, upper=None))
            return updated.with_changes(slice=elements)
        if tokens == [0] and slots == [1]:  # w[token_idx, slot_idx, ...]: the expert's weight of every token
            order = "" if (self.first, self.second) == (self.token, self.slot) else ".transpose(0, 1)"
            dense = f"({_text(updated.value)} * {_text(self.mask)}{order}).sum(-1)"
            rest = ", ".join(_text(e.slice) for e in elements[2:])
            return cst.parse_expression(f"{dense}[:, {rest}]" if rest else dense)
        self.refused = True
        return updated

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        func = updated.func
        if isinstance(func, cst.Attribute) and func.attr.value == "index_add_" and len(updated.args) == 3 \
                and _text(updated.args[0].value) == "0" and _name(updated.args[1].value) == self.token \
                and updated.args[2].keyword is None:
            return updated.with_changes(func=func.with_changes(attr=cst.Name("add_")),
                                        args=[updated.args[2].with_changes(comma=cst.MaybeSentinel.DEFAULT)])
        return updated


def _uses(node: cst.CSTNode, names: set[str]) -> bool:
    found = False

    class Uses(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            nonlocal found
            found = found or n.value in names

    node.visit(Uses())
    return found


def _hit_statement(ctx: RuleContext, hit: str, mask: cst.BaseExpression) -> cst.SimpleStatementLine | None:
    """The one `hit = ....nonzero(...)` statement before the loop, computed from the routing mask."""
    found: list[cst.SimpleStatementLine] = []
    for node in ctx.walk():
        if isinstance(node, cst.SimpleStatementLine):
            assign = _single_assign(node)
            if assign is not None and _name(assign.targets[0].target) == hit:
                found.append(node)
    if len(found) != 1:
        return None
    value = _single_assign(found[0]).value  # type: ignore[union-attr]
    func = value.func if isinstance(value, cst.Call) else None
    calls_nonzero = (isinstance(func, cst.Attribute) and func.attr.value == "nonzero") or _name(func) == "nonzero"
    mask_name = _text(mask.value if isinstance(mask, cst.Subscript) else mask)
    if not calls_nonzero or mask_name not in _text(value):
        return None
    return found[0]


def _other_uses(ctx: RuleContext, name: str, skip: tuple[cst.CSTNode, ...]) -> bool:
    skipped: set[int] = set()
    for root in skip:
        skipped.update(id(n) for n in ctx.walk(root))
    return any(isinstance(n, cst.Name) and n.value == name and id(n) not in skipped for n in ctx.walk())


def dense_expert_loop(loop: cst.For, ctx: RuleContext) -> Fix | None:
    """The dense-dispatch fix of a `for e in expert_hit:` MoE loop, or None when the loop is another shape."""
    hit, loop_var = _name(loop.iter), _name(loop.target)
    if hit is None or loop_var is None or loop.orelse is not None or not isinstance(loop.body, cst.IndentedBlock):
        return None
    body = list(loop.body.body)
    var = loop_var
    first = _single_assign(body[0]) if body else None
    if first is not None and _name(first.targets[0].target) is not None and _element_of(first.value, loop_var):
        var = _name(first.targets[0].target)  # type: ignore[assignment]
        body = body[1:]
    if _uses(cst.IndentedBlock(body=body), {loop_var}) and var != loop_var:
        return None
    where_at = next((i for i, s in enumerate(body) if _where_of_expert(s, var) is not None), None)
    if where_at is None:
        return None
    a, b, expert_mask, row = _where_of_expert(body[where_at], var)  # type: ignore[misc]
    before, after = body[:where_at], body[where_at + 1:]
    if before and _uses(cst.IndentedBlock(body=before), {a, b}):
        return None
    hit_stmt = _hit_statement(ctx, hit, row)
    if hit_stmt is None or _other_uses(ctx, hit, (hit_stmt, loop.iter)):
        return None
    dense = _dense_body(after, a, b, expert_mask)
    if dense is None:
        return None
    new_loop = loop.with_changes(
        target=cst.Name(var), iter=cst.parse_expression(f"range({_text(row.value)}.shape[0])"),
        body=loop.body.with_changes(body=before + dense))
    return Fix("unsafe", MESSAGE, [(loop, new_loop), (hit_stmt, _removed(ctx, hit_stmt))])


def _dense_body(after: list[cst.BaseStatement], a: str, b: str,
                expert_mask: cst.BaseExpression) -> list[cst.BaseStatement] | None:
    """The statements after the `torch.where` with token and slot gathers made dense; None if the indices
    have another use. Which of `a, b` is the token index: the one passed to `index_add_`."""
    block = cst.IndentedBlock(body=after)
    token = None
    for node in _calls(block):
        if isinstance(node.func, cst.Attribute) and node.func.attr.value == "index_add_" and len(node.args) == 3:
            token = _name(node.args[1].value)
    if token not in (a, b) or _stored_through(block, {a, b}):
        return None
    transformer = _Dense(a, b, expert_mask)
    transformer.token, transformer.slot = token, (b if token == a else a)
    new_block = block.visit(transformer)
    assert isinstance(new_block, cst.IndentedBlock)  # _Dense replaces expressions only
    if transformer.refused or _uses(new_block, {a, b}):
        return None
    return list(new_block.body)


def _stored_through(node: cst.CSTNode, names: set[str]) -> bool:
    """Is a store or delete target indexed by one of `names` (`w[token_idx] = 0`): a write, not a gather."""
    targets: list[cst.CSTNode] = []

    class Targets(cst.CSTVisitor):
        def visit_Assign(self, n: cst.Assign) -> None:
            targets.extend(t.target for t in n.targets)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            targets.append(n.target)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            targets.append(n.target)

        def visit_Del(self, n: cst.Del) -> None:
            targets.append(n.target)

    node.visit(Targets())
    return any(_uses(t, names) for t in targets)


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    calls: list[cst.Call] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            calls.append(n)

    node.visit(Calls())
    return calls


def _removed(ctx: RuleContext, stmt: cst.SimpleStatementLine) -> cst.BaseStatement | cst.RemovalSentinel:
    """Remove the `hit = ...nonzero()` line; a block it was alone in keeps a `pass`."""
    for node in ctx.walk():
        if isinstance(node, cst.IndentedBlock) and any(s is stmt for s in node.body):
            if len(node.body) == 1:
                return stmt.with_changes(body=[cst.Pass()])
            break
    return cst.RemoveFromParent()
