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

from collections.abc import Collection, Sequence

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.fixers.assignments import assignments
from cslint.analysis.syntax import string_key
from cslint.analysis.walk import iter_nodes
from cslint.fixers.where import _call_reason, _condition, _inplace_chain, changes_shape, is_boolean_condition, is_none
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix

AUGMENTED: dict[type[cst.BaseAugOp], type[cst.Add | cst.Subtract | cst.Multiply | cst.Divide]] = {
    cst.AddAssign: cst.Add, cst.SubtractAssign: cst.Subtract, cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide}


class _Reads(cst.CSTTransformer):
    """Reads of renamed names (`s`, and `s` in `s.data`) replaced by their fresh names."""

    def __init__(self, renamed: dict[str, str]) -> None:
        self.renamed = renamed

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return updated.with_changes(value=self.renamed[original.value]) if original.value in self.renamed else updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)  # `x.s` is an attribute, not the name s

    def leave_Subscript(self, original: cst.Subscript, updated: cst.Subscript) -> cst.BaseExpression:
        fresh = self.renamed.get(_entry_code(original)) if _string_entry(original) else None
        return cst.Name(fresh) if fresh is not None else updated  # `state["scale"]` updated in the block

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def expression(self, expr: cst.BaseExpression) -> cst.BaseExpression:
        new = expr.visit(self)
        assert isinstance(new, cst.BaseExpression)  # names and attributes are replaced by their own kind
        return new


def _receiver(stmt: cst.BaseStatement, ctx: RuleContext) -> tuple[str, cst.BaseExpression, bool] | None:
    """`s.data.add_(g)` / `buf.mul_(b).add_(g)`: (the updated name, its value computed out of place, whether
    it is updated through `.data`); `torch.max(m, v, out=m)`: ("m", `torch.max(m, v)`, False)."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Expr):
        return None
    call = stmt.body[0].value
    out = _out_argument(call, ctx)
    if out is not None:
        return out
    inner = call
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
        inner = inner.func.value
    data = inner.value if isinstance(inner, cst.Attribute) and inner.attr.value == "data" else None
    if isinstance(data, cst.Name):  # `s.data.add_(...)` updates `s`: rebuild the chain on a plain name, then `.data`
        plain = cst.SimpleStatementLine([cst.Expr(_replace_base(call, inner, cst.Name("__receiver__")))])
        found = _inplace_chain(plain)
        if found is None:
            return None
        return data.value, _replace_base(found[1], cst.Name("__receiver__"), inner), True
    if _string_entry(inner):  # `state["scale"].mul_(b)`: the entry's code stands for its name
        plain = cst.SimpleStatementLine([cst.Expr(_replace_base(call, inner, cst.Name("__receiver__")))])
        found = _inplace_chain(plain)
        if found is None:
            return None
        return _entry_code(inner), _replace_base(found[1], cst.Name("__receiver__"), inner), False
    plain_chain = _inplace_chain(stmt)
    return None if plain_chain is None else (*plain_chain, False)


def _key_bound_to_a_name(function: cst.FunctionDef, key: str | None) -> bool:
    """Does the function bind a name to an entry with this key (`avg = self.state[p]["avg"]`, also in a tuple)?
    Then that name is another way to the tensor an update through the entry changes, which the masked
    block's names would not follow."""
    for node in iter_nodes(function.body):
        if isinstance(node, cst.Assign):
            values = [e.value for e in node.value.elements] if isinstance(node.value, (cst.Tuple, cst.List)) \
                else [node.value]
            if any(isinstance(v, cst.Subscript) and string_key(v) == key for v in values):
                return True
    return False


def _unpacked(stmt: cst.BaseStatement) -> list[tuple[cst.Name, cst.BaseExpression]] | None:
    """`a, b = x, y` whose values read none of the names it binds: its (name, value) pairs, else None."""
    if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1 or not isinstance(stmt.body[0], cst.Assign):
        return None
    assign = stmt.body[0]
    if len(assign.targets) != 1 or not isinstance(assign.targets[0].target, (cst.Tuple, cst.List)) or \
            not isinstance(assign.value, (cst.Tuple, cst.List)):
        return None
    names = [e.value for e in assign.targets[0].target.elements]
    values = [e.value for e in assign.value.elements]
    if len(names) != len(values) or not all(isinstance(n, cst.Name) for n in names) or \
            any(isinstance(e, cst.StarredElement)
                for e in (*assign.targets[0].target.elements, *assign.value.elements)):
        return None
    bound = {n.value for n in names}  # type: ignore[attr-defined]
    if any(n.value in bound for v in values for n in _all_names(v)):
        return None  # `a, b = b, a`: not the same as one after the other
    return list(zip(names, values))  # type: ignore[arg-type]


