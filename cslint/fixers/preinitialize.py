"""Move an optimizer's lazily created state into a generated `preinitialize(self)`.

One fix per class, shared by every finding in it: a `preinitialize` method that walks
`self.param_groups`/`group["params"]` and creates exactly what the lazy guards of `step` (and its
helpers) created, the guards removed from those methods, `self.preinitialize()` at the end of
`__init__` (so the class keeps working on CPU/GPU; Cerebras calls it again on the device), Python-number
state (`state["step"] = 0`) created as float32 tensors instead, and that counter's uses made tensor ops
(`beta ** step` -> `torch.pow(beta, step)`, `math.sqrt(x)` -> `torch.sqrt(x)`).

Gradients do not exist before the first step, so creation from a gradient uses the parameter (same shape
and dtype): `zeros_like(grad)` -> `zeros_like(p)` is safe; `grad.clone()` -> `zeros_like(p)` equals the
original only when the update that follows starts from a zero buffer (SGD with `dampening == 0`): unsafe.
The fix is also unsafe when the initial value reads the parameter's values (they may change between
constructing the optimizer and its first step, e.g. by loading a checkpoint).
"""

from __future__ import annotations

import ast

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import libcst as cst

from cslint.analysis.imports import ImportTable, dotted_name
from cslint.analysis.index import ClassInfo
from cslint.analysis.syntax import path_key, string_key, string_value
from cslint.analysis.walk import iter_nodes
from cslint.rule_api.findings import Applicability, Fix, Replacement

SKIPPED_METHODS = frozenset({"__init__", "__setstate__", "preinitialize", "state_dict", "load_state_dict"})
SHAPE_ONLY_CALLS = frozenset({"zeros_like", "ones_like", "empty_like", "full_like"})
SHAPE_ONLY_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", "size", "dim", "numel", "is_complex",
                                   "is_floating_point", "is_sparse"})
CLONES = frozenset({"clone", "detach", "contiguous"})
MATH_TO_TORCH = {"math.sqrt": "sqrt", "math.exp": "exp", "math.log": "log", "math.pow": "pow"}


# ---- recognising lazy guards (also used by the rule) -------------------------------------------------

# Methods' aliases while one function's rules run (`aliases_remembered`): the rules and this fixer ask for
# those of one method once per guard in it, and each answer walks the whole method. Kept no longer than
# that, so no tree outlives the run that gave it back (a node is never changed: its answer never changes).
_KNOWN_ALIASES: ContextVar[dict[int, tuple[cst.FunctionDef, frozenset[str]]] | None] = \
    ContextVar("known_state_aliases", default=None)


@contextmanager
def aliases_remembered() -> Iterator[None]:
    token = _KNOWN_ALIASES.set({})
    try:
        yield
    finally:
        _KNOWN_ALIASES.reset(token)


def state_aliases(method: cst.FunctionDef) -> set[str]:
    """Names bound to one parameter's state: `state = self.state[p]`."""
    known = _KNOWN_ALIASES.get()
    if known is None:
        return _state_aliases(method)
    remembered = known.get(id(method))
    if remembered is not None and remembered[0] is method:
        return set(remembered[1])
    found = _state_aliases(method)
    known[id(method)] = (method, frozenset(found))
    return found


def _state_aliases(method: cst.FunctionDef) -> set[str]:
    found: set[str] = set()
    for node in iter_nodes(method):  # not libcst's visitor: many times slower, and asked on every edit
        if type(node) is cst.Assign:
            if is_state_of_param(node.value):
                for target in node.targets:
                    if isinstance(target.target, cst.Name):
                        found.add(target.target.value)
            for name, value in unpacked_pairs(node):
                if is_state_of_param(value):
                    found.add(name)
    return found


def unpacked_pairs(node: cst.Assign) -> list[tuple[str, cst.BaseExpression]]:
    """`a, state, b = x, self.state[p], y` -> the names and the values they get. A starred value
    (`*group["betas"]`) hides how many names it fills: names before it pair from the front, names after
    it from the back."""
    if len(node.targets) != 1 or not isinstance(node.targets[0].target, (cst.Tuple, cst.List)) or \
            not isinstance(node.value, (cst.Tuple, cst.List)):
        return []
    targets = [e.value for e in node.targets[0].target.elements]
    if any(isinstance(e, cst.StarredElement) for e in node.targets[0].target.elements):
        return []
    values = list(node.value.elements)
    starred = [i for i, e in enumerate(values) if isinstance(e, cst.StarredElement)]
    if len(starred) > 1 or (not starred and len(values) != len(targets)):
        return []
    pairs: list[tuple[cst.BaseExpression, cst.BaseElement]] = []
    if starred:
        front, back = values[:starred[0]], values[starred[0] + 1:]
        pairs = list(zip(targets, front)) + list(zip(targets[len(targets) - len(back):], back))
    else:
        pairs = list(zip(targets, values))
    return [(t.value, v.value) for t, v in pairs if isinstance(t, cst.Name)]


