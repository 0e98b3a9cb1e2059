"""Run steps on PyTorch's lazy-tensor backend (`torch._lazy`, TorchScript backend) and watch, through a
TorchDispatchMode, for everything that forces a value or a shape while the graph is being traced."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch._lazy
import torch._lazy.ts_backend
from torch.utils._python_dispatch import TorchDispatchMode

from cslint.runtime.classify import KIND_DEFAULTS, classify
from cslint.runtime.findings import RuntimeFinding, RuntimeReport
from cslint.runtime.frames import UserFrame, instruction_span, user_frame
from cslint.runtime.targets import Step

aten = torch.ops.aten
_WIDE_DTYPES = {torch.float64, torch.complex64, torch.complex128}
_CONSEQUENCES = {
    "scalar": "the value is frozen at its trace-time value (or the step is split into several graphs)",
    "cpu_copy": "the step waits for the device and the graph is cut",
    "numpy": "the step waits for the device and the graph is cut",
    "dynamic_shape": "a static graph needs fixed shapes",
    "dtype": "the device cannot run it",
}


@dataclass(frozen=True)
class OpRecord:
    """One traced op, as much as decides the graph: the op, its constant arguments and tensor shapes."""
    op: str
    path: str
    line: int
    args: tuple[Any, ...]


def _describe(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), str(value.dtype))
    if isinstance(value, (list, tuple)):
        return tuple(_describe(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str, torch.dtype, torch.device, torch.memory_format)):
        return value if not isinstance(value, (torch.dtype, torch.device, torch.memory_format)) else str(value)
    return type(value).__name__


_initialised = False


def init() -> None:
    global _initialised
    if not _initialised:
        torch._lazy.ts_backend.init()
        _initialised = True


class Watcher(TorchDispatchMode):
    def __init__(self, report: RuntimeReport) -> None:
        super().__init__()
        self.report = report
        self.ops: list[OpRecord] = []

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        frame = user_frame(sys._getframe(1))
        if frame is None:
            return out
        self.ops.append(OpRecord(str(func), frame.path, frame.line,
                                 tuple(_describe(a) for a in args)
                                 + tuple(sorted((k, _describe(v)) for k, v in kwargs.items()))))
        kind = self._kind(func, args, kwargs, out)
        if kind is not None:
            self.event(kind, frame, f"aten.{func.__name__}")
        return out

    @staticmethod
    def _kind(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> str | None:
        if func is aten._local_scalar_dense.default:
            return "scalar"
        if func in (aten._to_copy.default, aten.copy_.default):
            source = args[1] if func is aten.copy_.default else args[0]
            target = args[0].device if func is aten.copy_.default else kwargs.get("device")
            if isinstance(source, torch.Tensor) and source.device.type == "lazy" and \
                    target is not None and torch.device(target).type == "cpu":
                return "cpu_copy"
        if torch.Tag.dynamic_output_shape in func.tags:
            if func is aten.index.Tensor and not any(
                    isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in args[1]):
                return None  # integer indices keep a static shape
            return "dynamic_shape"
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if any(isinstance(o, torch.Tensor) and o.dtype in _WIDE_DTYPES for o in outs):
            return "dtype"
        return None

    def event(self, kind: str, frame: UserFrame, op: str) -> None:
        found = classify(kind, frame.path, instruction_span(frame.code, frame.lasti))
        base = KIND_DEFAULTS[kind][1]
        message = f"{found.what}: {base} ({op}) in `{frame.function}`; {_CONSEQUENCES[kind]}" \
            if found.what != base else f"{base} ({op}) in `{frame.function}`; {_CONSEQUENCES[kind]}"
        self.report.add(RuntimeFinding(found.code, frame.path, frame.line, message, "lazy"))


@contextmanager
def _watching_numpy(watcher: Watcher) -> Iterator[None]:
    """`.numpy()` dispatches no aten op; watch the Python method instead."""
    original = torch.Tensor.numpy

    def numpy(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        frame = user_frame(sys._getframe(1))
        if frame is not None and self.device.type == "lazy":
            watcher.event("numpy", frame, "Tensor.numpy")
            return original(self.cpu(), *args, **kwargs)
        return original(self, *args, **kwargs)

    torch.Tensor.numpy = numpy  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.Tensor.numpy = original  # type: ignore[method-assign]


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in _tensors(v)]
    return []


def run_lazy(step: Step, report: RuntimeReport, progress: Any = None) -> list[list[OpRecord]]:
    """Trace every batch as one lazy step; return each step's op records (for graph stability)."""
    init()
    torch._lazy.mark_step()  # materialise model/data creation so it is not part of the first step's graph
    per_step: list[list[OpRecord]] = []
    hashes: list[bytes] = []
    for index, batch in enumerate(step.batches):
        watcher = Watcher(report)
        with _watching_numpy(watcher), watcher:
            out = step.fn(*batch)
        outputs = _tensors(out) or [t for t in _tensors(batch) if t.device.type == "lazy"]
        lazy_outputs = [t for t in outputs if t.device.type == "lazy"]
        hashes.append(torch._C._lazy._get_graph_hash(lazy_outputs) if lazy_outputs else b"")
        torch._lazy.mark_step()
        per_step.append(watcher.ops)
        if progress is not None:
            progress(f"lazy step {index + 1}/{len(step.batches)}")
    if len(set(hashes)) > 1:
        report.notes.append(f"lazy backend: the traced graph hash changed across {len(hashes)} steps")
    return per_step
