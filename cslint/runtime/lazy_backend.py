"""Run steps on PyTorch's lazy-tensor backend (`torch._lazy`, TorchScript backend) and watch, through a
TorchDispatchMode, for everything that forces a value or a shape while the graph is being traced."""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

import torch
import torch._lazy
import torch._lazy.ts_backend
from torch.optim.optimizer import register_optimizer_step_post_hook, register_optimizer_step_pre_hook
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

from cslint.runtime.classify import KIND_DEFAULTS, classify, host_op, state_created_in_step, torch_value_check
from cslint.runtime.findings import RuntimeFinding, RuntimeReport
from cslint.runtime.host_runs import HostRuns
from cslint.runtime.on_device import REPLACEMENTS
from cslint.runtime.frames import UserFrame, call_chain, instruction_span, is_library_file, is_plumbing, user_frame
from cslint.runtime.optimizer_check import StateRecorder, class_files, recording_state
from cslint.runtime.step_factory import Step
from cslint.runtime.wording import op_words

aten = torch.ops.aten
_WIDE_DTYPES = {torch.float64, torch.complex64, torch.complex128}
_CONSEQUENCES = {
    "scalar": "the value is frozen at its trace-time value (or the step is split into several graphs)",
    "cpu_copy": "the step waits for the device and the graph is cut",
    "numpy": "the step waits for the device and the graph is cut",
    "dynamic_shape": "a static graph needs fixed shapes",
    "boolean_index": "a static graph needs fixed shapes",
    "boolean_store": "the device lowers it through a value-dependent index (the backend ran it on the CPU)",
    "dtype": "the device cannot run it",
    "host_op": "the step waits for the device and the graph is cut",
}
# The kinds whose words do not say which call did it (a value read, a copy to the CPU, a mask say it).
_OP_UNSAID = {"dynamic_shape", "dtype", "host_op"}


@dataclass(frozen=True)
class OpRecord:
    """One traced op, as much as decides the graph: the op, its constant arguments and tensor shapes."""
    op: str
    path: str
    line: int
    args: tuple[Any, ...]
    in_optimizer_step: bool = False


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


class LeftTheDevice(RuntimeError):
    """An op given lazy tensors returned CPU tensors: the rest of the step would not be traced."""


# Functionalization's own copies (and its view copies, by tag): they come and go with in-place updates of the
# parameters, not with the step. A view given a changed Python size still shows in the shapes of the next op.
_BOOKKEEPING = {aten.detach_copy.default, aten.detach.default, aten.alias_copy.default, aten.alias.default,
                aten.lift_fresh.default, aten.lift_fresh_copy.default}
# Ops that read a lazy tensor to the host on purpose; they are findings of their own.
_HOST_READS = {aten._local_scalar_dense.default, aten._to_copy.default, aten.copy_.default}


def _needs_the_host(func: Any) -> bool:
    """An op no static graph holds, whose result is a Python value (`torch.equal`, tagged so) or a check on a
    tensor's value raised on the host (`torch._assert_async`). The backend runs other ops on the host only
    for want of a lowering (`sign`, `logsumexp`, `mse_loss` on the TorchScript backend)."""
    return torch.Tag.data_dependent_output in func.tags or host_op(f"aten.{func.__name__}") is not None


def _ran_on_host(func: Any, ran: list[str]) -> bool:
    """Did the backend run `func` on the CPU, having run the ops `ran` (`aten::<op>`) while it was dispatched?
    For an op this checker builds from others (REPLACEMENTS), only when it hands the op itself to the backend
    (`x[mask]`): the ops of the replacement are the checker's."""
    return func.name() in ran if func in REPLACEMENTS else bool(ran)


def _functional(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.device.type == "lazy" and not torch._is_functional_tensor(value):
        return torch._to_functional_tensor(value)
    return value


def _has_mask(indices: Any) -> bool:
    return any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in indices)


def _stay_on_device(func: Any, out: Any) -> None:
    for tensor in tensors(out):
        if tensor.device.type != "lazy":
            raise LeftTheDevice(f"aten.{func.__name__} was given lazy tensors and returned a {tensor.device.type} "
                                "tensor: the rest of the step would run outside the traced graph")


