"""Run steps under fake tensors (`FakeTensorMode`, the machinery PyTorch maintains for non-strict
`torch.export`), with the real values propagated alongside, and watch for everything that forces a value
or a shape while the step is traced.

A fake tensor has a shape and a dtype but no values, which is what a static-graph trace sees. Alone, it
stops the run at the first value the step reads. With `fake_tensor_propagate_real_tensors` (what
`torch.export.draft_export` uses) each fake tensor also carries the real tensor its ops computed, so the
watcher, which sits above the fake mode, answers each read with the real value, records it at the user's
line and lets the step go on: every site in one run, as the lazy backend finds them. A value-dependent
shape (`nonzero`, a boolean mask) is recorded the same way and given its real shape, so the rest of the step
keeps static shapes, as a device trace would after it ran the op on the host.

The step is built under the fake mode too (its model, optimizer and data are fake tensors); while it is
built, reads are answered but not recorded. Fake tensors live on the CPU device, so a copy to the host
(`.cpu()`, `.to("cpu")`, `.tolist()`, `.numpy()`, printing a tensor) dispatches nothing: those are
watched as Python methods.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
import torch._functorch.config
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._python_dispatch import _disable_current_modes
from torch.utils._pytree import tree_map

from cslint.runtime.findings import RuntimeReport
from cslint.runtime.classify import names_the_cpu
from cslint.runtime.frames import instruction_span, user_frame
from cslint.runtime.lazy_backend import OpRecord, Watcher, tensors, watching_numpy, watching_optimizers
from cslint.runtime.step_factory import Step, build

aten = torch.ops.aten


class FakeTraceError(RuntimeError):
    """A fake tensor without the real tensor it stands for: its value cannot be read to go on."""


def _real(value: Any) -> Any:
    if isinstance(value, FakeTensor):
        if value.real_tensor is None:
            raise FakeTraceError("a fake tensor lost its real value (an op PyTorch could not run for real), "
                                 "so a read of it cannot be answered")
        return value.real_tensor
    return value


class FakeWatcher(Watcher):
    backend = "fake"

    def __init__(self, report: RuntimeReport, mode: FakeTensorMode, recording: bool = True) -> None:
        super().__init__(report)
        self.mode = mode
        self.recording = recording  # False while the step is built: reads are answered, not reported

    def on_device(self, tensor: torch.Tensor) -> bool:
        return isinstance(tensor, FakeTensor)

    def host_copy(self, tensor: torch.Tensor) -> torch.Tensor:
        return _real(tensor).detach().clone()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        fake_inputs = any(isinstance(t, FakeTensor) for t in tensors((args, kwargs)))
        reads = fake_inputs and (func is aten._local_scalar_dense.default
                                 or torch.Tag.dynamic_output_shape in func.tags)
        out = self._on_real(func, args, kwargs) if reads else func(*args, **kwargs)
        if self.recording:
            self.record(func, args, kwargs, out, sys._getframe(1))
        return out

    def _on_real(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """A value read (`.item()`, `if t:`) or a value-dependent shape, computed on the real tensors: a Python
        number, or fake tensors of the real result's shape."""
        real_args, real_kwargs = tree_map(_real, (args, kwargs))
        with _disable_current_modes():
            real_out = func(*real_args, **real_kwargs)
        if func is aten._local_scalar_dense.default:
            return real_out
        return tree_map(lambda t: self.mode.from_tensor(t) if isinstance(t, torch.Tensor) else t, real_out)


def _parse_to(*args: Any, **kwargs: Any) -> torch.device | None:
    device = torch._C._nn._parse_to(*args, **kwargs)[0]
    return torch.device(device) if device is not None else None


