"""Rewrite 64-bit float dtypes in traced code to float32.

`torch.float64` / `torch.double` -> `torch.float32`, `t.double()` -> `t.float()`, `dtype=float` (which torch
reads as float64) -> `dtype=torch.float32`, `torch.DoubleTensor` -> `torch.FloatTensor`. Always unsafe: the
values are computed in single precision afterwards, which changes numerics (that is the point, but a
person should check the code did not rely on the extra precision, e.g. to accumulate a long sum).
"""

from __future__ import annotations

import libcst as cst

from cslint.rule_api.context import RuleContext

from cslint.rule_api.findings import Fix

FLOAT32_SPELLING = {"float64": "float32", "double": "float32", "DoubleTensor": "FloatTensor"}


def dtype_attribute_fix(node: cst.Attribute) -> Fix | None:
    """`torch.float64` -> `torch.float32` keeping the module spelling (`T.double` -> `T.float32`)."""
    new = FLOAT32_SPELLING.get(node.attr.value)
    if new is None:
        return None
    return Fix("unsafe", f"Use `{new}` (single precision: numerics change)",
               [(node, node.with_changes(attr=cst.Name(new)))])


def double_method_fix(call: cst.Call) -> Fix | None:
    """`t.double()` -> `t.float()`."""
    func = call.func
    if not isinstance(func, cst.Attribute) or call.args:
        return None
    return Fix("unsafe", "Use `.float()` (single precision: numerics change)",
               [(func.attr, cst.Name("float"))])


def python_float_dtype_fix(value: cst.Name, ctx: RuleContext) -> Fix:
    """`dtype=float` / `.to(float)` -> `torch.float32`."""
    torch, imports = ctx.torch_name()
    replacement = cst.Attribute(value=cst.Name(torch), attr=cst.Name("float32"))
    return Fix("unsafe", f"Use `{torch}.float32` (Python `float` means float64 to torch)",
               [(value, replacement)], imports)
