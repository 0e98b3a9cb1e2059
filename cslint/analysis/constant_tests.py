"""Tests that constants decide: `if self.ignore_index >= 0:` in a library module's `forward`, for an instance whose
constructor call left `ignore_index` at its default of -100, never runs its body.

A library module's summary is worked out for its instance (analysis/constructed.py): the attributes its constructor
call decided come with the instance, constants among them (`Kind.value`: a literal argument, or a literal default the
call leaves). A test built from such attributes, literals, comparisons and `not`/`and`/`or` has one truth for that
instance, and the branch it rules out is not followed, as a None that decides a test (none_arguments.py).
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Mapping
from typing import Any

import libcst as cst

from cslint.analysis.kinds import NONE, Kind, constant, is_none
from cslint.analysis.truth import combined_truth

_LITERALS = (cst.Integer, cst.Float, cst.SimpleString)
_NAMED = {"True": True, "False": False}
_NO_VALUE = object()

_ORDER: dict[type, Callable[[Any, Any], Any]] = {
    cst.Equal: operator.eq, cst.NotEqual: operator.ne, cst.LessThan: operator.lt, cst.LessThanEqual: operator.le,
    cst.GreaterThan: operator.gt, cst.GreaterThanEqual: operator.ge,
}


def literal_kind(expr: cst.BaseExpression) -> Kind | None:
    """The kind of a literal written in the code (`-100`, `"sum"`, `True`, `None`); None for anything else."""
    if type(expr) is cst.Name and expr.value == "None":
        return NONE
    value = _literal(expr)
    return None if value is _NO_VALUE else constant(value)  # type: ignore[arg-type]


def literal_value(expr: cst.BaseExpression) -> bool | int | float | str | None:
    """The value of a literal written in the code (`-100`, `"sum"`, `True`); None for None and anything else."""
    value = _literal(expr)
    return None if value is _NO_VALUE else value  # type: ignore[return-value]


def _literal(expr: cst.BaseExpression) -> object:
    if type(expr) is cst.Name:
        return _NAMED.get(expr.value, _NO_VALUE)
    if type(expr) is cst.UnaryOperation and type(expr.operator) in (cst.Minus, cst.Plus) and \
            type(expr.expression) in (cst.Integer, cst.Float):
        value = _literal(expr.expression)
        return -value if type(expr.operator) is cst.Minus else value  # type: ignore[operator]
    if type(expr) in _LITERALS:
        try:
            return ast.literal_eval(expr.value)  # type: ignore[attr-defined]
        except (ValueError, SyntaxError):
            return _NO_VALUE
    return _NO_VALUE


def constant_truth(test: cst.BaseExpression, kinds: Mapping[int, Kind]) -> bool | None:
    """The truth of `test` where literals and values of known constants (their kinds, `kinds` by node) decide it,
    else None."""
    return combined_truth(test, lambda part: _part_truth(part, kinds))


def _part_truth(test: cst.BaseExpression, kinds: Mapping[int, Kind]) -> bool | None:
    if type(test) is cst.Comparison:
        return _comparison(test, kinds)
    value = _value(test, kinds)
    return None if value is _NO_VALUE else bool(value)


def _comparison(test: cst.Comparison, kinds: Mapping[int, Kind]) -> bool | None:
    if len(test.comparisons) != 1:
        return None
    compared = test.comparisons[0]
    left = _value(test.left, kinds)
    how = type(compared.operator)
    if how in (cst.In, cst.NotIn):  # `mode in ("sum", "mean")`: a constant in a literal tuple, list or set
        members = _members(compared.comparator)
        if members is None or left is _NO_VALUE or left is None:
            return None
        return (left in members) is (how is cst.In)
    right = _value(compared.comparator, kinds)
    if left is _NO_VALUE or right is _NO_VALUE:
        return None
    if how in (cst.Is, cst.IsNot):
        if left is not None and right is not None:
            return None  # identity of two values: not a question about None
        return (left is right) is (how is cst.Is)
    decide = _ORDER.get(how)
    if decide is None or left is None or right is None:
        return None
    try:
        return bool(decide(left, right))
    except TypeError:  # `"sum" < 0`: would fail there; not decided here
        return None


def _members(expr: cst.BaseExpression) -> list[object] | None:
    """The values of a tuple, list or set of literals written in the code; None for anything else."""
    if type(expr) not in (cst.Tuple, cst.List, cst.Set):
        return None
    if any(type(e) is cst.StarredElement for e in expr.elements):  # type: ignore[attr-defined]
        return None
    values = [_literal(e.value) for e in expr.elements]  # type: ignore[attr-defined]
    return None if any(v is _NO_VALUE for v in values) else values


def _value(expr: cst.BaseExpression, kinds: Mapping[int, Kind]) -> object:
    """The value of a literal, or of an expression whose kind is a known constant (None for None itself)."""
    literal = _literal(expr)
    if literal is not _NO_VALUE:
        return literal
    if type(expr) is cst.Name and expr.value == "None":
        return None
    kind = kinds.get(id(expr))
    if kind is None:
        return _NO_VALUE
    if is_none(kind):
        return None
    return _NO_VALUE if kind.value is None else kind.value
