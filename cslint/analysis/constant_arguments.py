"""Literal arguments, and literal defaults a call leaves, that decide a library function's tests.

`targets_convert(targets, num_classes=n)` leaves `code="rate"`, `first_spike_time=0` and `correct_rate=1`; the
callee's `if code == "rate": return targets_rate(...)` and, there, `if correct_rate == 1 and ...: if
first_spike_time == 0: return ...` rule out the branches that read tensor values (`latency()`'s `int()`, a
`.tolist()`). A summary worked out with those parameters unknown followed every branch, and the call was
reported for reads it cannot reach (#36 F3). The mechanism is the one for a constructor's options (constructed.py,
constant_tests.py) and for Nones (none_arguments.py): a library function is summarised per call (libraries.py),
so a parameter that decides one of its tests is given as its constant (`kinds.constant`) where the call passes a
literal or leaves a literal default, and a test on it (`==`, `!=`, `<`, `in` a literal tuple, its truth) decides
which branch the summary follows (inference.py: `_none_test`, constant_tests.constant_truth).

Only parameters that a test reads or that are passed on to a call (`targets_convert` hands `first_spike_time` to
`targets_rate`) keep their constant: others would only multiply the summaries worked out.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import libcst as cst

from cslint.analysis.constant_tests import literal_value
from cslint.analysis.index import FunctionInfo
from cslint.analysis.kinds import Kind, Tag, constant
from cslint.analysis.walk import iter_nodes


@dataclass(frozen=True)
class ConstantTests:
    deciding: frozenset[str]  # parameters a test reads, or passed on to a call (whose tests may)
    defaults: tuple[tuple[str, bool | int | float | str], ...]  # those of them with a literal default, not None


_CACHE: weakref.WeakKeyDictionary[FunctionInfo, ConstantTests] = weakref.WeakKeyDictionary()
_NOTHING = ConstantTests(frozenset(), ())
_TESTED = (cst.If, cst.IfExp, cst.While)


def constant_tests(func: FunctionInfo) -> ConstantTests:
    found = _CACHE.get(func)
    if found is None:
        found = _CACHE[func] = _scan(func.node)
    return found


def literal_arguments(node: cst.Call, arg_kinds: list[Kind]) -> list[Kind]:
    """The argument kinds of a call, each literal argument (`code="latency"`, `2`, `False`) its constant."""
    kinds = []
    for arg, kind in zip(node.args, arg_kinds):
        value = literal_value(arg.value) if not arg.star else None
        kinds.append(constant(value) if value is not None else kind)
    return kinds


def with_constant_arguments(func: FunctionInfo, node: cst.Call, bound: dict[str, Kind],
                            given: dict[str, Kind]) -> dict[str, Kind]:
    """The arguments a call binds (`bound`), where a parameter that decides a test of `func` takes the constant
    the call gives it (`given`: the call's arguments bound with their literals' constants) or, left out, its
    literal default (when no `*`/`**` argument could fill it)."""
    tests = constant_tests(func)
    if not tests.deciding:
        return bound
    taken = dict(bound)
    for name in tests.deciding:
        kind = given.get(name)
        if kind is not None and kind.tag is Tag.STATIC and kind.value is not None:
            taken[name] = kind
    if tests.defaults and not any(arg.star for arg in node.args):
        for name, value in tests.defaults:
            if name not in given:
                taken[name] = constant(value)
    return taken


def _scan(func: cst.FunctionDef) -> ConstantTests:
    params = {p.name.value: p for p in (*func.params.posonly_params, *func.params.params, *func.params.kwonly_params)}
    deciding: set[str] = set()
    for node in iter_nodes(func.body, prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        kind = type(node)
        if kind in _TESTED:
            deciding.update(part.value for part in iter_nodes(node.test)  # type: ignore[attr-defined]
                            if type(part) is cst.Name and part.value in params)
        elif kind is cst.Call:  # passed on: it may decide a test of the function called
            deciding.update(arg.value.value for arg in node.args  # type: ignore[attr-defined]
                            if type(arg.value) is cst.Name and not arg.star and arg.value.value in params)
    if not deciding:
        return _NOTHING
    defaults = []
    for name in sorted(deciding):
        default = params[name].default
        value = literal_value(default) if default is not None else None
        if value is not None:
            defaults.append((name, value))
    return ConstantTests(frozenset(deciding), tuple(defaults))
