"""Tests that hold only off the accelerator, or only for a tensor that already has a given dtype.

`if x.device.type == "cpu": x = x.double()` runs on the host (a traced tensor's device is the lazy or XLA
device, never `cpu`, `cuda` or `mps`), and `if x.dtype == torch.float64:` runs only for a tensor that is
already float64 (made elsewhere, and reported there). The dtype rules (WSC6xx) do not report what such a
branch makes. `which_branch` says which branch of an `if` (or a conditional expression) a test guards.
"""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

HOST_DEVICE_TYPES = frozenset({"cpu", "cuda", "mps"})
HOST_DEVICE_FLAGS = frozenset({"is_cpu", "is_cuda", "is_mps"})

Resolve = Callable[[cst.BaseExpression], "str | None"]


def which_branch(test: cst.BaseExpression, resolve: Resolve, dtypes: frozenset[str]) -> str | None:
    """"body" when `test` holds only off the device or for a tensor of one of `dtypes` (qualified names), so
    the `if` branch is off the traced device graph or dtype-specific; "orelse" when its negation does; else
    None."""
    held = _holds(test, resolve, dtypes)
    return None if held is None else "body" if held else "orelse"


def _holds(test: cst.BaseExpression, resolve: Resolve, dtypes: frozenset[str]) -> bool | None:
    """True when `test` being true means off-device/dtype-specific, False when `test` being false does."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = _holds(test.expression, resolve, dtypes)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = _holds(test.left, resolve, dtypes), _holds(test.right, resolve, dtypes)
        if isinstance(test.operator, cst.And):  # `a and b` true: both hold; false says nothing
            return True if True in (left, right) else None
        return False if False in (left, right) else None  # `a or b` false: neither holds
    if isinstance(test, cst.Attribute) and test.attr.value in HOST_DEVICE_FLAGS:
        return True
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        target = test.comparisons[0]
        positive = isinstance(target.operator, (cst.Equal, cst.Is, cst.In))
        if not positive and not isinstance(target.operator, (cst.NotEqual, cst.IsNot, cst.NotIn)):
            return None
        if _device_test(test.left, target.comparator) or _dtype_test(test.left, target.comparator, resolve, dtypes):
            return positive
    return None


def _device_test(left: cst.BaseExpression, right: cst.BaseExpression) -> bool:
    """`x.device.type == "cpu"`, `x.device == torch.device("cpu")`, `str(x.device) == "cuda"`,
    `x.device.type in ("cpu", "mps")`."""
    names = _strings(right)
    if not names or not names <= HOST_DEVICE_TYPES:
        return False
    if isinstance(left, cst.Call) and isinstance(left.func, cst.Name) and left.func.value == "str" and left.args:
        left = left.args[0].value
    return isinstance(left, cst.Attribute) and (
        left.attr.value == "device" or
        (left.attr.value == "type" and isinstance(left.value, cst.Attribute) and left.value.attr.value == "device"))


def _strings(node: cst.BaseExpression) -> set[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return {value} if isinstance(value, str) else set()
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "device" \
            and len(node.args) == 1:  # torch.device("cpu")
        return _strings(node.args[0].value)
    if isinstance(node, (cst.Tuple, cst.List, cst.Set)):
        found = [_strings(e.value) for e in node.elements]
        return set().union(*found) if found and all(found) else set()
    return set()


def _dtype_test(left: cst.BaseExpression, right: cst.BaseExpression, resolve: Resolve, dtypes: frozenset[str]) -> bool:
    """`x.dtype == torch.float64`, `x.dtype in (torch.float64, torch.complex128)`: every dtype named is one
    of `dtypes`."""
    if not (isinstance(left, cst.Attribute) and left.attr.value == "dtype"):
        return False
    named = [e.value for e in right.elements] if isinstance(right, (cst.Tuple, cst.List, cst.Set)) else [right]
    return bool(named) and all(resolve(n) in dtypes for n in named)
