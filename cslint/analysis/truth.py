"""The truth of a test built with `not`, `and` and `or` from parts some analysis decides.

A part decided True or False, or left undecided (None), by the analysis's own question (a None compared with
None: none_arguments.py; a constant compared with a literal: constant_tests.py); the test is decided where
Python's short-circuit rules make the undecided parts irrelevant (`True or x`, `False and x`).
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst


def combined_truth(test: cst.BaseExpression, part: Callable[[cst.BaseExpression], bool | None]) -> bool | None:
    """The truth of `test`, where `part` decides (or not) each operand that is not a `not`/`and`/`or`."""
    kind = type(test)
    if kind is cst.UnaryOperation and type(test.operator) is cst.Not:  # type: ignore[attr-defined]
        inner = combined_truth(test.expression, part)  # type: ignore[attr-defined]
        return None if inner is None else not inner
    if kind is cst.BooleanOperation:
        is_or = type(test.operator) is cst.Or  # type: ignore[attr-defined]
        left = combined_truth(test.left, part)  # type: ignore[attr-defined]
        if left is is_or:  # `True or ...`, `False and ...`
            return left
        right = combined_truth(test.right, part)  # type: ignore[attr-defined]
        if right is is_or:
            return right
        return right if left is not None else None
    return part(test)
