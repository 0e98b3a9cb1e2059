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


REPLACEMENTS = {
    aten.split_copy.Tensor: _split, aten.split_with_sizes_copy.default: _split_with_sizes,
    aten.unbind_copy.int: _unbind, aten.unsafe_split.Tensor: _split,
    aten.unsafe_split_with_sizes.default: _split_with_sizes,
    aten.lerp.Scalar: _lerp, aten.lerp.Tensor: _lerp, aten.where.self: _where, aten.isneginf.default: _isneginf,
    aten.all.dim: _all_dim, aten.sin.default: _sin,
}