def is_state_of_param(expr: cst.BaseExpression) -> bool:
    """`self.state[p]`."""
    return (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Attribute)
            and expr.value.attr.value == "state" and isinstance(expr.value.value, cst.Name)
            and expr.value.value.value == "self")


def is_state(expr: cst.BaseExpression, aliases: set[str]) -> bool:
    return (isinstance(expr, cst.Name) and expr.value in aliases) or is_state_of_param(expr)


def _is_zero(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and expr.value == "0"


StatePredicate = Callable[[cst.BaseExpression], bool]


def is_emptiness_test(test: cst.BaseExpression, is_state_expr: StatePredicate) -> bool:
    """`len(state) == 0`, `not state`, `"k" not in state`, `state.get("k") is None`."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = test.expression
        if isinstance(inner, cst.Call) and dotted_name(inner.func) == "len" and inner.args:
            inner = inner.args[0].value
        return is_state_expr(inner)
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    op, right = test.comparisons[0].operator, test.comparisons[0].comparator
    left = test.left
    if isinstance(op, cst.Equal) and _is_zero(right) and isinstance(left, cst.Call) \
            and dotted_name(left.func) == "len" and left.args:
        return is_state_expr(left.args[0].value)
    if isinstance(op, cst.NotIn):
        return is_state_expr(right)
    if isinstance(op, cst.Is) and isinstance(right, cst.Name) and right.value == "None":
        return isinstance(left, cst.Call) and isinstance(left.func, cst.Attribute) \
            and left.func.attr.value == "get" and is_state_expr(left.func.value)
    return False


def none_test_name(test: cst.BaseExpression) -> str | None:
    """`buf is None` -> "buf"."""
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1 and isinstance(test.left, cst.Name):
        target = test.comparisons[0]
        if isinstance(target.operator, cst.Is) and isinstance(target.comparator, cst.Name) \
                and target.comparator.value == "None":
            return test.left.value
    return None


def writes_state(body: cst.CSTNode, aliases: set[str]) -> bool:
    return bool(state_writes(body, aliases))


def state_writes(body: cst.CSTNode, aliases: set[str]) -> list[tuple[cst.Subscript, cst.BaseExpression]]:
    """`state["k"] = value` assignments inside `body` (targets and values)."""
    found: list[tuple[cst.Subscript, cst.BaseExpression]] = []
    for node in iter_nodes(body):
        if type(node) is cst.Assign:
            for target in node.targets:
                t = target.target
                if isinstance(t, cst.Subscript) and is_state(t.value, aliases):
                    found.append((t, node.value))
    return found


def is_lazy_guard(stmt: cst.If, aliases: set[str]) -> bool:
    """An `if` that creates a parameter's state the first time it runs."""
    if is_emptiness_test(stmt.test, lambda e: is_state(e, aliases)):
        return True
    return none_test_name(stmt.test) is not None and writes_state(stmt.body, aliases)


# ---- walking a method with the statements that enclose each node -------------------------------------

def _walk(block: Sequence[cst.BaseStatement], chain: tuple[cst.CSTNode, ...], elifs: bool = False
          ) -> Iterator[tuple[cst.BaseStatement, tuple[cst.CSTNode, ...]]]:
    """Each statement with the blocks around it; with `elifs`, the statements of `elif` branches too (their
    `if` is not a statement of a block: the guards the fix replaces are never one)."""
    for stmt in block:
        yield stmt, chain
        if isinstance(stmt, (cst.For, cst.While, cst.With)):
            yield from _walk(_body(stmt.body), chain + (stmt,), elifs)
        elif isinstance(stmt, cst.If):
            yield from _walk(_body(stmt.body), chain + (stmt,), elifs)
            if isinstance(stmt.orelse, cst.Else):
                yield from _walk(_body(stmt.orelse.body), chain + (stmt.orelse,), elifs)
            elif isinstance(stmt.orelse, cst.If) and elifs:
                for inner, inner_chain in _walk([stmt.orelse], chain + (stmt,), elifs):
                    if inner is not stmt.orelse:
                        yield inner, inner_chain


def _body(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    return suite.body if isinstance(suite, cst.IndentedBlock) else ()


def lazy_guards(method: cst.FunctionDef) -> list[tuple[cst.If, tuple[cst.CSTNode, ...]]]:
    aliases = state_aliases(method)
    return [(stmt, chain) for stmt, chain in _walk(_body(method.body), (method,))
            if isinstance(stmt, cst.If) and is_lazy_guard(stmt, aliases)]


# ---- building preinitialize ------------------------------------------------------------------------

class CannotFix(Exception):
    """The guard's surroundings are not the `for group ...: for p in group["params"]:` shape we rebuild."""


@dataclass
class _Plan:
    applicability: Applicability = "safe"
    replacements: list[tuple[cst.CSTNode, Replacement]] = field(default_factory=list)
    statements: list[cst.BaseStatement] = field(default_factory=list)
    loops: tuple[str, str] | None = None  # (group name, param name)
    counters: set[str] = field(default_factory=set)  # state keys created as Python numbers
    zero_counters: set[str] = field(default_factory=set)  # those of them that start at 0
    notes: list[str] = field(default_factory=list)  # why the fix is unsafe, beyond gradient copies
    copied: set[str] = field(default_factory=set)  # statements already copied into preinitialize
    copied_values: bool = False  # some state starts from gradient or parameter values


def _names_read(node: cst.CSTNode) -> set[str]:
    names: set[str] = set()

    class Reader(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            names.add(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

        def visit_AssignTarget(self, n: cst.AssignTarget) -> bool:
            return not _bound_names(n.target)  # `buf = ...` binds buf; `state["k"] = ...` reads state

    node.visit(Reader())
    return names


def _bound_names(target: cst.BaseExpression) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return set().union(*(_bound_names(e.value) for e in target.elements))
    return set()


def _simple_assign(stmt: cst.CSTNode) -> cst.Assign | None:
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Assign):
        return stmt.body[0]
    return None


def _reads_grad(expr: cst.BaseExpression, param: str) -> bool:
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> None:
            nonlocal found
            if n.attr.value == "grad" and isinstance(n.value, cst.Name) and n.value.value == param:
                found = True

    expr.visit(Finder())
    return found


class _FromParameter(cst.CSTTransformer):
    """Rewrite creation code to run before any gradient exists."""

    def __init__(self, param: str, grad_aliases: set[str], torch_name: str, aliases: set[str]) -> None:
        self.param = param
        self.grad_aliases = grad_aliases
        self.torch_name = torch_name
        self.aliases = aliases
        self.copied_values = False  # a gradient's values were copied: replaced by zeros
        self.counters: set[str] = set()
        self.zero_counters: set[str] = set()  # counters that start at 0

    def _is_grad(self, node: cst.BaseExpression) -> bool:
        if isinstance(node, cst.Name):
            return node.value in self.grad_aliases
        return (isinstance(node, cst.Attribute) and node.attr.value in ("grad", "data")
                and self._is_grad(node.value)) or (isinstance(node, cst.Attribute) and node.attr.value == "grad"
                                                    and isinstance(node.value, cst.Name)
                                                    and node.value.value == self.param)

    def _is_grad_copy(self, node: cst.BaseExpression) -> bool:
        """`grad.clone()`, `torch.clone(grad).detach()`, `grad.detach().clone()`, `copy.deepcopy(grad)` ..."""
        if self._is_grad(node):
            return True
        if isinstance(node, cst.Call) and len(node.args) == 1 and dotted_name(node.func) in ("copy.deepcopy",
                                                                                             "deepcopy"):
            return self._is_grad_copy(node.args[0].value)
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value in CLONES:
            head = node.func.value
            if dotted_name(head) == self.torch_name and node.args:
                return self._is_grad_copy(node.args[0].value)
            return self._is_grad_copy(head)
        return False

    def _zeros_like_param(self) -> cst.Call:
        return cst.parse_expression(f"{self.torch_name}.zeros_like({self.param})")  # type: ignore[return-value]

    def leave_Assign(self, original: cst.Assign, updated: cst.Assign) -> cst.Assign:
        value = updated.value
        if self._is_grad_copy(original.value):
            self.copied_values = True
            value = self._zeros_like_param()
        elif isinstance(value, (cst.Integer, cst.Float)) or (
                isinstance(value, cst.UnaryOperation) and isinstance(value.expression, (cst.Integer, cst.Float))):
            number = repr(float(ast.literal_eval(cst.Module([]).code_for_node(value))))
            for target in original.targets:
                t = target.target
                if isinstance(t, cst.Subscript) and is_state(t.value, self.aliases):
                    key = string_key(t)
                    if key is not None:
                        self.counters.add(key)
                        if float(number) == 0.0:
                            self.zero_counters.add(key)
                    value = cst.parse_expression(
                        f"{self.torch_name}.tensor({number}, dtype={self.torch_name}.float32, "
                        f"device={self.param}.device)")
        return updated.with_changes(value=value)

    def leave_Attribute(self, original: cst.Attribute, updated: cst.BaseExpression) -> cst.BaseExpression:
        if original.attr.value == "grad" and isinstance(original.value, cst.Name) \
                and original.value.value == self.param:
            return cst.Name(self.param)
        return updated

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        return cst.Name(self.param) if original.value in self.grad_aliases else updated


class _GradAsName(cst.CSTTransformer):
    def __init__(self, param: str) -> None:
        self.param = param

    def leave_Attribute(self, original: cst.Attribute, updated: cst.BaseExpression) -> cst.BaseExpression:
        value = original.value
        if original.attr.value == "grad" and isinstance(value, cst.Name) and value.value == self.param:
            return cst.Name("__gradient__")
        return updated


def _reads_gradient_values(node: cst.CSTNode, param: str, grad_aliases: set[str]) -> bool:
    """Does `node` read the values (not only the shape) of `param.grad` or of a name bound to it?"""
    renamed = node.visit(_GradAsName(param))
    assert isinstance(renamed, cst.CSTNode)  # the transformer replaces an attribute, never removes one
    return any(_reads_values_of(renamed, name) for name in (*grad_aliases, "__gradient__"))


def _reads_gradient_layout(node: cst.CSTNode, param: str, grad_aliases: set[str]) -> bool:
    """Does `node` test `grad.is_sparse` (a fact of the gradient the parameter does not share)?"""
    renamed = node.visit(_GradAsName(param))
    assert isinstance(renamed, cst.CSTNode)
    found = False

    class Finder(cst.CSTVisitor):
        def visit_Attribute(self, n: cst.Attribute) -> None:
            nonlocal found
            value = n.value
            if isinstance(value, cst.Attribute) and value.attr.value == "data":
                value = value.value
            if n.attr.value == "is_sparse" and isinstance(value, cst.Name) and \
                    value.value in (*grad_aliases, "__gradient__"):
                found = True

    renamed.visit(Finder())
    return found


def _reads_values_of(node: cst.CSTNode, name: str) -> bool:
    """Does `node` read the values of tensor `name` (not only its shape, dtype or device)?"""
    reads = False

    class Reader(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> bool:
            func = n.func
            last = (func.attr.value if isinstance(func, cst.Attribute)
                    else func.value if isinstance(func, cst.Name) else "")
            if last in SHAPE_ONLY_CALLS and n.args:
                for arg in n.args[1:]:
                    arg.visit(self)
                if isinstance(func, cst.Attribute):
                    func.value.visit(self)
                return False
            if last == "to" and isinstance(func, cst.Attribute):  # `.to(p)` takes its dtype and device
                func.value.visit(self)
                return False
            return True

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            return n.attr.value not in SHAPE_ONLY_ATTRIBUTES

        def visit_Name(self, n: cst.Name) -> None:
            nonlocal reads
            if n.value == name:
                reads = True

    node.visit(Reader())
    return reads


def _loop_names(chain: tuple[cst.CSTNode, ...], method: cst.FunctionDef) -> tuple[str, str, int]:
    """(group name, param name, index in `chain` of the loop over the parameters)."""
    params = {p.name.value for p in method.params.params}
    for i, node in enumerate(chain):
        if not isinstance(node, cst.For) or not isinstance(node.target, cst.Name):
            continue
        it = node.iter
        if isinstance(it, cst.Call) and dotted_name(it.func) == "filter" and len(it.args) == 2:
            it = it.args[1].value  # `for p in filter(lambda p: p.grad is not None, group["params"])`
        if isinstance(it, cst.Subscript) and isinstance(it.value, cst.Name) and string_key(it) == "params":
            group = it.value.value
            outer = [n for n in chain[:i] if isinstance(n, cst.For) and _group_loop_target(n) == group]
            if outer or group in params:
                return group, node.target.value, i
    raise CannotFix("the guard is not inside a loop over group['params']")


def _group_loop_target(loop: cst.For) -> str | None:
    """The group name of `for group in self.param_groups`, or of `for group, base_lr in
    zip(self.param_groups, self.base_lrs)` (the other names are not the guard's to read: if it reads
    them, preinitialize cannot bind them and offers no fix)."""
    if isinstance(loop.target, cst.Name) and path_key(loop.iter) == "self.param_groups":
        return loop.target.value
    it = loop.iter
    if isinstance(loop.target, (cst.Tuple, cst.List)) and loop.target.elements and \
            isinstance(loop.target.elements[0].value, cst.Name) and isinstance(it, cst.Call) and \
            dotted_name(it.func) == "zip" and it.args and not it.args[0].star and \
            path_key(it.args[0].value) == "self.param_groups":
        return loop.target.elements[0].value.value
    return None


def _guard_plan(guard: cst.If, chain: tuple[cst.CSTNode, ...], method: cst.FunctionDef, torch_name: str,
                plan: _Plan) -> None:
    group, param, loop_at = _loop_names(chain, method)
    if plan.loops is not None and plan.loops != (group, param):
        raise CannotFix("guards use different loop variable names")
    plan.loops = (group, param)
    aliases = state_aliases(method)
    # enclosing `if`s between the parameter loop and the guard are conditions on hyperparameters
    conditions: list[cst.BaseExpression] = []
    for node, _inner in zip(chain[loop_at + 1:], chain[loop_at + 2:] + (guard,)):
        if isinstance(node, cst.If):
            conditions.append(node.test)
        elif isinstance(node, cst.Else):
            parent = chain[chain.index(node) - 1]
            assert isinstance(parent, cst.If)
            conditions.append(cst.UnaryOperation(cst.Not(), parent.test.with_changes(
                lpar=[cst.LeftParen()], rpar=[cst.RightParen()])))
        elif not isinstance(node, cst.With):
            raise CannotFix("the guard is inside a loop or try block of its own")
    # statements that bind names the guard reads: simple assignments in the enclosing blocks before it
    preceding: list[cst.BaseStatement] = []
    for node, inner in zip(chain, chain[1:] + (guard,)):
        block = _body(node.body) if isinstance(node, (cst.FunctionDef, cst.For, cst.If, cst.Else, cst.With)) else ()
        for stmt in block:
            if stmt is inner:
                break
            preceding.append(stmt)
    grad_aliases: set[str] = set()
    bindings: list[tuple[cst.SimpleStatementLine, set[str]]] = []
    for stmt in preceding:
        assign = _simple_assign(stmt)
        if assign is None:
            continue
        unpacked = [name for name, value in unpacked_pairs(assign) if is_state_of_param(value)]
        if unpacked:  # `grad, state, ... = p.grad, self.state[p], ...`: preinitialize binds only the state
            value = next(v for n, v in unpacked_pairs(assign) if n == unpacked[0])
            stmt = cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(cst.Name(unpacked[0]))], value)])
            assign = stmt.body[0]  # type: ignore[assignment]
            assert isinstance(assign, cst.Assign)
        bound = set().union(*(_bound_names(t.target) for t in assign.targets))
        if _reads_grad(assign.value, param) and len(bound) == 1 and isinstance(assign.value, cst.Attribute):
            grad_aliases |= bound  # `grad = p.grad`: before any gradient, the parameter has its shape
            continue
        bindings.append((stmt, bound))  # type: ignore[arg-type]
    needed = _names_read(guard.body) | set().union(*(_names_read(c) for c in conditions), set())
    chosen: list[cst.BaseStatement] = []
    for stmt, bound in reversed(bindings):
        if bound & needed and not bound & {group, param}:
            chosen.insert(0, stmt)
            needed |= _names_read(stmt)
    locals_bound = {param, group, "self", *grad_aliases} | set().union(*(b for s, b in bindings if s in chosen),
                                                                        set())
    method_locals = _all_bound(method) - _all_bound(guard)  # the guard's own loops bind their names
    missing = (needed & method_locals) - locals_bound
    if missing:
        raise CannotFix(f"the guard reads {', '.join(sorted(missing))}, bound in a way preinitialize cannot copy")
    rewriter = _FromParameter(param, grad_aliases, torch_name, aliases)
    for stmt in _body(guard.body):
        assign = _simple_assign(stmt)
        if assign is not None and rewriter._is_grad_copy(assign.value):
            continue  # a plain copy of the gradient: rebuilt as a zero buffer (unsafe)
        if _reads_gradient_values(stmt, param, grad_aliases):
            raise CannotFix("the guard computes state from gradient values (no gradient exists before step 1)")
        if _reads_gradient_layout(stmt, param, grad_aliases):
            plan.applicability = "unsafe"
            note = ("the guard tests the gradient's layout (`grad.is_sparse`), which preinitialize() reads from "
                    "the parameter: state kept only for sparse gradients (nn.Embedding(sparse=True)) is not created")
            if note not in plan.notes:
                plan.notes.append(note)
    body: list[cst.BaseStatement] = []
    for stmt in chosen:
        copied = stmt.visit(rewriter)
        assert isinstance(copied, cst.BaseStatement)
        text = cst.Module([]).code_for_node(copied)
        if text not in plan.copied:
            plan.copied.add(text)
            body.append(copied)
    created = [s.visit(rewriter) for s in _body(guard.body)]
    if rewriter.copied_values or _reads_values_of(cst.IndentedBlock(created), param):  # type: ignore[arg-type]
        plan.applicability = "unsafe"
        plan.copied_values = True
    plan.counters |= rewriter.counters
    plan.zero_counters |= rewriter.zero_counters
    inner_block: list[cst.BaseStatement] = created  # type: ignore[assignment]
    for condition in reversed(conditions):
        inner_block = [cst.If(test=condition.visit(rewriter), body=cst.IndentedBlock(inner_block))]  # type: ignore[arg-type]
    plan.statements.extend(body + inner_block)
    plan.replacements.append((guard, _without_guard(guard, aliases)))
    if isinstance(guard.orelse, cst.Else):
        rebound = sorted(_plain_names_bound(guard.orelse.body) - _plain_names_bound(guard.body))
        if rebound:
            plan.applicability = "unsafe"
            note = (f"the else branch kept in step() also rebinds `{rebound[0]}`, which the creating branch left "
                    f"as it was: an in-place update through `{rebound[0]}` after the guard now changes the state "
                    "also on the step that created it, so the state can differ from the original's from then on")
            if note not in plan.notes:
                plan.notes.append(note)


