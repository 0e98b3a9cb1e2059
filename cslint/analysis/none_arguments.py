"""A None that a library call passes where the library tests for None: the branch it decides is not followed.

`create_bidirectional_mask` calls `_preprocess_mask_arguments(config, embeds, mask, cache, None, ...)`, whose
`if position_ids is not None and ...: find_packed_sequence_indices(position_ids)` never runs for that call;
a summary worked out with `position_ids` unknown followed it, and a finding's message named a site there that
the user's call cannot reach. A library function is summarised per call (libraries.py), so a parameter it
compares with None is given as None (`NONE`) where the call passes a literal `None` or leaves it at a default
of None, and a test on a name that is still that None (inference.py: `_none_test`) decides which branch the
summary follows. Only parameters that a test compares with None (`if x is None`, `... if x is not None else
...`) or that are passed on to a call (`create_causal_mask` hands its `position_ids` to
`_preprocess_mask_arguments`) are specialised: other Nones would only multiply the summaries worked out.

The other way round (#36 item 5): `lens_to_mask(lens, x.shape[1])` passes a length, and the callee's `if max_len
is None: max_len = lens.amax().item()` never runs for that call. A Python value whose expression at the call
cannot be None (a literal, arithmetic, a comparison, a shape entry, `len()`/`int()`/...) is given as `SOME`
where it decides a test, and the test on a name still bound to it is decided the other way. A variable carries
that in its kind (`kinds.not_none`): bound to such an expression (`n = x.size(0)`, `n = max(sizes)`, a tensor
method's result), given one where it was None (`if n is None: n = x.size(0)`, and the `else` of `n is None`), or
returned by a summary that hands back the one it was given; a join with a value that may be None drops it.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from dataclasses import dataclass

import libcst as cst

from cslint.analysis.index import FunctionInfo
from cslint.analysis.kinds import NONE, Kind, Tag, is_none, is_some, may_be_none, not_none
from cslint.analysis.syntax import none_test
from cslint.analysis.truth import combined_truth
from cslint.analysis.walk import iter_nodes


@dataclass(frozen=True)
class NoneTests:
    deciding: frozenset[str]  # parameters a test compares with None, or passed on to a call (whose tests may)
    defaults: frozenset[str]  # those of them whose default is None


_CACHE: weakref.WeakKeyDictionary[FunctionInfo, NoneTests] = weakref.WeakKeyDictionary()
_NOTHING = NoneTests(frozenset(), frozenset())


def none_tests(func: FunctionInfo) -> NoneTests:
    found = _CACHE.get(func)
    if found is None:
        found = _CACHE[func] = _scan(func.node)
    return found


def with_none_arguments(func: FunctionInfo, node: cst.Call, bound: dict[str, Kind]) -> dict[str, Kind]:
    """The arguments a call binds (`bound`, literal Nones already NONE), with NONE kept only where it may decide
    a test of `func`, and added for such a parameter left at its default None (when no `*`/`**` argument
    could fill it)."""
    tests = none_tests(func)
    taken = {name: kind if name in tests.deciding else may_be_none(kind) for name, kind in bound.items()}
    if tests.defaults and not any(arg.star for arg in node.args):
        for name in tests.defaults:
            taken.setdefault(name, NONE)
    return taken


def literal_nones(node: cst.Call, arg_kinds: list[Kind]) -> list[Kind]:
    """The argument kinds of a call, NONE for each argument that is a literal `None`, marked not None (`not_none`)
    for each whose expression cannot be None (a variable carries its mark in its kind)."""
    return [NONE if type(arg.value) is cst.Name and arg.value.value == "None" else
            not_none(kind) if not arg.star and never_none(arg.value, {}) else kind
            for arg, kind in zip(node.args, arg_kinds)]


def shown_not_none(node: cst.Call, arg_kinds: list[Kind], env: Mapping[str, Kind]) -> list[Kind]:
    """The argument kinds of a call, marked not None where the expression and the variables it reads (`env`)
    show it is not (`n if flag else x.size(0)`, `counts.numel()` of a tensor `counts`)."""
    return [not_none(kind) if not arg.star and never_none(arg.value, env) else kind
            for arg, kind in zip(node.args, arg_kinds)]


_NEVER_NONE = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString,
               cst.FormattedString, cst.List, cst.Tuple, cst.Set, cst.Dict, cst.ListComp, cst.SetComp,
               cst.DictComp, cst.BinaryOperation, cst.UnaryOperation, cst.Comparison)
# builtins and tensor methods that return a Python value, never None
_VALUE_CALLS = frozenset({"int", "float", "bool", "len", "str", "abs", "round", "min", "max", "sum", "tuple",
                          "size", "dim", "numel"})


def never_none(expr: cst.BaseExpression, env: Mapping[str, Kind]) -> bool:
    """True when the expression shows its value is not None: its form, a variable (in `env`) bound to such a
    value, a conditional both of whose values are, or a tensor method's result."""
    if isinstance(expr, _NEVER_NONE):
        return True
    if isinstance(expr, cst.Name):
        kind = env.get(expr.value)
        return kind is not None and is_some(kind)
    if isinstance(expr, cst.IfExp):
        return never_none(expr.body, env) and never_none(expr.orelse, env)
    if isinstance(expr, cst.Subscript):  # `x.shape[1]`, `x.size()[0]`
        value = expr.value
        return (isinstance(value, cst.Attribute) and value.attr.value == "shape") or \
            (isinstance(value, cst.Call) and never_none(value, env))
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name):
            receiver = env.get(func.value.value)
            if receiver is not None and receiver.tag is Tag.TENSOR:  # `counts.numel()`, `index.max()`
                return True
        name = func.value if isinstance(func, cst.Name) else func.attr.value if isinstance(func, cst.Attribute) \
            else ""
        return name in _VALUE_CALLS
    return False


