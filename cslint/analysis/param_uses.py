"""What a function's own body says about a parameter that has no annotation: a container or a flag.

A tensor has no `.items()`, is never indexed by a string and holds no string keys, so
`batch["input_ids"]`, `"labels" in inputs`, `kwargs.get("x")` and `cache or {}` say the parameter is a
container. A parameter that is only ever tested (`if output_attentions:`, `not use_cache`) or compared
with strings (`layer_type == "full"`) is a flag. Parameters named like tensors (`mask`, `hidden_states`)
are never taken for flags: `if mask:` on a real mask is the bug the rules are for.
"""

from __future__ import annotations

import builtins
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cslint.analysis.index import FunctionInfo
from cslint.analysis.syntax import is_none_literal, none_question, none_test
from cslint.analysis.walk import iter_with_parents

CONTAINER_METHODS = frozenset({"items", "keys", "get", "setdefault", "append", "extend", "update", "pop"})
TENSOR_LIKE_WORDS = ("mask", "tensor", "state", "ids", "embed", "logit", "input", "pixel", "label", "value",
                     "feat", "hidden", "weight", "bias", "grad")
_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
_CONTAINER_LITERALS = (cst.Dict, cst.List, cst.Tuple, cst.Set, cst.DictComp, cst.ListComp)


@dataclass(frozen=True)
class ParamUses:
    containers: frozenset[str]
    flags: frozenset[str]
    # `x = default(x, self.attr)`, `x = x if x is not None else 0.5`, `if x is None: x = self.attr`: a
    # parameter whose None is replaced by a Python literal ("") or an attribute of `self` (its name) -- as
    # good as a default in the signature, once the attribute is known to be a Python value
    fallbacks: frozenset[tuple[str, str]] = frozenset()
    # used where Python needs an int (`arange(j - i, j)`, `range(steps)`, `x[:, :n]`, `x.new_ones(i, j)`):
    # the author passes a number; a tensor there comes from the data flow (`n = lengths.max()`), not from
    # a parameter nothing else describes
    numbers: frozenset[str] = frozenset()
    # optional options: a parameter defaulting to None that the body only tests for None, passes to a
    # predicate (`exists(beam_size)`), compares with number literals (`beam_size > 1`) or converts with
    # `int()`/`float()` -- nothing it does needs a tensor, and a number is what `> 1` and `int()` are for
    options: frozenset[str] = frozenset()


_CACHE: weakref.WeakKeyDictionary[FunctionInfo, ParamUses] = weakref.WeakKeyDictionary()
# By the function's text, which is all the scan reads: an editor's analyses index the edited file anew
# on every keystroke, and its unchanged functions are not scanned again. The latest texts, up to:
TEXT_BYTES = 2_000_000
_BY_TEXT: dict[str, ParamUses] = {}
_by_text_bytes = 0
_lock = threading.Lock()


def param_uses(func: FunctionInfo) -> ParamUses:
    cached = _CACHE.get(func)
    if cached is None:
        span = func.span
        text = func.module.source[span.start:span.end] if span is not None else None
        with _lock:
            cached = _BY_TEXT.get(text) if text is not None else None
        if cached is None:
            cached = _scan(func.node)
            if text is not None:
                _remember(text, cached)
        _CACHE[func] = cached
    return cached


def _remember(text: str, uses: ParamUses) -> None:
    global _by_text_bytes
    with _lock:
        if text in _BY_TEXT or len(text) > TEXT_BYTES:
            return
        _BY_TEXT[text] = uses
        _by_text_bytes += len(text)
        while _by_text_bytes > TEXT_BYTES:  # oldest first (dicts keep insertion order)
            oldest = next(iter(_BY_TEXT))
            del _BY_TEXT[oldest]
            _by_text_bytes -= len(oldest)


def _is_string(node: cst.CSTNode) -> bool:
    if isinstance(node, _STRINGS):
        return True
    return isinstance(node, (cst.Tuple, cst.List, cst.Set)) and bool(node.elements) and all(
        isinstance(e.value, _STRINGS) for e in node.elements)


def _container_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, _CONTAINER_LITERALS):
        return True
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("dict", "list")


