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


def _zeros(shape: list[int], dtype: torch.dtype, like: torch.Tensor) -> torch.Tensor:
    return aten.zero_.default(aten.empty.memory_format(shape, dtype=dtype, device=like.device))


def _safe_softmax(tensor: torch.Tensor, dim: int, dtype: torch.dtype | None = None) -> torch.Tensor:
    """Softmax with the rows that are all `-inf` (a fully masked query in SDPA) set to 0 instead of nan."""
    source = tensor if dtype is None else aten._to_copy.default(tensor, dtype=dtype)
    out = aten._softmax.default(source, dim, False)
    return aten.masked_fill.Scalar(out, _all_dim(_isneginf(tensor), dim, True), 0)


def _copy(tensor: torch.Tensor, source: torch.Tensor, non_blocking: bool = False) -> torch.Tensor:
    """`x[..., 1:] = y` after functionalization: `source` in `tensor`'s dtype and shape, on its device."""
    if tensor.device.type != "lazy":
        return aten.copy.default(tensor, source, non_blocking)
    moved = aten._to_copy.default(source, dtype=tensor.dtype, device=tensor.device)
    return aten.expand_copy.default(moved, list(tensor.shape))


def _index_add(tensor: torch.Tensor, dim: int, index: torch.Tensor, source: torch.Tensor,
               alpha: Any = 1) -> torch.Tensor:
    """A scatter-add of `source` along `dim` at the rows `index` names (an MoE layer's `out.index_add_`)."""
    if source.dim() == 0:
        return aten.index_add.default(tensor, dim, index, source, alpha=alpha)
    dim = dim % source.dim()
    along = [1] * source.dim()
    along[dim] = -1
    where = aten.expand_copy.default(aten.view_copy.default(index, along), list(source.shape))
    if alpha != 1:
        source = aten.mul.Tensor(source, alpha)
    return aten.scatter_add.default(tensor, dim, where, source)


def _hits(tensor: torch.Tensor, dim: int, index: torch.Tensor) -> torch.Tensor:
    """How many times `scatter(tensor, dim, index, ...)` writes each position of `tensor`."""
    ones = aten.fill_.Scalar(aten.empty.memory_format(list(index.shape), dtype=torch.int64, device=index.device), 1)
    return aten.scatter_add.default(_zeros(list(tensor.shape), torch.int64, tensor), dim, index, ones)


def _scatter_value(tensor: torch.Tensor, dim: int, index: torch.Tensor, value: Any) -> torch.Tensor:
    """`one_hot` and other fills of the positions `index` names."""
    return aten.masked_fill.Scalar(tensor, aten.gt.Scalar(_hits(tensor, dim, index), 0), value)


def _scatter_src(tensor: torch.Tensor, dim: int, index: torch.Tensor, src: torch.Tensor) -> torch.Tensor:
    """Each position `index` names takes its value from `src` (the gradient of `topk`). Exact when no position
    is named twice; PyTorch leaves which write wins unspecified otherwise, and this takes their mean."""
    if tensor.dtype == torch.bool or tensor.is_complex():
        return aten.scatter.src(tensor, dim, index, src)
    hits = _hits(tensor, dim, index)
    sums = aten.scatter_add.default(_zeros(list(tensor.shape), tensor.dtype, tensor), dim, index,
                                    aten._to_copy.default(src, dtype=tensor.dtype))
    each = aten.clamp_min.default(hits, 1)
    values = aten.div.Tensor(sums, each) if tensor.is_floating_point() else \
        aten.div.Tensor_mode(sums, each, rounding_mode="floor")
    return _where(aten.gt.Scalar(hits, 0), values, tensor)


def _rows(tensor: torch.Tensor, indices: list[Any]) -> tuple[torch.Tensor, list[int]] | None:
    """Integer indices over the leading dims, broadcast together, as row numbers into `tensor` viewed as (rows,
    rest), with their broadcast shape: the MoE expert loop's `hidden[token]`, `weights[token, slot]`, the mask
    helpers' `padding_mask[batch_idx, kv_idx]`. None for any other indexing (slices, boolean masks)."""
    if not indices or len(indices) > tensor.dim() or any(
            not isinstance(i, torch.Tensor) or i.dtype not in (torch.int64, torch.int32) for i in indices):
        return None
    shape = list(torch.broadcast_shapes(*(i.shape for i in indices)))
    rows = None
    for dim, index in enumerate(indices):
        size = tensor.shape[dim]
        index = aten.add.Tensor(index, aten.mul.Tensor(aten.lt.Scalar(index, 0), size))  # -1 is the last
        rows = index if rows is None else aten.add.Tensor(aten.mul.Tensor(rows, size), index)
    assert rows is not None
    return aten.view_copy.default(aten.expand_copy.default(rows, shape), [-1]), shape


def _index(tensor: torch.Tensor, indices: list[Any]) -> torch.Tensor:
    found = _rows(tensor, indices)
    if found is None:
        return aten.index.Tensor(tensor, indices)
    rows, shape = found
    rest = list(tensor.shape[len(indices):])
    flat = aten.view_copy.default(tensor, [-1, *rest])
    return aten.view_copy.default(aten.index_select.default(flat, 0, rows), shape + rest)


def _index_put(tensor: torch.Tensor, indices: list[Any], values: torch.Tensor,
               accumulate: bool = False) -> torch.Tensor:
    """A scatter-add (`accumulate=True`, the gradient of an index) or a scatter into the rows named."""
    found = _rows(tensor, indices)
    if found is None:
        return aten.index_put.default(tensor, indices, values, accumulate)
    rows, shape = found
    rest = list(tensor.shape[len(indices):])
    flat = aten.view_copy.default(tensor, [-1, *rest])
    every = [rows.shape[0], *rest]
    where = aten.expand_copy.default(aten.view_copy.default(rows, [rows.shape[0]] + [1] * len(rest)), every)
    values = aten.expand_copy.default(aten._to_copy.default(values, dtype=tensor.dtype), shape + rest)
    values = aten.view_copy.default(values, every)
    put = aten.scatter_add.default(flat, 0, where, values) if accumulate else _scatter_src(flat, 0, where, values)
    return aten.view_copy.default(put, list(tensor.shape))


REPLACEMENTS = {
    aten.split_copy.Tensor: _split, aten.split_with_sizes_copy.default: _split_with_sizes,
    aten.unbind_copy.int: _unbind, aten.unsafe_split.Tensor: _split,
    aten.unsafe_split_with_sizes.default: _split_with_sizes,
    aten.lerp.Scalar: _lerp, aten.lerp.Tensor: _lerp, aten.where.self: _where, aten.isneginf.default: _isneginf,
    aten.all.dim: _all_dim, aten.sin.default: _sin, aten.index.Tensor: _index, aten.index_put.default: _index_put,
    aten._safe_softmax.default: _safe_softmax, aten.copy.default: _copy, aten.index_add.default: _index_add,
    aten.scatter.value: _scatter_value, aten.scatter.src: _scatter_src,
}