def none_truth(test: cst.BaseExpression, env: Mapping[str, Kind]) -> bool | None:
    """The truth of `test` where comparisons with None of names bound to None (in `env`) decide it, else None."""
    return combined_truth(test, lambda part: _none_comparison(part, env))


def _none_comparison(test: cst.BaseExpression, env: Mapping[str, Kind]) -> bool | None:
    if type(test) is not cst.Comparison:
        return None
    compared = _compared_with_none(test)
    if compared is None:
        return None
    value = env.get(compared[0])
    if value is None:
        return None
    return compared[1] if is_none(value) else not compared[1] if is_some(value) else None


def _compared_with_none(test: cst.Comparison) -> tuple[str, bool] | None:
    """`x is None` / `x == None` -> ("x", True), `x is not None` / `x != None` -> ("x", False); None for any
    other comparison."""
    question = none_test(test)
    if question is None or not isinstance(question[0], cst.Name):
        return None
    return question[0].value, question[1]


def _scan(func: cst.FunctionDef) -> NoneTests:
    params = {p.name.value: p for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)}
    deciding: set[str] = set()
    for node in iter_nodes(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        kind = type(node)
        if kind is cst.If or kind is cst.IfExp:
            for part in iter_nodes(node.test):  # type: ignore[attr-defined]
                if type(part) is cst.Comparison:
                    compared = _compared_with_none(part)
                    if compared is not None and compared[0] in params:
                        deciding.add(compared[0])
        elif kind is cst.Call:  # passed on: it may decide a test of the function called
            deciding.update(arg.value.value for arg in node.args  # type: ignore[attr-defined]
                            if type(arg.value) is cst.Name and not arg.star and arg.value.value in params)
    if not deciding:
        return _NOTHING
    defaults = frozenset(name for name in deciding if type(params[name].default) is cst.Name and
                         params[name].default.value == "None")  # type: ignore[union-attr]
    return NoneTests(frozenset(deciding), defaults)