def _entry_receiver(stmt: cst.BaseStatement) -> cst.Subscript | None:
    """The `state["scale"]` a statement `state["scale"].mul_(b)...` updates."""
    assert isinstance(stmt, cst.SimpleStatementLine) and isinstance(stmt.body[0], cst.Expr)  # _receiver found one
    inner = stmt.body[0].value
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
        inner = inner.func.value
    return inner if isinstance(inner, cst.Subscript) and _string_entry(inner) else None


def _string_entry(expr: cst.CSTNode) -> bool:
    """`state["scale"]`, `self.state[p]["avg"]`: a string key on a plain read of a name."""
    return isinstance(expr, cst.Subscript) and string_key(expr) is not None and _read_root(expr.value) is not None


def _entry_code(expr: cst.CSTNode) -> str:
    return " ".join(cst.Module([]).code_for_node(expr).split())


def _out_argument(call: cst.BaseExpression, ctx: RuleContext) -> tuple[str, cst.BaseExpression, bool] | None:
    """`torch.max(m, v, out=m)` as a statement: ("m", `torch.max(m, v)`, False); the call writes its result
    into the tensor `out=` names."""
    if not isinstance(call, cst.Call) or not (ctx.resolve(call.func) or "").startswith("torch."):
        return None
    outs = [a for a in call.args if a.keyword is not None and a.keyword.value == "out"]
    if len(outs) != 1 or not isinstance(outs[0].value, cst.Name) or any(a.star for a in call.args):
        return None
    args = [a for a in call.args if a is not outs[0]]
    if args:
        args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
    return outs[0].value.value, call.with_changes(args=args), False


def _replace_base(expr: cst.BaseExpression, old: cst.CSTNode, new: cst.BaseExpression) -> cst.BaseExpression:
    class Swap(cst.CSTTransformer):
        def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
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


def _side_effect(expr: cst.CSTNode, ctx: RuleContext, trusted: frozenset[str] = frozenset()) -> str | None:
    """A call that must not run when the condition is false: unknown code, random numbers (calls of the
    `trusted` names excepted)."""
    found: list[str] = []

    class Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Name) and func.value in trusted:
                return
            if isinstance(func, cst.Attribute) and ctx.is_tensor(func.value):
                if func.attr.value in api.RANDOM_METHODS:
                    found.append(f".{func.attr.value}() draws random numbers")
                return  # a tensor method: in-place updates are what the rewrite selects
            reason = _call_reason(node, ctx)
            if reason is not None and ("side effects" in reason or "random" in reason):
                found.append(reason)

    expr.visit(Calls())
    return found[0] if found else None


TAKEN = "__cslint_taken__"  # stands for the condition until the whole block is rewritten


class _Condition(cst.CSTTransformer):
    def __init__(self, condition: cst.BaseExpression) -> None:
        self.condition = condition

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        return self.condition if original.value == TAKEN else updated