def _plain_names_bound(suite: cst.BaseSuite) -> set[str]:
    """Names a block binds by plain assignment (`grad = buf`, `buf = state["b"] = ...`) in its own statements."""
    names: set[str] = set()
    for stmt in _body(suite):
        assign = _simple_assign(stmt)
        if assign is not None:
            names.update(t.target.value for t in assign.targets if isinstance(t.target, cst.Name))
    return names


def _all_bound(method: cst.FunctionDef | cst.If) -> set[str]:
    names = {p.name.value for p in (*method.params.params, *method.params.kwonly_params)} \
        if isinstance(method, cst.FunctionDef) else set()

    for n in iter_nodes(method.body):
        if type(n) in (cst.AssignTarget, cst.For, cst.AugAssign):
            names.update(_bound_names(n.target))  # type: ignore[attr-defined]
    return names


def _without_guard(guard: cst.If, aliases: set[str]) -> Replacement:
    """What `step` keeps of a guard: its else branch, or the names its creating branch bound."""
    if isinstance(guard.orelse, cst.If):
        raise CannotFix("the guard has an elif")
    if isinstance(guard.orelse, cst.Else):
        return cst.FlattenSentinel(list(_body(guard.orelse.body)))
    rebinds: list[cst.BaseStatement] = []
    for stmt in _body(guard.body):
        assign = _simple_assign(stmt)
        if assign is None:
            continue
        names = [t.target for t in assign.targets if isinstance(t.target, cst.Name)]
        stores = [t.target for t in assign.targets if isinstance(t.target, cst.Subscript)
                  and is_state(t.target.value, aliases)]
        if names and not stores:
            raise CannotFix(f"the guard binds `{names[0].value}` without storing it in the state")
        for name in names:
            rebinds.append(cst.SimpleStatementLine([cst.Assign([cst.AssignTarget(name)], stores[0])]))
    return cst.FlattenSentinel(rebinds) if rebinds else cst.RemovalSentinel.REMOVE


