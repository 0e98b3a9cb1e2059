"""Which of NumPy's module-level random functions draw a single Python number, and where their size goes.

`np.random.rand()` and `np.random.uniform(a, b)` return one Python float (`randint(a, b)` an int); given a
size they return an array. The same generator call either way: a size-1 draw's element equals the scalar
draw for every seed (tests/test_numpy_draw_fixes.py checks each function listed).
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

# every positional argument is a dimension: `rand(1)`, `rand(2, 3)`
DIMENSIONS = frozenset({"rand", "randn"})
# the size is the positional argument at this index, or the `size` keyword
SIZE_AT = {"random": 0, "random_sample": 0, "ranf": 0, "sample": 0, "standard_normal": 0,
           "uniform": 2, "normal": 2, "randint": 2}


def size_argument(name: str, args: Sequence[cst.Arg]) -> cst.Arg | None:
    """The argument giving the size of `numpy.random.<name>(*args)` (for `rand`/`randn` the first dimension)."""
    if any(arg.star for arg in args):
        return None
    if name in DIMENSIONS:
        return args[0] if args else None
    if name not in SIZE_AT:
        return None
    positional = [arg for arg in args if arg.keyword is None]
    if len(positional) > SIZE_AT[name]:
        return positional[SIZE_AT[name]]
    return next((arg for arg in args if arg.keyword is not None and arg.keyword.value == "size"), None)


def draws_a_number(name: str, args: Sequence[cst.Arg]) -> bool:
    """Does `numpy.random.<name>(*args)` return one Python number (no size, or `size=None`)?"""
    if any(arg.star for arg in args) or (name not in DIMENSIONS and name not in SIZE_AT):
        return False
    size = size_argument(name, args)
    return size is None or (isinstance(size.value, cst.Name) and size.value.value == "None" and name not in DIMENSIONS)