def _read_root(expr: cst.BaseExpression) -> str | None:
    """`state["exp_avg"]`, `p.grad`, `buf`: the name a plain read starts from (a name bound to the read
    aliases a value that already exists), None for anything else."""
    while isinstance(expr, (cst.Subscript, cst.Attribute)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None


def _line(small: cst.BaseSmallStatement) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine([small])


class _Masker:
    """The statements of a masked block, rewritten to run on every step.

    A name bound before the block (or aliasing a value that existed before it, `exp_avg = state["exp_avg"]`)
    gets its new value under a fresh name, and one torch.where selects it at the end of the block. A name
    first updated inside a nested Python `if` (`if beta1 > 0:`, `if fsdp_in_use:`) is selected at the end
    of that branch: later statements then read the selected value, which equals the fresh one wherever the
    condition holds, and where it does not their results are discarded anyway.
    """

    def __init__(self, ctx: RuleContext, node: cst.If, torch: str, trusted: frozenset[str] = frozenset(),
                 names: set[str] | None = None, earlier: frozenset[str] = frozenset()) -> None:
        self.ctx = ctx
        self.trusted = trusted  # callables whose calls the caller accepts running on every step
        self.node = node
        self.bound = ctx.bound_before(node)
        self.earlier = earlier  # names an earlier branch of the same `if` bound: their values are selected
        self.torch = torch
        self.names = set(assignments(ctx)) if names is None else names  # shared by the branches of one `if`
        self.renamed: dict[str, str] = {}
        self.pending: list[tuple[str, bool]] = []  # (name, updated in place) to select at this level
        self.through_data: set[str] = set()  # names updated in place through `.data` (a leaf that requires grad)
        self.updated: list[str] = []
        self.created: set[str] = set()  # names the block binds for the first time
        self.aliases: set[str] = set()  # ... to a value that existed before it
        self.nested = False
        self.read: set[str] = {n.value for n in _all_names(node.test)}  # names the block read so far
        self.alias_of: dict[str, str] = {}  # `grad = buf`: grad -> buf, the name whose tensor it is
        self.ambiguous: set[str] = set()  # names a nested branch made alias another: no in-place update after
        self.entries: dict[str, cst.BaseExpression] = {}  # code -> `state["scale"]` updated in place

    def block(self, statements: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement] | None:
        lines: list[cst.BaseStatement] = []
        for stmt in statements:
            if isinstance(stmt, cst.If):
                self.read |= {n.value for n in _all_names(stmt.test)}
            new = self._python_if(stmt) if isinstance(stmt, cst.If) else self._statement(stmt)
            if new is None:
                return None
            lines.extend(new if isinstance(new, list) else [new])
            if not isinstance(stmt, cst.If):
                self.read |= {n.value for small in stmt.body for n in _all_names(small)  # type: ignore[attr-defined]
                              if _reads(small, n.value)}
        return lines

    def selections(self) -> list[cst.BaseStatement]:
        lines: list[cst.BaseStatement] = []
        for target, is_inplace in self.pending:
            current: cst.BaseExpression = self.entries.get(target) or cst.Name(target)
            if target in self.through_data:
                current = cst.Attribute(current, cst.Name("data"))
            where = cst.Call(cst.Attribute(cst.Name(self.torch), cst.Name("where")),
                             [cst.Arg(cst.Name(TAKEN)), cst.Arg(cst.Name(self.renamed[target])), cst.Arg(current)])
            if is_inplace:
                lines.append(_line(cst.Expr(cst.Call(cst.Attribute(current, cst.Name("copy_")), [cst.Arg(where)]))))
            else:
                lines.append(_line(cst.Assign([cst.AssignTarget(cst.Name(target))], where)))
        return lines

    def _python_if(self, node: cst.If) -> cst.If | None:
        """A nested `if` on a Python value stays an `if`; each branch is masked on its own. A nested `if` on
        a tensor is left to its own fix first (None here)."""
        if self.ctx.truth_is_data_dependent(node.test) or _side_effect(node.test, self.ctx, self.trusted):
            return None
        self.nested = True
        body = self._branch(node.body)
        orelse: cst.If | cst.Else | None = None
        if isinstance(node.orelse, cst.If):
            orelse = self._python_if(node.orelse)
            if orelse is None:
                return None
        elif isinstance(node.orelse, cst.Else):
            else_body = self._branch(node.orelse.body)
            if else_body is None:
                return None
            orelse = node.orelse.with_changes(body=else_body)
        if body is None:
            return None
        return node.with_changes(test=node.test.visit(_Reads(self.renamed)), body=body, orelse=orelse)

    def _branch(self, suite: cst.BaseSuite) -> cst.IndentedBlock | None:
        if not isinstance(suite, cst.IndentedBlock):
            return None
        renamed, pending, aliases = dict(self.renamed), self.pending, dict(self.alias_of)
        self.pending = []
        lines = self.block(suite.body)
        if lines is not None:
            lines.extend(self.selections())
        changed = {n for n in set(aliases) | set(self.alias_of) if aliases.get(n) != self.alias_of.get(n)}
        self.ambiguous |= changed | {aliases[n] for n in changed if n in aliases} | \
            {self.alias_of[n] for n in changed if n in self.alias_of}  # which tensor depends on the branch
        self.renamed, self.pending, self.alias_of = renamed, pending, aliases
        return suite.with_changes(body=lines or [_line(cst.Pass())]) if lines is not None else None

    def _statement(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement] | None:
        """One statement, with aliases followed: after `grad = buf`, `grad.mul_(c)` updates the tensor `buf`
        names (as `buf.mul_(c)`), and every name for that tensor reads its new value."""
        if _side_effect(stmt, self.ctx, self.trusted):  # on the original statement: its nodes have the analysis
            return None
        pairs = _unpacked(stmt)
        if pairs is not None:  # `a, b = x, y` as `a = x` then `b = y`
            split: list[cst.BaseStatement] = []
            for target, value in pairs:
                one = self._statement(_line(cst.Assign([cst.AssignTarget(target)], value)))
                if one is None:
                    return None
                split.extend(one)
            return split
        inplace = _receiver(stmt, self.ctx)
        if inplace is not None and inplace[0] in self.alias_of:
            root = self.alias_of[inplace[0]]
            stmt = stmt.visit(_Reads({inplace[0]: root}))  # type: ignore[assignment]
            inplace = (root, *inplace[1:])
        if inplace is not None and inplace[0] in self.ambiguous:
            return None
        lines = self._update(stmt)
        if lines is None:
            return None
        small = stmt.body[0] if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 else None
        if inplace is not None:
            for alias in [a for a, r in self.alias_of.items() if r == inplace[0]]:
                more = self._update(_line(cst.Assign([cst.AssignTarget(cst.Name(alias))], cst.Name(inplace[0]))))
                if more is None:
                    return None
                lines.extend(more)
            return lines
        bound = [t.target.value for t in small.targets if isinstance(t.target, cst.Name)] \
            if isinstance(small, cst.Assign) else [small.target.value] \
            if isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) else []
        for name in bound:
            if name in self.alias_of.values():
                return None  # the names aliasing it keep the old tensor
            self.alias_of.pop(name, None)
            self.ambiguous.discard(name)
        if isinstance(small, cst.Assign) and len(bound) == 1 and isinstance(small.value, cst.Name) and \
                self.ctx.is_tensor(small.value) and small.value.value != bound[0]:
            self.alias_of[bound[0]] = self.alias_of.get(small.value.value, small.value.value)
        return lines

    def _update(self, stmt: cst.BaseStatement) -> list[cst.BaseStatement] | None:
        """One statement free of side effects (the caller checked)."""
        if not isinstance(stmt, cst.SimpleStatementLine):
            return None
        reads = _Reads(self.renamed)
        inplace = _receiver(stmt, self.ctx)
        small = stmt.body[0] if len(stmt.body) == 1 else None
        if isinstance(small, cst.Assign) and len(small.targets) > 1:
            return self._stores(small)
        if inplace is not None:
            target, value = inplace[0], reads.expression(inplace[1])
            is_inplace = True
            if target not in self.entries and not target.isidentifier():
                receiver = _entry_receiver(stmt)
                if receiver is None or any(n.value in self.renamed for n in _all_names(receiver)) or \
                        _key_bound_to_a_name(self.ctx.traced.func.node, string_key(receiver)):
                    return None  # the entry of a container (or at a key) the block rebinds, or one a name aliases
                self.entries[target] = receiver
            if inplace[2]:
                self.through_data.add(target)
        elif isinstance(small, cst.Assign) and len(small.targets) == 1 and \
                isinstance(small.targets[0].target, cst.Name):
            target, value, is_inplace = small.targets[0].target.value, reads.expression(small.value), False
        elif isinstance(small, cst.AugAssign) and isinstance(small.target, cst.Name) and \
                type(small.operator) in AUGMENTED:
            target = small.target.value
            operator = AUGMENTED[type(small.operator)](whitespace_before=cst.SimpleWhitespace(" "),
                                                        whitespace_after=cst.SimpleWhitespace(" "))
            right = reads.expression(small.value)
            if isinstance(right, cst.BinaryOperation) and not right.lpar:
                right = right.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            value = cst.BinaryOperation(cst.Name(self.renamed.get(target, target)), operator, right)
            is_inplace = False
        elif all(isinstance(s, cst.Pass) for s in stmt.body):
            return []
        elif small is not None and self._touches_only_created(small):
            return [_line(small.visit(reads))]  # type: ignore[arg-type]
        elif isinstance(small, cst.Assign) and len(small.targets) == 1 and self._entry(small.targets[0].target):
            return [self._entry_store(small.targets[0].target, reads.expression(small.value))]
        else:
            return None
        owned = target in self.renamed or target in self.entries or target in self.aliases or \
            target in self.earlier or \
            (target in self.bound and not self._rebound_locally(target, small))
        if not owned:
            if target in self.created and isinstance(small, cst.AugAssign):  # a value the block made itself
                return [_line(small.with_changes(value=reads.expression(small.value)))]
            if is_inplace or isinstance(small, cst.AugAssign):
                return None  # updates a value the block does not own and that did not exist before it
            self.created.add(target)
            root = _read_root(small.value) if isinstance(small, cst.Assign) else None
            if root is not None and (root not in self.created or root in self.aliases):
                self.aliases.add(target)
            return [_line(cst.Assign([cst.AssignTarget(cst.Name(target))], value))]
        if target not in self.renamed:
            base = string_key(self.entries[target]) if target in self.entries else target
            base = base if base is not None and base.isidentifier() else "entry"
            self.renamed[target] = _fresh(f"{base}_taken", self.names)
            self.pending.append((target, is_inplace))
            self.updated.append(target)
        return [_line(cst.Assign([cst.AssignTarget(cst.Name(self.renamed[target]))], value))]

    def _rebound_locally(self, name: str, small: cst.BaseSmallStatement | None) -> bool:
        """`dist_tensor = torch.zeros(2)` where `dist_tensor` was bound before (by another block) but no read
        outside this block can see the new value: the block makes its own tensor, no selection needed."""
        if not isinstance(small, cst.Assign) or _read_root(small.value) is not None or name in self.read or \
                _reads(small.value, name):
            return False  # the block read the old value (in a loop, a later iteration would read the new one)
        function = self.ctx.traced.func.node
        return isinstance(function.body, cst.IndentedBlock) and \
            not _read_before_bound(function.body.body, name, self.node)

    def _entry(self, target: cst.BaseExpression) -> bool:
        """`group["lr"]`: a string-keyed entry of a container that is not a tensor (a store into a tensor,
        `buf[0] = x`, writes in place and is not an entry), which the function reads before the store in
        its source: the entry then exists when the block stores into it (`state["prev"] = grad.clone()`, a
        lazily created entry read only after its guard, does not, and is the state fixers' shape)."""
        key = string_key(target)
        if key is None or not isinstance(target, cst.Subscript) or self.ctx.is_tensor(target.value) or \
                (isinstance(target.value, cst.Name) and target.value.value in self.renamed):
            return False
        return (self.ctx.code(target.value, 200), key) in _read_entries(self.ctx, target)

    def _entry_store(self, target: cst.BaseAssignTargetExpression, value: cst.BaseExpression
                     ) -> cst.SimpleStatementLine:
        """`group["phase"] = True` -> `group["phase"] = torch.where(torch.reshape(taken, ()), True, group["phase"])`:
        selected where it is made, so a later read in the block sees the selected value (an assignment, not
        `copy_`: the entry may still hold a Python value). The condition of an `if` has one element (Python's
        `bool()` of a tensor requires it); taken without dimensions, a one-element condition of shape (1,)
        does not give the entry a dimension it did not have, which would change the next step's graph."""
        condition = cst.Call(cst.Attribute(cst.Name(self.torch), cst.Name("reshape")),
                             [cst.Arg(cst.Name(TAKEN)), cst.Arg(cst.Tuple([]))])
        where = cst.Call(cst.Attribute(cst.Name(self.torch), cst.Name("where")), [
            cst.Arg(condition), cst.Arg(value), cst.Arg(_Reads(self.renamed).expression(target))])
        self.updated.append(self.ctx.code(target, 24))
        return _line(cst.Assign([cst.AssignTarget(target)], where))

    def _stores(self, small: cst.Assign) -> list[cst.BaseStatement] | None:
        """`d = group["d"] = value`: `d` as any assignment, then each store selected where it is made
        (`group["d"] = torch.where(taken, d_taken, group["d"])`)."""
        first, *stores = [t.target for t in small.targets]
        if not isinstance(first, cst.Name) or not all(isinstance(t, (cst.Subscript, cst.Attribute)) for t in stores):
            return None
        lines = self._statement(_line(small.with_changes(targets=[small.targets[0]])))
        if lines is None:
            return None
        value = cst.Name(self.renamed.get(first.value, first.value))
        for store in stores:
            lines.append(self._entry_store(store, value))
        return lines

    def _touches_only_created(self, small: cst.BaseSmallStatement) -> bool:
        """`buf[0] = x` on a tensor the block created, `dist.all_reduce(buf, ...)`: writes nothing that existed
        before the block (a torch function may write its tensor arguments)."""
        if isinstance(small, cst.Assign):
            return all(isinstance(t.target, cst.Subscript) and self._fresh_base(t.target.value)
                       for t in small.targets)
        if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
            qualified = self.ctx.resolve(small.value.func)
            if qualified is None or not qualified.startswith("torch."):
                return False
            written = [a.value for a in small.value.args if self.ctx.is_tensor(a.value)]
            return bool(written) and all(self._fresh_base(w) for w in written)
        return False

    def _fresh_base(self, expr: cst.BaseExpression) -> bool:
        return isinstance(expr, cst.Name) and expr.value in self.created and expr.value not in self.aliases


