"""Ops the TorchScript lazy backend has no kernel for, built from ops it has, so they stay in the trace.

Without a kernel the backend runs an op on the CPU: `split`/`chunk`/`unbind` then return CPU tensors (the
rest of the step would leave the device), and every other such op first executes the whole pending graph
for its inputs. AdamW's `lerp` does that once per parameter and step, which made most of the checker's
time. Those are limits of the reference backend, not of a static-graph device, which has these ops; the
checker records the op the step dispatched (`aten.lerp.Scalar`), not the replacement.

Inside the dispatch mode the tensors are the lazy backend's own (below functionalization): a view of them
fails ("aten::as_strided ... no implementation for lazy"), so the replacements use `*_copy` ops only.
"""

from __future__ import annotations

import math
from typing import Any

import torch

aten = torch.ops.aten


def _split_with_sizes(tensor: torch.Tensor, sizes: list[int], dim: int = 0) -> list[torch.Tensor]:
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [aten.slice_copy.Tensor(tensor, dim, start, start + size) for start, size in zip(starts, sizes)]


def _split(tensor: torch.Tensor, size: int, dim: int = 0) -> list[torch.Tensor]:
    length = tensor.shape[dim]
    return _split_with_sizes(tensor, [min(size, length - start) for start in range(0, length, size)] or [0], dim)


def _unbind(tensor: torch.Tensor, dim: int = 0) -> list[torch.Tensor]:
    return [aten.select_copy.int(tensor, dim, index) for index in range(tensor.shape[dim])]


def _lerp(start: torch.Tensor, end: torch.Tensor, weight: Any) -> torch.Tensor:
    return aten.add.Tensor(start, aten.mul.Tensor(aten.sub.Tensor(end, start), weight))


def _where(condition: torch.Tensor, chosen: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """Each side with the other side's positions zeroed, summed: exact also for inf and nan on the side not
    chosen (a product with the mask would turn them into nan)."""
    shape = torch.broadcast_shapes(condition.shape, chosen.shape, other.shape)
    dtype = torch.result_type(chosen, other)
    condition = aten.expand_copy.default(condition, shape)
    chosen = aten.expand_copy.default(aten._to_copy.default(chosen, dtype=dtype), shape)
    other = aten.expand_copy.default(aten._to_copy.default(other, dtype=dtype), shape)
    return aten.add.Tensor(aten.masked_fill.Scalar(chosen, aten.eq.Scalar(condition, False), 0),
                           aten.masked_fill.Scalar(other, condition, 0))


def _isneginf(tensor: torch.Tensor) -> torch.Tensor:
    return aten.eq.Scalar(tensor, -math.inf)


def _all_dim(tensor: torch.Tensor, dim: int, keepdim: bool = False) -> torch.Tensor:
    falses = aten.sum.dim_IntList(aten.eq.Scalar(tensor, 0), [dim], keepdim)
    return aten.eq.Scalar(falses, 0)


def _sin(tensor: torch.Tensor) -> torch.Tensor:
    return aten.cos.default(aten.sub.Tensor(tensor, math.pi / 2))


def _rows(tensor: torch.Tensor, indices: list[Any]) -> torch.Tensor | None:
    """Integer indices of one length over the leading dims as row numbers into `tensor` viewed as (rows,
    rest): the MoE expert loop's `hidden[token]`, `weights[token, slot]`. None for any other indexing."""
    if not indices or any(not isinstance(i, torch.Tensor) or i.dtype not in (torch.int64, torch.int32)
                          or i.dim() != 1 or i.shape[0] != indices[0].shape[0] for i in indices):
        return None
    rows = None
    for dim, index in enumerate(indices):
        size = tensor.shape[dim]
        index = aten.add.Tensor(index, aten.mul.Tensor(aten.lt.Scalar(index, 0), size))  # -1 is the last
        rows = index if rows is None else aten.add.Tensor(aten.mul.Tensor(rows, size), index)
    return rows


def _index(tensor: torch.Tensor, indices: list[Any]) -> torch.Tensor:
    rows = _rows(tensor, indices)
    if rows is None:
        return aten.index.Tensor(tensor, indices)
    flat = aten.view_copy.default(tensor, [-1, *tensor.shape[len(indices):]])
    return aten.index_select.default(flat, 0, rows)


def _index_put(tensor: torch.Tensor, indices: list[Any], values: torch.Tensor,
               accumulate: bool = False) -> torch.Tensor:
    """`accumulate=True` (the gradient of an index, `index_put_(..., accumulate=True)`) as a scatter-add."""
    rows = _rows(tensor, indices) if accumulate else None
    if rows is None:
        return aten.index_put.default(tensor, indices, values, accumulate)
    rest = list(tensor.shape[len(indices):])
    flat = aten.view_copy.default(tensor, [-1, *rest])
    shape = [rows.shape[0], *rest]
    where = aten.expand_copy.default(aten.view_copy.default(rows, [rows.shape[0]] + [1] * len(rest)), shape)
    values = aten.expand_copy.default(aten._to_copy.default(values, dtype=tensor.dtype), shape)
    return aten.view_copy.default(aten.scatter_add.default(flat, 0, where, values), list(tensor.shape))


REPLACEMENTS = {
    aten.split_copy.Tensor: _split, aten.split_with_sizes_copy.default: _split_with_sizes,
    aten.unbind_copy.int: _unbind, aten.unsafe_split.Tensor: _split,
    aten.unsafe_split_with_sizes.default: _split_with_sizes,
    aten.lerp.Scalar: _lerp, aten.lerp.Tensor: _lerp, aten.where.self: _where, aten.isneginf.default: _isneginf,
    aten.all.dim: _all_dim, aten.sin.default: _sin, aten.index.Tensor: _index, aten.index_put.default: _index_put,
}