def _use(name: cst.Name, parent: cst.CSTNode | None, grand: cst.CSTNode | None) -> str:
    """How one load of a parameter uses it: "container", "flag", "neutral" (says nothing) or "value"."""
    if isinstance(parent, cst.Attribute) and parent.value is name:
        if parent.attr.value in CONTAINER_METHODS and isinstance(grand, cst.Call) and grand.func is parent:
            return "container"
        return "value"
    if isinstance(parent, cst.Subscript) and parent.value is name:
        index = parent.slice[0].slice if len(parent.slice) == 1 else None
        return "container" if isinstance(index, cst.Index) and isinstance(index.value, _STRINGS) else "value"
    if isinstance(parent, cst.BooleanOperation) and parent.left is name and isinstance(parent.operator, cst.Or) \
            and _container_literal(parent.right):
        return "container"
    if isinstance(parent, cst.ComparisonTarget) and isinstance(grand, cst.Comparison):
        operator = parent.operator
        if isinstance(operator, (cst.In, cst.NotIn)) and _is_string(grand.left):
            return "container"
        return "flag" if _is_string(grand.left) else "neutral" if isinstance(operator, (cst.Is, cst.IsNot)) \
            or is_none_literal(grand.left) else "value"
    if isinstance(parent, cst.Comparison) and parent.left is name:
        targets = parent.comparisons
        if all(isinstance(t.operator, (cst.Is, cst.IsNot)) or none_question(name, t) for t in targets):
            return "neutral"  # `x is None`, `x == None`: a question about None, not about the value
        return "flag" if all(_is_string(t.comparator) for t in targets) else "value"
    if isinstance(parent, cst.Arg) and parent.keyword is not None and parent.keyword.value == name.value:
        return "neutral"  # `self.attend(q, k, v, causal=causal)`: handed on under its own name
    if isinstance(parent, (cst.If, cst.While, cst.IfExp)) and parent.test is name:
        return "flag"
    if isinstance(parent, cst.IfExp):  # `use_cache if use_cache is not None else default`: passed through
        return "neutral"
    if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
        return "flag"
    if isinstance(parent, cst.BooleanOperation):
        return "flag" if isinstance(grand, (cst.If, cst.While, cst.IfExp, cst.UnaryOperation, cst.BooleanOperation)) \
            else "value"
    return "value"


# Calls whose arguments are sizes, bounds or counts (by the called name's last part): factories, in any
# form, and tensor methods, called on a tensor (`torch.topk(scores, 3)` takes the tensor first).
_SIZE_FACTORIES = frozenset({"range", "arange", "zeros", "ones", "empty", "full", "randn", "rand", "eye"})
_SIZE_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full", "view", "reshape", "expand", "repeat",
                           "narrow", "topk"})
_TORCH_MODULES = frozenset({"torch", "T", "F", "nn", "functional"})
_INT_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.FloorDivide)


def _in_int_slot(name: cst.Name, parent: cst.CSTNode | None, parents: dict[int, cst.CSTNode | None]) -> bool:
    """The parameter, alone or in integer arithmetic, is a call's size argument or a slice bound."""
    node: cst.CSTNode = name
    while isinstance(parent, (cst.BinaryOperation, cst.UnaryOperation)) and (
            isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus)
            or isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, _INT_ARITHMETIC)):
        node, parent = parent, parents.get(id(parent))
    if isinstance(parent, cst.Slice):
        return node is parent.lower or node is parent.upper
    if isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star:
        call = parents.get(id(parent))
        if isinstance(call, cst.Call):
            func = call.func
            if isinstance(func, cst.Name):
                return func.value in _SIZE_FACTORIES
            if isinstance(func, cst.Attribute):
                on_module = isinstance(func.value, cst.Name) and func.value.value in _TORCH_MODULES
                return func.attr.value in _SIZE_FACTORIES or (func.attr.value in _SIZE_METHODS and not on_module)
    return False


def _passed_back(name: cst.Name, parent: cst.CSTNode | None, grand: cst.CSTNode | None,
                 above: cst.CSTNode | None) -> bool:
    """`causal = default(causal, self.causal)`: the parameter goes through a call into its own name again;
    what the name is then used for says what it is (a builtin such as `max(x, 1)` computes something else)."""
    if not (isinstance(parent, cst.Arg) and isinstance(grand, cst.Call) and isinstance(above, cst.Assign)
            and above.value is grand and len(above.targets) == 1):
        return False
    target = above.targets[0].target
    return not _builtin_call(grand) and isinstance(target, cst.Name) and target.value == name.value