def _read_entries(ctx: RuleContext, before: cst.CSTNode | None = None) -> set[tuple[str, str]]:
    """(container code, key) of every `group["key"]` the function reads (not only stores); with `before`,
    only the reads that come before that node in the source."""
    stored: set[int] = set()
    found: set[tuple[str, str]] = set()
    reached = False

    class Entries(cst.CSTVisitor):
        def on_visit(self, node: cst.CSTNode) -> bool:
            nonlocal reached
            reached = reached or node is before
            return not reached and super().on_visit(node)

        def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
            stored.add(id(node.target))

        def visit_Subscript(self, node: cst.Subscript) -> None:
            key = string_key(node)
            if key is not None and id(node) not in stored:
                found.add((ctx.code(node.value, 200), key))

    ctx.traced.func.node.visit(Entries())
    return found


def masked_block(node: cst.If, ctx: RuleContext) -> Fix | None:
    """The fix for `if <boolean tensor>:` guarding assignments and in-place updates (with `elif`/`else`
    branches of the same kind), or None. `if c: A; continue` directly in a loop body, followed by the rest
    B of that body, is `if c: A else: B`, masked as such (B's statements go)."""
    rest = _continue_rest(node, ctx)
    branches = _branches(node, ctx, rest)
    if branches is None:
        return None
    torch, imports = ctx.torch_name()
    if len(branches) == 1:
        masker = _Masker(ctx, node, torch)
        lines = masker.block(branches[0][1])
        if lines is None or not masker.updated:
            return None
        lines.extend(masker.selections())
        condition = _condition(node.test, ctx, torch)
        if masker.nested or len(masker.updated) > 1:
            flag = _fresh("taken", masker.names)
            lines.insert(0, _line(cst.Assign([cst.AssignTarget(cst.Name(flag))], condition)))
            condition = cst.Name(flag)
        lines = [line.visit(_Condition(condition)) for line in lines]  # type: ignore[misc]
        updated = list(masker.updated)
    else:
        chained = _masked_branches(node, branches, ctx, torch)
        if chained is None:
            return None
        lines, updated = chained
    lines[0] = lines[0].with_changes(leading_lines=node.leading_lines)
    what = "the block" if len(branches) == 1 else "every branch"
    if rest:
        what = "the block and the rest of the loop body it skips with `continue`"
    replacements: list[tuple[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.CSTNode] | cst.RemovalSentinel]] = \
        [(node, cst.FlattenSentinel(lines))]
    replacements.extend((stmt, cst.RemovalSentinel.REMOVE) for stmt in rest or ())
    return Fix("unsafe", f"Compute {what} on every step and keep its results where its condition holds "
                         f"({torch}.where over {', '.join(dict.fromkeys(updated))}); unsafe: every outcome is "
                         "computed, in-place and augmented updates become out-of-place values selected afterwards, "
                         "and the selected values are tensors", replacements, imports)


