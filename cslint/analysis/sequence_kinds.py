"""What operators and slices make of tuples and lists: `a + b` concatenates, `t[1:]` is a shorter tuple, not
one of its elements."""

from __future__ import annotations

import libcst as cst

from cslint.analysis.kinds import MAPPING, Kind, Tag, combine, concatenation, element_of, sequence_of, \
    starting_with, tuple_of


def operation(operator: cst.BaseBinaryOp | cst.BaseAugOp, left: Kind, right: Kind) -> Kind:
    """The kind of `left <operator> right` (or `left <operator>= right`): a concatenation for `+` on two tuples
    or lists, else arithmetic."""
    if type(operator) in (cst.Add, cst.AddAssign) and _ordered(left) and _ordered(right):
        return concatenation(left, right)
    return combine(left, right)


def slice_of(base: Kind, part: cst.Slice) -> Kind:
    """`base[lower:upper]` of a tuple or list: the positions it keeps, where the bounds are literals."""
    if not _ordered(base):
        return element_of(base)
    lower, upper = _bound(part.lower), _bound(part.upper)
    whole = base.items is not None and not base.prefix
    if base.items is not None and part.step is None and lower is not None and upper is not None:
        start, stop = lower[0], upper[0]
        if whole:
            return tuple_of(*base.items[start:stop])
        if stop is None and 0 <= (start or 0) < len(base.items):  # a prefix keeps its positions from the start
            return starting_with(base.items[start:], element_of(base))
    return sequence_of(element_of(base), base.dynamic_shape)


def literal_int(node: cst.BaseSlice) -> int | None:
    """The index of `t[2]` or `t[-1]`; None for any other subscript."""
    if not isinstance(node, cst.Index):
        return None
    value = node.value
    if isinstance(value, cst.UnaryOperation) and isinstance(value.operator, cst.Minus) and \
            isinstance(value.expression, cst.Integer):
        return -int(value.expression.value)
    return int(value.value) if isinstance(value, cst.Integer) else None


def _bound(node: cst.BaseExpression | None) -> tuple[int | None] | None:
    """(n,) for a literal bound n, (None,) for a missing one, None when it is not known."""
    if node is None:
        return (None,)
    value = literal_int(cst.Index(node))
    return None if value is None else (value,)


def _ordered(kind: Kind) -> bool:
    return kind.tag is Tag.SEQUENCE and kind.role != MAPPING