def _builtin_call(call: cst.Call) -> bool:
    """`max(x, 1)`, `int(x)`: computes something else than the value it is given (a project helper such as
    `default(x, d)` hands one of its arguments back)."""
    return isinstance(call.func, cst.Name) and call.func.value in _BUILTINS


def _scan(node: cst.FunctionDef) -> ParamUses:
    p = node.params
    names = {param.name.value for param in (*p.posonly_params, *p.params, *p.kwonly_params)}
    if isinstance(p.star_kwarg, cst.Param):
        names.add(p.star_kwarg.name.value)
    uses: dict[str, set[str]] = {name: set() for name in names}
    parents: dict[int, cst.CSTNode | None] = {}
    numbers: set[str] = set()
    option_uses: dict[str, set[str]] = {name: set() for name in _none_defaults(p)}
    for child, parent in iter_with_parents(node.body, prune=(cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        parents[id(child)] = parent
        if type(child) is cst.Name and child.value in uses and parent is not None:
            if isinstance(parent, (cst.Param, cst.AssignTarget)) or (
                    isinstance(parent, cst.Attribute) and parent.attr is child):
                continue
            grand = parents.get(id(parent))
            if _passed_back(child, parent, grand, parents.get(id(grand))):
                continue
            if _in_int_slot(child, parent, parents):
                numbers.add(child.value)
            use = _use(child, parent, grand)
            uses[child.value].add(use)
            if child.value in option_uses:
                option_uses[child.value].add(_option_use(child, parent, grand, parents.get(id(grand)), use))
    fallbacks = frozenset(_fallbacks(node, names, _none_defaults(p)))
    containers = frozenset(n for n, u in uses.items() if "container" in u)
    flags = frozenset(n for n, u in uses.items() if "flag" in u and u <= {"flag", "neutral"}
                      and not _tensor_like(n))
    options = frozenset(n for n, u in option_uses.items() if "number" in u and u <= {"number", "flag", "neutral"}
                        and not _tensor_like(n))
    return ParamUses(containers, flags, fallbacks, frozenset(n for n in numbers if not _tensor_like(n)), options)


def _none_defaults(p: cst.Parameters) -> set[str]:
    return {param.name.value for param in (*p.posonly_params, *p.params, *p.kwonly_params)
            if isinstance(param.default, cst.Name) and param.default.value == "None"}


_NUMBER_CONVERSIONS = frozenset({"int", "float", "round"})
_ORDERING = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual, cst.Equal, cst.NotEqual)
_TESTS = (cst.If, cst.While, cst.IfExp, cst.UnaryOperation, cst.BooleanOperation, cst.Assert)


def _number_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def _option_use(name: cst.Name, parent: cst.CSTNode | None, grand: cst.CSTNode | None, above: cst.CSTNode | None,
                use: str) -> str:
    """How one load of a None-defaulted parameter uses it: "number" (compared with a number literal or
    converted to one), a predicate's argument in a test (`exists(x) and ...`: "neutral"), else `use`."""
    if isinstance(parent, cst.Comparison) and parent.left is name and all(
            isinstance(t.operator, _ORDERING) and _number_literal(t.comparator) for t in parent.comparisons):
        return "number"
    if isinstance(parent, cst.ComparisonTarget) and isinstance(grand, cst.Comparison) \
            and isinstance(parent.operator, _ORDERING) and _number_literal(grand.left) and len(grand.comparisons) == 1:
        return "number"
    if isinstance(parent, cst.Arg) and parent.keyword is None and not parent.star and isinstance(grand, cst.Call) \
            and isinstance(grand.func, cst.Name) and len(grand.args) == 1:
        if grand.func.value in _NUMBER_CONVERSIONS:
            return "number"
        if not _builtin_call(grand) and (isinstance(above, _TESTS) or isinstance(above, cst.Assign)
                                         and above.value is grand):
            return "neutral"  # `is_topk = exists(topk)`, `if exists(x) and ...`: a question about the value
    if isinstance(parent, cst.Arg) and parent.keyword is not None and _einops_call(grand):
        return "number"  # `repeat(x, "b d -> b k d", k=topk)`: an axis length
    return use


_EINOPS = frozenset({"repeat", "rearrange", "reduce"})


def _einops_call(call: cst.CSTNode | None) -> bool:
    """An einops call: its keyword arguments are axis lengths, Python ints."""
    if not isinstance(call, cst.Call) or len(call.args) < 2 or not isinstance(call.args[1].value, _STRINGS):
        return False
    func = call.func
    name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) else None
    return name in _EINOPS