def _continue_rest(node: cst.If, ctx: RuleContext) -> Sequence[cst.BaseStatement] | None:
    """The statements after `node` in the loop body that holds it, when `node` has no else and its block
    ends with `continue` (then they are its else branch); None otherwise."""
    if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock) or len(node.body.body) < 2:
        return None
    last = node.body.body[-1]
    if not isinstance(last, cst.SimpleStatementLine) or len(last.body) != 1 or \
            not isinstance(last.body[0], cst.Continue):
        return None
    for loop in ctx.walk():
        if isinstance(loop, (cst.For, cst.While)) and isinstance(loop.body, cst.IndentedBlock):
            body = loop.body.body
            for index, stmt in enumerate(body):
                if stmt is node:
                    return body[index + 1:] or None
    return None


def _branches(node: cst.If, ctx: RuleContext, rest: Sequence[cst.BaseStatement] | None = None
              ) -> list[tuple[cst.BaseExpression | None, Sequence[cst.BaseStatement]]] | None:
    """(test, statements) of `node` and each of its `elif`s, then (None, statements) of its `else`; None when a
    branch is not a block of updates a mask can select, or an `elif` test is neither a boolean tensor nor a
    Python value free of side effects. With `rest`, `node`'s block without its final `continue`, then `rest`
    as the else branch."""
    if not is_boolean_condition(node.test, ctx):
        return None
    if rest:
        assert isinstance(node.body, cst.IndentedBlock)  # _continue_rest checked it
        suites = [node.body.body[:-1], rest]
        bound = set(ctx.bound_before(node))
        if any(_binds_none(cst.IndentedBlock(list(s))) or _reshapes(cst.IndentedBlock(list(s)), bound) for s in suites):
            return None
        return [(node.test, suites[0]), (None, suites[1])]
    branches: list[tuple[cst.BaseExpression | None, Sequence[cst.BaseStatement]]] = []
    current: cst.If | cst.Else | None = node
    while current is not None:
        test = current.test if isinstance(current, cst.If) else None
        if test is not None and current is not node and not is_boolean_condition(test, ctx) and \
                (ctx.truth_is_data_dependent(test) or _side_effect(test, ctx)):
            return None
        if not isinstance(current.body, cst.IndentedBlock) or _binds_none(current.body) or \
                _reshapes(current.body, set(ctx.bound_before(node))):
            return None
        branches.append((test, current.body.body))
        current = current.orelse if isinstance(current, cst.If) else None
    return branches


