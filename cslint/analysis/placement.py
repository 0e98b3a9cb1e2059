"""Where a tensor made inside the traced step lives: on the CPU, or on the device.

Under a lazy-tensor tracer (wsc, xla, rdu) a tensor made without a device (`torch.ones(n, dtype=int)`,
`torch.arange(k)`, `torch.zeros(n)`) is an eager CPU tensor, and so is what is computed from such tensors alone
(`.long()`, `torch.max(t)`, `t == 1`, `t[0]`, `torch.cat((a, b))`). Copying one to Python (`.tolist()`,
`.numpy()`, `.cpu()`) waits for no device and cuts no graph: `cslint runtime --backend lazy` on self-written steps
reports none of them, and does report the same copies of a device tensor (#36 F5, snntorch's target encoders:
`[n] + torch.ones(len(x.size()), dtype=int).tolist()` to build a `repeat` tuple). Its scalar reads (`.item()`,
`int()`, a branch on it, `in`, `nonzero`) the runtime still reports (the value is frozen at its trace-time value),
and under torch.compile dynamo traces the same calls, so every read of one is a break there: the mark is given
only under lazy tracers, and only copies to the host look at it.

A tensor is on the CPU when something shows it: a factory call with no `device=` (or `device="cpu"`), or an
operation whose tensor operands are all on the CPU. A device move (`.to(x.device)`, `.to(device)`, `.cuda()`),
a `*_like` or `new_*` of a device tensor, a join with a device tensor, or any tensor of unknown origin is on the
device, as every tensor was before.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from cslint.analysis.kinds import Kind, Tag, members
from cslint.analysis.syntax import string_value

# torch functions that make a tensor from Python values alone, on the CPU unless a device is named
FACTORIES = frozenset({
    "torch.ones", "torch.zeros", "torch.full", "torch.empty", "torch.eye", "torch.arange", "torch.range",
    "torch.linspace", "torch.logspace", "torch.tensor", "torch.as_tensor", "torch.scalar_tensor", "torch.rand",
    "torch.randn", "torch.randint", "torch.randperm", "torch.Tensor", "torch.LongTensor", "torch.FloatTensor",
    "torch.IntTensor", "torch.BoolTensor",
})
# Tensor methods that copy a tensor to the host: of one made on the CPU, they read nothing from the device
COPIES = frozenset({"tolist", "numpy", "cpu"})
# Tensor methods that may move it (`.to(x.device)`, `.to(other)`): on the CPU only where every argument says so
_MOVES = frozenset({"to", "type", "type_as", "new_tensor"})


def on_cpu(kind: Kind) -> Kind:
    """The same tensor, marked as made on the CPU."""
    return replace(kind, on_cpu=True) if kind.tag is Tag.TENSOR and not kind.on_cpu else kind


def placed_call(qualified: str, node: cst.Call, arg_kinds: list[Kind], kind: Kind) -> Kind:
    """The result (`kind`) of a torch function: on the CPU where no device is named and it is a factory, or its
    tensor arguments (in lists and tuples too: `torch.cat((a, b))`) are all on the CPU."""
    if kind.tag is not Tag.TENSOR or not qualified.startswith("torch.") or _names_a_device(node):
        return kind
    if qualified in FACTORIES and not any(_tensors(k) for k in arg_kinds):
        return on_cpu(kind)
    tensors = [t for k in arg_kinds for t in _tensors(k)]
    return on_cpu(kind) if tensors and all(t.on_cpu for t in tensors) else kind


def placed_method(method: str, receiver: Kind, node: cst.Call, arg_kinds: list[Kind], kind: Kind) -> Kind:
    """The result (`kind`) of a method of a CPU tensor (`receiver`): on the CPU unless it may move it or takes a
    tensor that is not."""
    if not receiver.on_cpu or kind.tag is not Tag.TENSOR or _names_a_device(node):
        return kind
    if method in _MOVES and any(arg.keyword is None and not _a_dtype(arg.value) for arg in node.args):
        return kind  # `.to(x.device)`, `.to(device)`, `.to(other)`, `.cuda()`: wherever that is
    if method == "cuda":
        return kind
    if any(t.tag is Tag.TENSOR and not t.on_cpu for k in arg_kinds for t in _tensors(k)):
        return kind
    return on_cpu(kind)


def placed_operation(kind: Kind, *operands: Kind) -> Kind:
    """The result (`kind`) of arithmetic, a comparison or an index on `operands`: on the CPU where every tensor
    among them is."""
    if kind.tag is not Tag.TENSOR or kind.on_cpu:
        return kind
    tensors = [t for k in operands for t in _tensors(k)]
    return on_cpu(kind) if tensors and all(t.on_cpu for t in tensors) else kind


def _tensors(kind: Kind) -> list[Kind]:
    if kind.tag is Tag.TENSOR:
        return [kind]
    if kind.tag is Tag.SEQUENCE:
        return [t for k in members(kind) for t in _tensors(k)]
    return []


def _names_a_device(node: cst.Call) -> bool:
    """`device=...` other than the CPU."""
    for arg in node.args:
        if arg.keyword is not None and arg.keyword.value == "device":
            return (string_value(arg.value) or "").split(":")[0] != "cpu"
    return False


def _a_dtype(expr: cst.BaseExpression) -> bool:
    """`torch.long`, `torch.float32`, `int`, `float`: an argument of `.to()` that names a dtype, not a place."""
    if type(expr) is cst.Name:
        return expr.value in ("int", "float", "bool", "complex")
    return type(expr) is cst.Attribute and type(expr.value) is cst.Name and expr.value.value == "torch" and \
        expr.attr.value not in ("device",)