@contextmanager
def watching_host_copies(watcher: FakeWatcher) -> Iterator[None]:
    """`.cpu()`, `.to("cpu")`, `.tolist()` and `repr()` of a fake tensor on the CPU device dispatch no op, or
    none that reads a value: watch them as methods of FakeTensor; each is answered from the real tensor.
    The step's own device is the CPU too, so `.to(device)` is a copy to the host only where the source
    names the CPU (`.to("cpu")`); `.to(other_tensor.device)` to the CPU is not seen."""
    inherited = {name: getattr(FakeTensor, name) for name in ("cpu", "to", "tolist", "__repr__")}
    own = {name: FakeTensor.__dict__[name] for name in inherited if name in FakeTensor.__dict__}

    def host(what: str) -> None:
        start = sys._getframe(2)
        frame = user_frame(start)
        if frame is not None and watcher.recording:
            watcher.event("cpu_copy", frame, what, start)

    def cpu(self: FakeTensor, *args: Any, **kwargs: Any) -> Any:
        host("Tensor.cpu")
        return inherited["cpu"](self, *args, **kwargs)

    def to(self: FakeTensor, *args: Any, **kwargs: Any) -> Any:
        caller = sys._getframe(1)
        if _parse_to(*args, **kwargs) == torch.device("cpu") and \
                names_the_cpu(caller.f_code.co_filename, instruction_span(caller.f_code, caller.f_lasti)):
            host("Tensor.to")
        return inherited["to"](self, *args, **kwargs)

    def tolist(self: FakeTensor) -> Any:
        host("Tensor.tolist")
        return _real(self).tolist()

    def fake_repr(self: FakeTensor, *args: Any, **kwargs: Any) -> str:
        if self.real_tensor is None:
            return str(inherited["__repr__"](self, *args, **kwargs))
        host("Tensor.__repr__")
        return repr(self.real_tensor)

    for name, method in (("cpu", cpu), ("to", to), ("tolist", tolist), ("__repr__", fake_repr)):
        setattr(FakeTensor, name, method)
    try:
        yield
    finally:
        for name in inherited:
            if name in own:
                setattr(FakeTensor, name, own[name])
            else:
                delattr(FakeTensor, name)


@contextmanager
def converting_in_place() -> Iterator[None]:
    """`model.to(device)`, `.float()` and the like without `swap_tensors`, which refuses fake tensors (the fake
    mode holds weak references to them): a parameter the conversion leaves as it is stays the same object;
    a changed one is a new Parameter in its place, as `Module._apply` did before swapping (an optimizer made
    before the conversion keeps the old one; converting first is the usual order)."""
    original = torch.nn.Module._apply

    def apply(self: torch.nn.Module, fn: Any, recurse: bool = True) -> torch.nn.Module:
        if recurse:
            for child in self.children():
                child._apply(fn)
        for key, param in self._parameters.items():
            if param is None:
                continue
            with torch.no_grad():
                applied = fn(param)
            if applied is not param:
                self._parameters[key] = torch.nn.Parameter(applied, requires_grad=param.requires_grad)
        for key, buffer in self._buffers.items():
            if buffer is not None:
                self._buffers[key] = fn(buffer)
        return self

    torch.nn.Module._apply = apply  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module._apply = original  # type: ignore[method-assign]


class _RealValuedMode(FakeTensorMode):
    """No constant fake tensors: the fake mode computes an op on small constants (`torch.tensor(0.0)`, an
    optimizer's `step`) apart from the real tensors, so an in-place update of one (`step += 1`) left its real
    value behind, and the next read of it (Adam's `step.item()`) answered the stale value."""

    def may_turn_const(self, t: torch.Tensor) -> bool:
        return False


@contextmanager
def fake_mode() -> Iterator[FakeTensorMode]:
    """A fake-tensor mode that keeps each fake tensor's real value (static shapes: no symbolic sizes)."""
    with torch._functorch.config.patch(fake_tensor_propagate_real_tensors=True), converting_in_place():
        yield _RealValuedMode(allow_non_fake_inputs=True)


def build_fake(factory: Any, mode: FakeTensorMode, report: RuntimeReport) -> Step:
    """The factory's step with its model, optimizer and data made under the fake mode (for the CPU device)."""
    with mode, FakeWatcher(report, mode, recording=False):
        step = build(factory, "cpu", move=False)
    assert isinstance(step, Step)
    return step


def trace_fake(step: Step, mode: FakeTensorMode, report: RuntimeReport,
               progress: Any = None) -> list[list[OpRecord]]:
    """Trace every batch of a step built by `build_fake`; return each batch's op records (for graph stability).

    The ops of an optimizer step that created state are left out of the records: that instability is
    reported as WSC301 at the `opt.step()` line.
    """
    per_step: list[list[OpRecord]] = []
    created_state = False
    for index, batch in enumerate(step.batches):
        watcher = FakeWatcher(report, mode)
        with mode, watching_optimizers(watcher), watching_numpy(watcher), watching_host_copies(watcher), watcher:
            step.fn(*batch)
        created_state = created_state or watcher.created_state
        per_step.append(watcher.ops)
        if progress is not None:
            progress(f"fake step {index + 1}/{len(step.batches)}")
    if created_state:
        per_step = [[op for op in ops if not op.in_optimizer_step] for ops in per_step]
    return per_step


def run_fake(factory: Any, report: RuntimeReport, progress: Any = None) -> tuple[Step, list[list[OpRecord]]]:
    """Build the step under fake tensors and trace every batch; return the step and each batch's op records."""
    with fake_mode() as mode:
        torch.manual_seed(0)
        step = build_fake(factory, mode, report)
        return step, trace_fake(step, mode, report, progress)