def _masked_branches(node: cst.If, branches: list[tuple[cst.BaseExpression | None, Sequence[cst.BaseStatement]]],
                     ctx: RuleContext, torch: str) -> tuple[list[cst.BaseStatement], list[str]] | None:
    """`if c1: A elif c2: B else: C` as `taken = c1; <A masked by taken>; taken2 = not taken and c2; <B masked
    by taken2>; taken3 = not (taken or taken2); <C masked by taken3>`. Each test is evaluated after the
    branches before it were masked: where no earlier branch was taken they left every value as it was, so the
    test sees what the original saw; where one was, its flag is false whatever the test says."""
    names = set(assignments(ctx))
    lines: list[cst.BaseStatement] = []
    updated: list[str] = []
    bound: set[str] = set()
    flags: list[str] = []
    for test, statements in branches:
        masker = _Masker(ctx, node, torch, names=names, earlier=frozenset(bound))
        block = masker.block(statements)
        if block is None:
            return None
        block.extend(masker.selections())
        flag = _fresh("taken", names)
        condition: cst.BaseExpression | None = _call(torch, "logical_not", _any_of(torch, flags)) if flags else None
        if test is not None:
            tested = _condition(test, ctx, torch)
            condition = tested if condition is None else _call(torch, "logical_and", condition, tested)
        assert condition is not None  # only the last branch has no test, and the first always has one
        lines.append(_line(cst.Assign([cst.AssignTarget(cst.Name(flag))], condition)))
        lines.extend(line.visit(_Condition(cst.Name(flag))) for line in block)  # type: ignore[misc]
        flags.append(flag)
        updated.extend(masker.updated)
        bound |= masker.created | set(masker.updated)
    return (lines, updated) if updated else None


