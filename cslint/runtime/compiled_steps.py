"""Whether a step runs under `torch.compile`: such a step is a compile root, which dynamo traces, so
`--verify` checks it under dynamo only (the lazy backend would trace a program the target never runs)."""

from __future__ import annotations

import types
from typing import Any


def _compiled(value: Any) -> bool:
    import torch

    if isinstance(value, torch._dynamo.eval_frame.OptimizedModule):
        return True
    # torch.compile(fn) and @torch.compile return a wrapper function carrying the function it compiles
    return isinstance(value, types.FunctionType) and "_torchdynamo_orig_callable" in value.__dict__


def _cells(fn: Any) -> list[Any]:
    values = []
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            values.append(cell.cell_contents)
        except ValueError:  # a cell not yet assigned
            continue
    return values


def is_compiled_step(fn: Any) -> bool:
    """`fn` is a torch.compile product, a method of one, a partial of one, or a closure over one (a step
    calling `model = torch.compile(model)`)."""
    candidates = [fn, getattr(fn, "__self__", None), getattr(fn, "func", None)]
    return any(_compiled(c) for c in candidates + _cells(fn))