def _tensor_like(name: str) -> bool:
    return any(word.startswith(TENSOR_LIKE_WORDS) or word in ("x", "y", "z", "t")
               for word in name.lower().split("_"))


_BUILTINS = frozenset(dir(builtins))
_LITERALS = (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)


def _fallbacks(node: cst.FunctionDef, names: set[str], optional: set[str]) -> Iterator[tuple[str, str]]:
    """(parameter, source of the value its None is replaced by) for the function's top-level statements. The
    tests `x is None` name the None they replace; a call `default(x, fallback)` names none, so it is read
    as one only for a parameter defaulting to None (`y = rearrange(x, "b n -> n b")` or `z = read(x, 5)`
    on a required `x` is a use of `x`, not its fallback)."""
    params = node.params.params
    self_name = params[0].name.value if params else None
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.If) and stmt.orelse is None and _is_none_test(stmt.test, names, True):
            name = stmt.test.left.value  # type: ignore[attr-defined]
            inner = stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else ()
            if len(inner) == 1 and isinstance(inner[0], cst.SimpleStatementLine):
                assigned = _assigned(inner[0], name)
                if assigned is not None:
                    yield from _source(name, assigned, self_name)
            continue
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            value = small.value if isinstance(small, cst.Assign) else None
            if _fallback_call(value, optional):
                # `x = default(x, fallback)`, `depth = default(loop_depth, self.loop_depth)`
                yield from _source(value.args[0].value.value, value.args[1].value, self_name)  # type: ignore
            elif isinstance(value, cst.IfExp) and isinstance(value.body, cst.Name) and value.body.value in names \
                    and _is_none_test(value.test, {value.body.value}, False):
                yield from _source(value.body.value, value.orelse, self_name)  # `x if x is not None else fallback`
            elif isinstance(value, cst.IfExp) and isinstance(value.orelse, cst.Name) and value.orelse.value in names \
                    and _is_none_test(value.test, {value.orelse.value}, True):
                yield from _source(value.orelse.value, value.body, self_name)  # `fallback if x is None else x`


def _fallback_call(value: cst.BaseExpression | None, names: set[str]) -> bool:
    """`default(x, fallback)`: a two-argument call of a project helper on a parameter (a builtin such as
    `max(x, 1)` computes something else)."""
    if not (isinstance(value, cst.Call) and isinstance(value.func, cst.Name) and not _builtin_call(value)
            and len(value.args) == 2 and all(a.keyword is None and not a.star for a in value.args)):
        return False
    first = value.args[0].value
    return isinstance(first, cst.Name) and first.value in names


def _is_none_test(test: cst.BaseExpression, names: set[str], asks_none: bool) -> bool:
    """`x is None` / `x == None` (`asks_none`), `x is not None` / `x != None` (not), `x` one of `names`."""
    question = none_test(test)
    return question is not None and question[1] is asks_none and isinstance(question[0], cst.Name) \
        and question[0].value in names


def _assigned(line: cst.SimpleStatementLine, name: str) -> cst.BaseExpression | None:
    small = line.body[0] if len(line.body) == 1 else None
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.targets[0].target, cst.Name) \
            and small.targets[0].target.value == name:
        return small.value
    return None


def _source(name: str, value: cst.BaseExpression, self_name: str | None) -> Iterator[tuple[str, str]]:
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus):
        value = value.expression
    if isinstance(value, _LITERALS) or (isinstance(value, cst.Name) and value.value in ("True", "False")):
        yield name, ""
    elif isinstance(value, cst.Attribute) and isinstance(value.value, cst.Name) and self_name is not None \
            and value.value.value == self_name:
        yield name, value.attr.value