def _any_of(torch: str, flags: list[str]) -> cst.BaseExpression:
    expr: cst.BaseExpression = cst.Name(flags[0])
    for flag in flags[1:]:
        expr = _call(torch, "logical_or", expr, cst.Name(flag))
    return expr


def _call(torch: str, function: str, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(cst.Attribute(cst.Name(torch), cst.Name(function)), [cst.Arg(a) for a in args])


def _binds_none(body: cst.BaseSuite) -> bool:
    """Whether the block assigns `None` to a name: `torch.where` selects between tensors, and has no form
    for a mask helper's `mask = None` fast path."""
    return any(isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None and is_none(node.value)
               for node in iter_nodes(body))


def _reshapes(body: cst.BaseSuite, bound: Collection[str] = ()) -> bool:
    """Whether the block assigns a value of another shape (`x = F.pad(x, ...)`): `torch.where` cannot select
    it against the value kept, and computed every step it runs where the condition says it is invalid.
    Flattening into a name not bound before the block (`p_view = p.view(-1)`) is neither: it is valid for
    every tensor, and a new name is never selected."""
    return any(isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)) and node.value is not None
               and changes_shape(node.value) and not _flattens_into_new_name(node, bound)
               for node in iter_nodes(body))


def _flattens_into_new_name(node: cst.Assign | cst.AnnAssign | cst.AugAssign, bound: Collection[str]) -> bool:
    """`flat = x.view(-1)`, `x.reshape(-1)`, `x.flatten()` assigned to one name not in `bound`; `x.reshape(())`
    (a number's shape, the `.item()` fix's) also into an entry, whose selection keeps the entry's shape.
    Shapes do not depend on values in a traced step, so a reshape that holds where the branch runs holds on
    every step."""
    if not isinstance(node, cst.Assign) or len(node.targets) != 1:
        return False
    target = node.targets[0].target
    new_name = isinstance(target, cst.Name) and target.value not in bound
    call = node.value
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return False
    method, args = call.func.attr.value, call.args
    if method in ("reshape", "view") and len(args) == 1 and isinstance(args[0].value, cst.Tuple) and \
            not args[0].value.elements and args[0].keyword is None:
        return new_name or isinstance(target, cst.Subscript)
    if not new_name:
        return False
    if method == "flatten":
        return not args
    minus_one = len(args) == 1 and args[0].keyword is None and isinstance(args[0].value, cst.UnaryOperation) and \
        isinstance(args[0].value.operator, cst.Minus) and isinstance(args[0].value.expression, cst.Integer) and \
        args[0].value.expression.value == "1"
    return method in ("view", "reshape") and minus_one


