"""How many dimensions a traced tensor has, where the code says so without shapes.

Only one question needs it: is an index zero-dimensional? `x[i]` with a 0-dim integer tensor `i` reads its
value on the host (PyTorch turns it into a Python int), while a 1-dim `i` is a gather that stays in the
graph. Ranks are known from full reductions (`t.sum()`, `t.argmax()`), `nonzero()` (2 dimensions; with
`as_tuple=True` a tuple of 1-dim tensors), indexing by integers and `None`, iterating (one dimension less),
dtype casts, and elementwise arithmetic with numbers. Anything else leaves the rank unknown, and unknown is
never a finding.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from cslint.analysis import torch_api as api
from cslint.analysis.kinds import Kind, Tag, sequence_of, tensor

# Tensor methods whose result has the receiver's dimensions.
RANK_PRESERVING_METHODS = frozenset({
    "long", "int", "float", "double", "half", "bfloat16", "bool", "to", "type_as", "clone", "detach",
    "contiguous", "cpu", "cuda", "abs", "neg", "sign", "clamp", "clamp_min", "clamp_max", "round",
})
# Tensor methods and torch functions that reduce every dimension when given nothing but the tensor.
FULL_REDUCTIONS = api.REDUCTIONS | {"argmax", "argmin"}


def number_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, (cst.Minus, cst.Plus)):
        node = node.expression
    return isinstance(node, (cst.Integer, cst.Float))


def elementwise_rank(operator: cst.BaseBinaryOp, operands: Sequence[tuple[cst.BaseExpression, Kind]]) -> int | None:
    """`index + 1`, `a * b`: the largest operand rank; a number literal counts as zero-dimensional."""
    if isinstance(operator, cst.MatrixMultiply):
        return None
    rank = 0
    for node, kind in operands:
        if kind.tag is Tag.TENSOR and kind.rank is not None:
            rank = max(rank, kind.rank)
        elif not number_literal(node):
            return None
    return rank


def subscript_rank(rank: int | None, elements: Sequence[cst.SubscriptElement]) -> int | None:
    """`t[0]`, `t[:, None]`, `t[1:]` on a tensor of `rank` dimensions; unknown for tensor or name indices."""
    if rank is None:
        return None
    for element in elements:
        part = element.slice
        if not isinstance(part, cst.Index):  # a slice
            continue
        value = part.value
        if isinstance(value, cst.Integer) or (isinstance(value, cst.UnaryOperation) and number_literal(value)):
            rank -= 1
        elif isinstance(value, cst.Name) and value.value == "None":
            rank += 1
        else:
            return None
    return rank if rank >= 0 else None


def method_rank(method: str, receiver: Kind, node: cst.Call) -> Kind | None:
    """The result of `receiver.method(...)` when its rank is known, else None."""
    if method in FULL_REDUCTIONS and not node.args:
        return tensor(rank=0)
    if method in ("nonzero", "argwhere"):
        return _nonzero(node.args)
    if method in RANK_PRESERVING_METHODS and receiver.rank is not None:
        return tensor(receiver.dynamic_shape, receiver.rank)
    return None


def function_rank(name: str, node: cst.Call) -> Kind | None:
    """`torch.nonzero(x, as_tuple=True)`, `torch.argmax(x)`: results of torch functions of known rank."""
    if name in ("nonzero", "argwhere"):
        return _nonzero(node.args[1:])
    if name in FULL_REDUCTIONS and len(node.args) == 1 and node.args[0].keyword is None and not node.args[0].star:
        return tensor(rank=0)
    return None


def _nonzero(options: Sequence[cst.Arg]) -> Kind:
    as_tuple = any(a.keyword is not None and a.keyword.value == "as_tuple" for a in options)
    if as_tuple and all(isinstance(a.value, cst.Name) and a.value.value == "True"
                        for a in options if a.keyword is not None and a.keyword.value == "as_tuple"):
        return sequence_of(tensor(True, 1))  # one 1-dim index tensor per dimension
    return tensor(True, None if as_tuple else 2)


PYTHON_NUMBERS = frozenset({"int", "float", "bool", "complex"})


def declared_scalar(kind: Kind, annotation: cst.Annotation | None) -> Kind:
    """A tensor where the code declares a Python number (`timestep: int`, `-> int | torch.Tensor`) stands for
    one number: a zero-dimensional tensor. Other kinds, and other annotations, are returned as they are."""
    if kind.tag is not Tag.TENSOR or kind.rank is not None or annotation is None:
        return kind
    members = _union_members(annotation.annotation)
    names = [_last_name(m) for m in members]
    if any(n in PYTHON_NUMBERS for n in names) and \
            all(n in PYTHON_NUMBERS or n == "None" or (n or "").endswith("Tensor") for n in names):
        return tensor(kind.dynamic_shape, 0)
    return kind


def _union_members(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return _union_members(node.left) + _union_members(node.right)
    if isinstance(node, cst.Subscript) and _last_name(node.value) in ("Union", "Optional"):
        return [m for element in node.slice if isinstance(element.slice, cst.Index)
                for m in _union_members(element.slice.value)]
    return [node]


def _last_name(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.SimpleString):  # `"torch.Tensor"`
        return node.value.strip("'\"").rsplit(".", 1)[-1]
    return None