class _CounterUses(cst.CSTTransformer):
    """Counter arithmetic as tensor ops: `b ** step` -> torch.pow(b, step), math.sqrt -> torch.sqrt."""

    def __init__(self, targets: set[int], torch_name: str, math_names: dict[int, str],
                 named_powers: dict[int, cst.BinaryOperation]) -> None:
        self.targets = targets
        self.torch_name = torch_name
        self.math_names = math_names
        self.named_powers = named_powers  # `1 - beta2_t` -> the `beta2 ** step` that `beta2_t` holds

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> cst.CSTNode:  # type: ignore[override]
        if id(original) not in self.targets:
            return updated
        if isinstance(original, cst.BinaryOperation) and isinstance(original.operator, cst.Subtract):
            # `1 - beta ** step` -> `-torch.expm1(torch.log1p(torch.as_tensor(beta - 1)) * step)`. In
            # float32, 1 - torch.pow(0.999, step) loses a digit for every power of ten the result is
            # below 1 (2e-5 relative for beta 0.999, and beta rounded to float32 alone costs 1e-5);
            # `beta - 1` taken in Python's float64 first, log1p and expm1 stay within 2e-7 of float64.
            power = self.named_powers.get(id(original), original.right)
            assert isinstance(power, cst.BinaryOperation)
            code = cst.Module([]).code_for_node
            torch = self.torch_name
            return cst.parse_expression(
                f"-{torch}.expm1({torch}.log1p({torch}.as_tensor({code(_atom(power.left))} - 1))"
                f" * {code(_atom(power.right))})").with_changes(lpar=original.lpar, rpar=original.rpar)
        torch_attr = cst.Attribute(cst.Name(self.torch_name), cst.Name("pow"))
        if isinstance(updated, cst.BinaryOperation):
            return cst.Call(func=torch_attr.with_changes(lpar=[], rpar=[]), args=[
                cst.Arg(updated.left, comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))),
                cst.Arg(updated.right)], lpar=updated.lpar, rpar=updated.rpar)
        assert isinstance(updated, cst.Call)
        return updated.with_changes(func=torch_attr.with_changes(attr=cst.Name(self.math_names[id(original)])))