class Watcher(TorchDispatchMode):
    backend = "lazy"  # the name on its findings

    def __init__(self, report: RuntimeReport) -> None:
        super().__init__()
        self.report = report
        self.ops: list[OpRecord] = []
        self.optimizer_steps = 0  # > 0 while an optimizer's step() runs
        self.created_state = False  # an optimizer's step() created state during this step
        self.host_runs = HostRuns()

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple[Any, ...] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        inputs = tensors((args, kwargs))  # an op's arguments: tensors and lists of them, not pytrees
        on_device = any(t.device.type == "lazy" for t in inputs)
        copies = self.host_runs.before() if on_device else None
        out = REPLACEMENTS.get(func, func)(*args, **kwargs)
        if copies is None:
            # Under a dispatch mode, a lazy tensor the step creates (a factory op, `torch.arange(n, device=d)`,
            # or a copy of a CPU value, `torch.tensor(mask, device=d)`) skips functionalization, and a view of
            # it then fails ("aten::as_strided ... no implementation for lazy"): wrap it as the device would.
            out = tree_map(_functional, out)
        elif func not in _HOST_READS:
            _stay_on_device(func, out)
        self.record(func, args, kwargs, out, sys._getframe(1),
                    on_host=copies is not None and _ran_on_host(func, self.host_runs.after(copies)))
        return out

    def record(self, func: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any, start: Any,
               on_host: bool = False) -> None:
        """The op at the user's line (for the stability check) and, when it reads a value, copies to the host
        or ran on the host (`on_host`: the backend has no lowering for it), its finding; `start` is the frame
        that dispatched it."""
        frame = user_frame(start)
        if frame is None:
            return
        if func not in _BOOKKEEPING and func.namespace != "profiler" and torch.Tag.view_copy not in func.tags:
            self.ops.append(OpRecord(str(func), frame.path, frame.line,
                                     tuple(_describe(a) for a in args)
                                     + tuple(sorted((k, _describe(v)) for k, v in kwargs.items())),
                                     self.optimizer_steps > 0))
        kind = self._kind(func, args, kwargs, out)
        if kind is None and on_host:  # a value read, a copy or a dynamic shape run on the host is said as such
            if _needs_the_host(func):
                kind = "host_op"
            else:
                self.backend_limit(func, frame)
        if kind is not None:
            self.event(kind, frame, f"aten.{func.__name__}", start)

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
            if func is aten.index.Tensor:  # integer indices keep a static shape; a boolean mask is WSC502
                return "boolean_index" if _has_mask(args[1]) else None
            return "dynamic_shape"
        if func in (aten.index_put.default, aten.index_put_.default) and _has_mask(args[1]):
            return "boolean_store"  # `x[mask] = 0`: the positions come from the mask's nonzero()
        outs = out if isinstance(out, (tuple, list)) else (out,)
        if any(isinstance(o, torch.Tensor) and o.dtype in _WIDE_DTYPES for o in outs):
            return "dtype"
        return None

    def event(self, kind: str, frame: UserFrame, op: str, start: FrameType) -> None:
        """A finding at the user's line, named by the construct there, else by the library line that did it."""
        base = KIND_DEFAULTS[kind][1]
        found = classify(kind, frame.path, instruction_span(frame.code, frame.lasti))
        named_op = host_op(op) if kind == "host_op" else None
        if named_op is not None and found.what == base:  # `torch._assert_async(...)` is an assertion wherever it is
            found = named_op
        inside = ""
        for site in _library_sites(start, frame) if found.what == base else ():
            named = torch_value_check(site.f_code.co_filename, site.f_code.co_name) or \
                classify(kind, site.f_code.co_filename, instruction_span(site.f_code, site.f_lasti))
            if named.what != base:
                found = named
                inside = f" inside `{site.f_code.co_name}` ({os.path.basename(site.f_code.co_filename)})"
                break
        # the construct the user wrote names the problem; without one, the op, in Python's words
        what = f"{found.what}: {base}" if found.what != base else \
            f"{op_words(op)}: {base}" if kind in _OP_UNSAID else base
        if kind == "host_op" and found.what != base and found is not named_op:  # the construct and the op
            what = f"{found.what}, through {op_words(op)}: {base}"
        message = f"{what} in `{frame.function}`{inside}; {_CONSEQUENCES[kind]}"
        self.report.add(RuntimeFinding(found.code, frame.path, frame.line, message, self.backend,
                                       chain=call_chain(start)))

    def backend_limit(self, func: Any, frame: UserFrame) -> None:
        """A note for an op a static-graph device lowers but this backend ran on the host: it costs the
        check a sync here, and is no problem of the step."""
        note = (f"lazy: {op_words(f'aten.{func.__name__}')} at {frame.path}:{frame.line} has no lowering on the "
                "TorchScript lazy backend, which ran it on the host (a limit of this backend, not a finding)")
        if note not in self.report.notes:
            self.report.notes.append(note)

    def on_device(self, tensor: torch.Tensor) -> bool:
        """A tensor of the traced graph (reading it on the host is a finding)."""
        return tensor.device.type == "lazy"

    def host_copy(self, tensor: torch.Tensor) -> torch.Tensor:
        """The tensor's values on the CPU, as the host would receive them."""
        return tensor.cpu()


def _library_sites(start: FrameType, user: UserFrame) -> Iterator[FrameType]:
    """The Python frames below the user's, innermost first (torch's optimizer, clip_grad_norm_)."""
    frame: FrameType | None = start
    while frame is not None and frame.f_code is not user.code:
        if not frame.f_code.co_filename.startswith("<") and not is_plumbing(frame.f_code.co_filename):
            yield frame
        frame = frame.f_back