def _read_before_bound(statements: Sequence[cst.BaseStatement], name: str, skip: cst.CSTNode) -> bool:
    """Can a read of `name` outside `skip` see a value `skip` bound (no binding in between)? Loops are
    scanned twice, so a read at the top of a loop body sees the previous iteration's value."""

    def scan(stmts: Sequence[cst.BaseStatement], live: bool) -> tuple[bool, bool]:
        for stmt in stmts:
            if stmt is skip:
                live = True
            elif isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    if live and _reads(small, name):
                        return True, live
                    live = live and not _binds(small, name)
            elif isinstance(stmt, cst.If):
                if live and _reads(stmt.test, name):
                    return True, live
                branches = [_statements(stmt.body)]
                if isinstance(stmt.orelse, cst.If):
                    branches.append([stmt.orelse])
                elif stmt.orelse is not None:
                    branches.append(_statements(stmt.orelse.body))
                outs = [] if stmt.orelse is not None else [live]
                for branch in branches:
                    found, out = scan(branch, live)
                    if found:
                        return True, live
                    outs.append(out)
                live = any(outs)
            elif isinstance(stmt, (cst.For, cst.While)):
                header = stmt.iter if isinstance(stmt, cst.For) else stmt.test
                if live and _reads(header, name):
                    return True, live
                rebinds = isinstance(stmt, cst.For) and name in {n.value for n in _all_names(stmt.target)}
                found, out = scan(_statements(stmt.body), live and not rebinds)
                if found:
                    return True, live
                found, again = scan(_statements(stmt.body), (live or out) and not rebinds)
                if found or (isinstance(stmt, cst.While) and (live or out or again) and _reads(stmt.test, name)):
                    return True, live
                live = live or out or again
                if stmt.orelse is not None:
                    found, live = scan(_statements(stmt.orelse.body), live)
                    if found:
                        return True, live
            elif (live and _reads(stmt, name)) or any(n is skip for n in iter_nodes(stmt)):
                return True, live
        return False, live

    return scan(statements, False)[0]


def _statements(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    assert isinstance(suite, cst.SimpleStatementSuite)  # the other suite: `if c: x = 1`
    return [cst.SimpleStatementLine(suite.body)]


def _all_names(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class Names(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    node.visit(Names())
    return found


def _reads(node: cst.CSTNode, name: str) -> bool:
    """A use of `name` other than as a plain assignment target."""
    targets = set()
    if isinstance(node, cst.Assign):
        targets = {id(t.target) for t in node.targets if isinstance(t.target, cst.Name)}
    return any(n.value == name and id(n) not in targets for n in _all_names(node))


def _binds(small: cst.BaseSmallStatement, name: str) -> bool:
    return isinstance(small, cst.Assign) and any(isinstance(t.target, cst.Name) and t.target.value == name
                                                  for t in small.targets)