def _is_one(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, (cst.Integer, cst.Float)) and not expr.lpar and float(expr.value) == 1.0


def _atom(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr` as an operand of `*` (parenthesised unless it binds tighter)."""
    if isinstance(expr, (cst.Name, cst.Attribute, cst.Subscript, cst.Call, cst.Integer, cst.Float)) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _counter_use_replacements(method: cst.FunctionDef, counters: set[str], imports: ImportTable,
                              torch_name: str) -> list[tuple[cst.CSTNode, Replacement]]:
    aliases = state_aliases(method)
    derived: set[str] = set()

    def reads_counter(node: cst.CSTNode) -> bool:
        hit = False

        class Finder(cst.CSTVisitor):
            def visit_Subscript(self, n: cst.Subscript) -> None:
                nonlocal hit
                if is_state(n.value, aliases) and string_key(n) in counters:
                    hit = True

            def visit_Name(self, n: cst.Name) -> None:
                nonlocal hit
                if n.value in derived:
                    hit = True

        node.visit(Finder())
        return hit

    targets: dict[int, cst.CSTNode] = {}
    math_names: dict[int, str] = {}
    powers = _named_powers(method, reads_counter)
    named_powers: dict[int, cst.BinaryOperation] = {}

    class Uses(cst.CSTVisitor):
        def visit_BinaryOperation(self, n: cst.BinaryOperation) -> None:
            if isinstance(n.operator, cst.Power) and reads_counter(n.right):
                targets[id(n)] = n
            right = n.right
            if isinstance(n.operator, cst.Subtract) and _is_one(n.left) and isinstance(right, cst.BinaryOperation) \
                    and not right.lpar and isinstance(right.operator, cst.Power) and reads_counter(right.right):
                targets[id(n)] = n  # `1 - beta ** step`: one accurate op instead of pow then subtract
            if isinstance(n.operator, cst.Subtract) and _is_one(n.left) and isinstance(right, cst.Name) \
                    and not right.lpar and right.value in powers:
                targets[id(n)] = n  # `beta2_t = beta2 ** step` ... `1 - beta2_t`: the same, through the name
                named_powers[id(n)] = powers[right.value]

        def visit_Call(self, n: cst.Call) -> None:
            qualified = imports.resolve(n.func) if dotted_name(n.func) else None
            if qualified in MATH_TO_TORCH and any(reads_counter(a.value) for a in n.args):
                targets[id(n)] = n
                math_names[id(n)] = MATH_TO_TORCH[qualified]

    for stmt, _ in _walk(_body(method.body), (method,), elifs=True):
        if isinstance(stmt, cst.SimpleStatementLine):
            stmt.visit(Uses())
            assign = _simple_assign(stmt)
            if assign is not None and reads_counter(assign.value):
                for t in assign.targets:
                    derived.update(_bound_names(t.target))
    inner: set[int] = set()

    class Nested(cst.CSTVisitor):
        def __init__(self) -> None:
            self.depth = 0

        def on_visit(self, n: cst.CSTNode) -> bool:
            if id(n) in targets:
                if self.depth:
                    inner.add(id(n))
                self.depth += 1
            return True

        def on_leave(self, n: cst.CSTNode) -> None:
            if id(n) in targets:
                self.depth -= 1

    method.visit(Nested())
    transformer = _CounterUses(set(targets), torch_name, math_names, named_powers)
    return [(node, node.visit(transformer)) for key, node in targets.items() if key not in inner]


def _named_powers(method: cst.FunctionDef, reads_counter: Callable[[cst.CSTNode], bool]
                  ) -> dict[str, cst.BinaryOperation]:
    """name -> `beta ** <counter>` for the names the method binds once, to such a power of a Python value
    (`beta2_t = beta2 ** state["step"]`)."""
    bindings: dict[str, list[cst.BaseExpression | None]] = {}
    for n in iter_nodes(method.body):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                for name in _bound_names(t.target):
                    value = n.value if len(n.targets) == 1 and isinstance(t.target, cst.Name) else None
                    bindings.setdefault(name, []).append(value)
        elif type(n) in (cst.AugAssign, cst.AnnAssign, cst.For):
            for name in _bound_names(n.target):  # type: ignore[attr-defined]
                bindings.setdefault(name, []).append(None)
    powers: dict[str, cst.BinaryOperation] = {}
    for name, values in bindings.items():
        value = values[0] if len(values) == 1 else None
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Power) and not value.lpar \
                and isinstance(value.left, (cst.Name, cst.Float, cst.Attribute)) and reads_counter(value.right):
            powers[name] = value
    return powers


def _state_in_test(test: cst.BaseExpression) -> cst.BaseExpression:
    """The state expression an emptiness test reads (`state` of `len(state) == 0`, `not state` ...)."""
    if isinstance(test, cst.UnaryOperation):
        inner = test.expression
        return inner.args[0].value if isinstance(inner, cst.Call) else inner
    assert isinstance(test, cst.Comparison)
    left, right = test.left, test.comparisons[0].comparator
    if isinstance(left, cst.Call) and dotted_name(left.func) == "len":
        return left.args[0].value
    if isinstance(left, cst.Call) and isinstance(left.func, cst.Attribute):
        return left.func.value
    return right


def _first_step_flags(method: cst.FunctionDef, plan: _Plan) -> list[tuple[cst.CSTNode, Replacement]]:
    """`first = len(state) == 0` read outside a lazy guard: once preinitialize has created the state,
    emptiness no longer says "first step". The flag is kept as `state["step"] == 0` on a counter the
    guard created at 0 and the step increments after reading the flag; without one, no fix."""
    aliases = state_aliases(method)
    guards = {id(g.test) for g, _ in lazy_guards(method)}
    if not any(isinstance(node, cst.BaseExpression) and id(node) not in guards and
               is_emptiness_test(node, lambda e: is_state(e, aliases)) for node in iter_nodes(method)):
        return []  # no flag: the visitors below (which number every node libcst visits) need not run
    flags: list[cst.BaseExpression] = []
    increments: list[tuple[int, str]] = []

    class Finder(cst.CSTVisitor):
        def __init__(self) -> None:
            self.order = 0

        def on_visit(self, node: cst.CSTNode) -> bool:
            self.order += 1
            if isinstance(node, cst.BaseExpression) and id(node) not in guards and \
                    is_emptiness_test(node, lambda e: is_state(e, aliases)):
                flags.append(node)
                return False
            if isinstance(node, cst.AugAssign) and isinstance(node.operator, cst.AddAssign) and \
                    isinstance(node.target, cst.Subscript) and is_state(node.target.value, aliases):
                increments.append((self.order, string_key(node.target) or ""))
            return True

    finder = Finder()
    order: dict[int, int] = {}

    class Order(cst.CSTVisitor):
        def __init__(self) -> None:
            self.count = 0

        def on_visit(self, node: cst.CSTNode) -> bool:
            self.count += 1
            order[id(node)] = self.count
            return True

    method.visit(Order())
    method.visit(finder)
    if not flags:
        return []
    replacements: list[tuple[cst.CSTNode, Replacement]] = []
    for flag in flags:
        counters = [key for at, key in increments if key in plan.zero_counters and at > order[id(flag)]]
        if not counters:
            raise CannotFix(f"`{cst.Module([]).code_for_node(flag)}` reads empty state as a first-step flag")
        state = _state_in_test(flag)
        replacement = cst.Comparison(
            left=cst.Subscript(state, [cst.SubscriptElement(cst.Index(cst.SimpleString(f'"{counters[0]}"')))]),
            comparisons=[cst.ComparisonTarget(cst.Equal(), cst.Integer("0"))], lpar=flag.lpar, rpar=flag.rpar)
        replacements.append((flag, replacement))
        plan.applicability = "unsafe"
        note = (f"empty state was read as a first-step flag (`{cst.Module([]).code_for_node(flag)}`), kept as "
                f"`state[\"{counters[0]}\"] == 0`, a tensor test")
        if note not in plan.notes:
            plan.notes.append(note)
    return replacements


def _call_preinitialize(init: cst.FunctionDef) -> cst.FunctionDef:
    call = cst.parse_statement("self.preinitialize()\n")
    return init.with_changes(body=init.body.with_changes(body=[*_body(init.body), call]))


@dataclass
class ClassFix:
    fix: Fix
    counters: set[str]  # state keys that were Python numbers and become tensors


def preinitialize_fix(cls: ClassInfo, torch_name: str, imports: frozenset[str]) -> ClassFix | None:
    """The whole-class fix, or None when some guard has a shape this fixer does not rebuild."""
    init = cls.methods.get("__init__")
    if init is None or "preinitialize" in cls.methods:
        return None
    plan = _Plan()
    try:
        for name, method in cls.methods.items():
            if name in SKIPPED_METHODS:
                continue
            for guard, chain in lazy_guards(method.node):
                _guard_plan(guard, chain, method.node, torch_name, plan)
    except CannotFix:
        return None
    if plan.loops is None:
        return None
    try:
        for name, method in cls.methods.items():
            if name not in SKIPPED_METHODS:
                plan.replacements.extend(_first_step_flags(method.node, plan))
    except CannotFix:
        return None
    group, param = plan.loops
    for name, method in cls.methods.items():
        if plan.counters and name not in SKIPPED_METHODS:
            plan.replacements.extend(
                _counter_use_replacements(method.node, plan.counters, cls.module.imports, torch_name))
    indent = "    "
    loops = (f"def preinitialize(self):\n"
             f"{indent}for {group} in self.param_groups:\n"
             f"{indent * 2}for {param} in {group}[\"params\"]:\n"
             f"{indent * 3}pass\n")
    preinit: cst.FunctionDef = cst.parse_statement(loops)  # type: ignore[assignment]
    outer_for: cst.For = preinit.body.body[0]  # type: ignore[assignment]
    inner_for: cst.For = outer_for.body.body[0]  # type: ignore[assignment]
    inner_for = inner_for.with_changes(body=cst.IndentedBlock(plan.statements))
    outer_for = outer_for.with_changes(body=outer_for.body.with_changes(body=[inner_for]))
    preinit = preinit.with_changes(body=preinit.body.with_changes(body=[outer_for]),
                                   leading_lines=[cst.EmptyLine(indent=False)])
    plan.replacements.append((init.node, cst.FlattenSentinel([_call_preinitialize(init.node), preinit])))
    what = "created from gradient values" if plan.copied_values else "created from parameter shapes"
    message = f"create the state in a generated preinitialize() ({what})"
    if plan.notes:
        message += "; unsafe: " + "; ".join(plan.notes)
    fix = Fix(plan.applicability, message, plan.replacements, imports=imports)
    return ClassFix(fix, plan.counters)