@contextmanager
def watching_numpy(watcher: Watcher) -> Iterator[None]:
    """`.numpy()` dispatches no aten op; watch the Python method instead."""
    original = torch.Tensor.numpy

    def numpy(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        frame = user_frame(sys._getframe(1))
        if frame is not None and watcher.on_device(self):
            watcher.event("numpy", frame, "Tensor.numpy", sys._getframe(1))
            return original(watcher.host_copy(self), *args, **kwargs)
        return original(self, *args, **kwargs)

    torch.Tensor.numpy = numpy  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.Tensor.numpy = original  # type: ignore[method-assign]


def tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors(v)]
    return []


def _own_files(optimizer: torch.optim.Optimizer) -> set[str]:
    """The files of an optimizer's classes outside torch (the user's, a package's such as prodigyopt)."""
    torch_dir = os.path.dirname(torch.__file__)
    return {path for path in class_files(optimizer) if not is_library_file(path, torch_dir)}


@contextmanager
def watching_optimizers(watcher: Watcher) -> Iterator[None]:
    """Every optimizer's step(): mark its ops, and report state it creates (WSC301, like the static rule):
    for an optimizer outside torch at each of its lines that created state, else at the user's `opt.step()`."""
    before: dict[int, set[tuple[int, str]]] = {}
    recorders: dict[int, StateRecorder] = {}

    def keys(optimizer: torch.optim.Optimizer) -> set[tuple[int, str]]:
        return {(id(p), str(k)) for p, state in optimizer.state.items() for k in state}

    def pre(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        watcher.optimizer_steps += 1
        before[id(optimizer)] = keys(optimizer)
        own = _own_files(optimizer)
        if own:
            recorders[id(optimizer)] = recorder = StateRecorder(own)
            recorder.phase = "step"
            optimizer.state = recording_state(recorder, dict(optimizer.state))

    def post(optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        watcher.optimizer_steps -= 1
        new = sorted({k for _, k in keys(optimizer) - before.pop(id(optimizer), set())})
        recorder = recorders.pop(id(optimizer), None)
        if recorder is not None:
            optimizer.state = defaultdict(dict, {p: dict(state) for p, state in optimizer.state.items()})
        frame = user_frame(sys._getframe(1))
        if not new or frame is None:
            return
        watcher.created_state = True
        chain = call_chain(sys._getframe(1))
        name = type(optimizer).__name__
        made: dict[tuple[str, int, str], list[str]] = {}  # (path, line, function) in the optimizer's own code
        for key, (_, path, line) in recorder.created.items() if recorder is not None else ():
            function = recorder.functions.get((path, line)) if recorder is not None else None
            if key in new and function is not None:
                made.setdefault((path, line, function), []).append(key)
        for (path, line, function), made_here in made.items():  # like the optimizer check: each line that made it
            watcher.report.add(RuntimeFinding("WSC301", path, line, state_created_in_step(
                name, sorted(made_here)), watcher.backend, chain=chain + (f"{path}:{line} in {function}",)))
        elsewhere = [key for key in new if not any(key in keys for keys in made.values())]
        if elsewhere:  # torch's own optimizers: at the user's `opt.step()`
            watcher.report.add(RuntimeFinding("WSC301", frame.path, frame.line, state_created_in_step(
                name, elsewhere), watcher.backend, chain=chain))

    handles = [register_optimizer_step_pre_hook(pre), register_optimizer_step_post_hook(post)]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def run_lazy(step: Step, report: RuntimeReport, progress: Any = None) -> list[list[OpRecord]]:
    """Trace every batch as one lazy step; return each step's op records (for graph stability).

    The ops of an optimizer step that created state are left out of the records: that instability is
    reported as WSC301 at the `opt.step()` line.
    """
    init()
    torch._lazy.mark_step()  # materialise model/data creation so it is not part of the first step's graph
    per_step: list[list[OpRecord]] = []
    created_state = False
    for index, batch in enumerate(step.batches):
        watcher = Watcher(report)
        with watching_optimizers(watcher), watching_numpy(watcher), watcher:
            out = step.fn(*batch)
        for tensor in tensors(out):
            if tensor.device.type != "lazy":
                raise LeftTheDevice(f"the step returned a {tensor.device.type} tensor: part of it ran outside "
                                    "the traced graph")
        torch._lazy.mark_step()
        created_state = created_state or watcher.created_state
        per_step.append(watcher.ops)
        if progress is not None:
            progress(f"lazy step {index + 1}/{len(step.batches)}")
    if created_state:
        per_step = [[op for op in ops if not op.in_optimizer_step] for ops in per_step]
    return per_step
