"""Run steps under dynamo (`torch.compile`, not fullgraph) with a backend that only captures graphs.

Graph breaks and recompilations are read from dynamo's own `graph_breaks`/`recompiles` log artifacts,
which carry the user's file:line; `torch._dynamo.explain()` and `counters["graph_break"]` undercount
(data-dependent branches land in `counters["unimplemented"]`). Scalar-output and dynamic-shape capture
stay off: with them on, dynamo would capture `.item()` and `nonzero()` instead of breaking.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch._dynamo

from cslint.core.rule_table import TENSOR_METHODS
from cslint.engine import graph_break_registry
from cslint.runtime.classify import (
    Classified, called_name, classify_guard_line, classify_line, enclosing_if, guard_origin,
    sets_backend_flags,
)
from cslint.runtime.findings import RuntimeFinding, RuntimeReport
from cslint.runtime.frames import is_library_file
from cslint.runtime.optimizer_check import GroupsBefore, StepProbe, optimizers_of, probe_step
from cslint.runtime.step_factory import Step
from cslint.runtime.wording import guard_expression, title_and_reason

_RECOMPILED = re.compile(r"Recompiling function (?P<function>\S+) in ")
_GUARD = re.compile(r"- \d+/\d+: (?P<guard>.+?)\s{2,}#.*?\n\s*- User stack trace:\s*\n\s*-\s+File \"(?P<path>.+?)\", "
                    r"line (?P<line>\d+)")


_INPUT_SIZE = re.compile(r"- \d+/\d+: tensor '[^']+' size mismatch at index \d+")


class _Collect(logging.Handler):
    """Dynamo's recompile messages, each with the index of the step that logged it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.step = 0
        self.records: list[tuple[int, str]] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append((self.step, record.getMessage()))


@contextmanager
def _dynamo_logs() -> Iterator[_Collect]:
    handler = _Collect()
    torch._logging.set_logs(recompiles=True)
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if name.endswith("__recompiles")]
    saved = [(lg, lg.propagate) for lg in loggers]
    for lg in loggers:
        lg.propagate = False  # keep dynamo's own console output quiet; we report it ourselves
        lg.addHandler(handler)
    try:
        yield handler
    finally:
        for lg, propagate in saved:
            lg.removeHandler(handler)
            lg.propagate = propagate
        torch._logging.set_logs()


@dataclass(frozen=True)
class Break:
    """One graph break as dynamo knows it: its registered type and the user stack it happened in."""
    gb_type: str
    reason: str
    stack: tuple[tuple[str, int, str], ...]  # (path, line, function), outermost first


@contextmanager
def _recording_breaks() -> Iterator[list[Break]]:
    """Read each graph break where dynamo logs it: the break's type and its frames, not its text.

    A break inside a loop dynamo could not resume after (below) is logged as its "graph break in loop", which
    wraps the break that happened there: that one's type is what the problem is.
    """
    from torch._dynamo.symbolic_convert import InstructionTranslatorBase

    breaks: list[Break] = []
    original = InstructionTranslatorBase.log_graph_break
    original_loop = InstructionTranslatorBase.raise_loop_graph_break

    def log_graph_break(self: Any, code_options: Any, reason: str, exc: Any) -> None:
        if not getattr(exc, "logged", False):
            cause = getattr(exc, "cslint_loop_cause", None) or exc
            stack = getattr(exc, "real_stack", None) or torch._guards.TracingContext.extract_stack()
            gb_type = getattr(cause, "gb_type", None) or type(cause).__name__
            breaks.append(Break(gb_type, str(getattr(exc, "msg", reason)).strip().splitlines()[0] if reason else "",
                                _in_original_code(self.output.root_tx, tuple(
                                    (os.path.abspath(f.filename), f.lineno or 0, f.name) for f in stack))))
        original(self, code_options, reason, exc)

    def raise_loop_graph_break(code: Any, exc: Any) -> None:
        try:
            original_loop(code, exc)
        except torch._dynamo.exc.Unsupported as wrapped:
            wrapped.cslint_loop_cause = exc  # type: ignore[attr-defined]
            raise

    InstructionTranslatorBase.log_graph_break = log_graph_break  # type: ignore[method-assign]
    InstructionTranslatorBase.raise_loop_graph_break = staticmethod(raise_loop_graph_break)  # type: ignore[method-assign]
    try:
        yield breaks
    finally:
        InstructionTranslatorBase.log_graph_break = original  # type: ignore[method-assign]
        InstructionTranslatorBase.raise_loop_graph_break = staticmethod(original_loop)  # type: ignore[method-assign]


@contextmanager
def _tracing_through_loops() -> Iterator[None]:
    """Trace on past a graph break inside a loop, as past any other break.

    Dynamo gives up on the whole frame at a break inside a `for`/`while` loop ("graph break in loop": the
    frame runs eagerly), so every later site of the loop body and of the rest of the frame went unseen (an
    MoE layer's `torch.where` after the expert loop's first data-dependent `if`). Told that no loop follows,
    it compiles the graph up to the break and resumes after it, as it does outside loops; the resumed frame
    runs the rest of the body and enters the next iteration, compiled again per iteration up to dynamo's
    recompile limit. Where it could not build the resumed frame, the loop's iterator being one it cannot
    rebuild (a model's `for layer in self.layers[:n]`), dynamo's own answer stands: finding that out costs
    two more traces of the frame, and the frame runs eagerly either way.
    """
    from torch._dynamo.symbolic_convert import InstructionTranslatorBase

    original = InstructionTranslatorBase.maybe_has_backedge

    def maybe_has_backedge(self: Any) -> bool:
        return original(self) and not _resumable(self.output.root_tx)

    InstructionTranslatorBase.maybe_has_backedge = maybe_has_backedge  # type: ignore[method-assign]
    try:
        yield
    finally:
        InstructionTranslatorBase.maybe_has_backedge = original  # type: ignore[method-assign]


def _resumable(root: Any) -> bool:
    """No value on the frame's stack is an iterator dynamo made up and has no way to rebuild."""
    from torch._dynamo.variables.base import VariableTracker
    from torch._dynamo.variables.iter import IteratorVariable

    return not any(isinstance(value, IteratorVariable) and value.source is None
                   and type(value).reconstruct is VariableTracker.reconstruct for value in root.stack)


def _in_original_code(root: Any, stack: tuple[tuple[str, int, str], ...]) -> tuple[tuple[str, int, str], ...]:
    """The break's stack with a resumed frame (`torch_dynamo_resume_in_forward_at_83`) named as the function it
    resumes, at that function's line. A resumed frame is a copy of the function whose instructions before the
    resume point carry the resume point's line: in a loop, the next iteration's sites are reached through them."""
    from torch._dynamo.resume_execution import ContinueExecutionCache

    meta = ContinueExecutionCache.generated_code_metadata.get(root.f_code)
    if meta is None:
        return stack
    copied = meta.instructions  # the function's own instructions, which end the resumed frame's
    at = next((i for i, inst in enumerate(root.instructions) if inst is root.current_instruction), -1)
    index = at - (len(root.instructions) - len(copied))
    line = 0
    if at >= 0 and 0 <= index < len(copied) and copied[index].opname == root.current_instruction.opname:
        positions = getattr(copied[index], "positions", None)
        line = (positions.lineno if positions is not None else None) or copied[index].starts_line or 0
    name = root.f_code.co_name
    return tuple((path, line or number, meta.code.co_name) if function == name else (path, number, function)
                 for path, number, function in stack)


@contextmanager
def _without_unused_dynamo_work() -> Iterator[None]:
    """Skip two things dynamo does for what this run never uses; neither changes a graph, a guard or a break.

    - Tracing an optimizer, dynamo asks whether each state tensor is static for CUDA graphs, and the asking
      imports inductor's CUDA-graph machinery (slow to import) even for a CPU tensor, whose answer is
      always yes. The checker's dynamo step runs on the CPU.
    - For each op it records, dynamo builds the header of its `trace_call` debug log, naming the function
      at the line, which tokenizes every file it traces, even when that log
      is off, as it is here.
    """
    from torch._dynamo import symbolic_convert
    from torch._dynamo.variables import optimizer

    static_for_cudagraphs, funcname = optimizer._is_static_for_cudagraphs, symbolic_convert.get_funcname

    def cpu_is_static(tensor: torch.Tensor) -> bool:
        return static_for_cudagraphs(tensor) if tensor.is_cuda else True

    optimizer._is_static_for_cudagraphs = cpu_is_static
    if not symbolic_convert.trace_call_log.isEnabledFor(logging.DEBUG):
        symbolic_convert.get_funcname = lambda filename, lineno: None
    try:
        yield
    finally:
        optimizer._is_static_for_cudagraphs = static_for_cudagraphs
        symbolic_convert.get_funcname = funcname


# Graph-break types that are findings of a known family, by dynamo's registered `gb_type` (a prefix of it); for a
# value read, the code when the break's line names no construct (a call on a tensor: the rule table's code)
_VALUE_READS = {
    "Data-dependent branching": "WSC101", "Data-dependent assertion": "WSC101",
    "Unsupported Tensor.item()": TENSOR_METHODS["item"], "Tensor.tolist()": TENSOR_METHODS["tolist"],
    "Tensor.numpy()": TENSOR_METHODS["numpy"], "Dynamic slicing with Tensor arguments": "WSC201",
    "Data dependent operator": "WSC203",  # an op whose Python output is a tensor's value (`x[t]`, t 0-d)
}
_DYNAMIC_SHAPES = ("Dynamic shape operator", "Attempted to use `torch.nn.functional.one_hot`")
_LOGGING = ("logging.Logger method",)
_NON_CONTIGUOUS_OUT = ("Attempted to call op with non-contiguous `out=`",)
_REQUIRES_GRAD = ("setattr() on Tensor.requires_grad", "Unsupported Tensor.requires_grad_() call",
                  "returning intermediate with requires_grad_()")
# what dynamo reports for a call or context manager it cannot trace: a backend-flag context manager's among
# them (WSC706), at its `with` and again in the frame resumed after that break
_UNTRACEABLE_CALL = ("torch.* op returned non-Tensor", "Attempted to call function marked as skipped",
                     "Unsupported context manager")
_CONDITIONS = ("WSC101", "WSC102", "WSC103", "WSC104")
# What every training step does and a static-graph compiler handles itself: not a finding.
_STEP_CALLS = ("backward", "zero_grad")
_DELIBERATE = ("Call to `torch._dynamo.graph_break()`",)
# Dynamo could not build the frame that resumes after a break (an iterator over modules it cannot rebuild in
# a model's layer loop): it runs that frame eagerly; the break that led there is reported where it happened.
_CANNOT_RESUME = ("Reconstruction failure",)


def _site(stack: tuple[tuple[str, int, str], ...]) -> tuple[str, int] | None:
    """The innermost frame of the break outside torch and the standard library: the user's (or model's) line."""
    torch_dir = os.path.dirname(torch.__file__)
    for path, line, _ in reversed(stack):
        if not is_library_file(path, torch_dir):
            return path, line
    return None


def _every_step_does_it(found: Break, path: str, line: int) -> bool:
    """`loss.backward()`, `opt.zero_grad()`, torch's own break around an optimizer's step: not findings."""
    if found.gb_type.startswith("Unsupported Tensor.backward()") or called_name(path, line) in _STEP_CALLS:
        return True
    return found.gb_type.startswith(_DELIBERATE) and bool(found.stack) and \
        is_library_file(found.stack[-1][0], os.path.dirname(torch.__file__))


def _break_code(found: Break, path: str, line: int) -> Classified | None:
    """The code for a break at the user's line; None for a construct no rule covers (dynamo cannot trace
    `time.perf_counter()`; a static-graph device traces through it)."""
    fallback = next((code for gb_type, code in _VALUE_READS.items() if found.gb_type.startswith(gb_type)), None)
    if fallback is not None:
        return classify_line(path, line) or Classified(fallback, "a tensor value read on the host")
    if found.gb_type.startswith(_DYNAMIC_SHAPES):
        return Classified("WSC501", "an op whose output shape depends on tensor values")
    if found.gb_type.startswith(_LOGGING) or called_name(path, line) == "print":
        return Classified("WSC701", "a print/log call in the traced step")
    if found.gb_type.startswith(_NON_CONTIGUOUS_OUT):
        return Classified("WSC402", "an op writing into a non-contiguous `out=` tensor")
    if found.gb_type.startswith(_REQUIRES_GRAD):
        return Classified("WSC705", "`requires_grad` set on a tensor inside the traced step")
    if found.gb_type.startswith(_UNTRACEABLE_CALL) and sets_backend_flags(path, line):
        return Classified("WSC706", "backend flags set inside the traced step")
    named = classify_line(path, line)
    # a statement's form (`if`, `while`, `assert`) names the problem only when its condition was read, a break
    # of the value-read types above; another break on such a line (dynamo cannot trace Lamb's
    # `if grad.is_sparse:` in its parameter loop) is on a construct no rule covers
    return None if named is not None and named.code in _CONDITIONS else named


_EMPTIED_STATE = re.compile(r"not (?P<name>\w+)\.state")
_GROUP_VALUE = re.compile(r"(?P<name>\w+)\.param_groups\[\d+\]\[['\"](?P<key>[^'\"]+)['\"]\] == ")
_STATE_VALUE = re.compile(r"(?P<name>\w+)\.state\[.+\]\[['\"](?P<key>[^'\"]+)['\"]\] == ")


def _in_the_optimizer(guard: str, optimizers: dict[str, GroupsBefore],
                      probes: dict[str, StepProbe | None]) -> tuple[str, int, Classified] | None:
    """A guard on an optimizer's state or groups failing at the user's `opt.step()` (dynamo read them in the
    step function's frame when nothing broke inside step()): where the optimizer itself does it, found by
    stepping a copy of it once. `not opt.state`: the first entry its step made, at the `if` around it;
    `opt.param_groups[0]['step'] == 1` or `opt.state[...]['step'] == 1`: where the step sets that entry."""
    match = _EMPTIED_STATE.fullmatch(guard) or _GROUP_VALUE.match(guard) or _STATE_VALUE.match(guard)
    if match is None or match["name"] not in optimizers:
        return None
    name = match["name"]
    if name not in probes:
        probes[name] = probe_step(optimizers[name])
    probe = probes[name]
    if probe is None:
        return None
    if match.re is _EMPTIED_STATE:
        if not probe.created:
            return None
        key, (path, line) = next(iter(probe.created.items()))
        return path, enclosing_if(path, line) or line, Classified(
            "WSC703", f"state `{key}` that the optimizer's `step()` creates on its first run (create it before the "
                      "first step) decides this branch")
    where = probe.group_set if match.re is _GROUP_VALUE else probe.state_set
    if match["key"] not in where:
        return None
    path, line = where[match["key"]]
    return path, line, classify_guard_line(path, line)


_ADVICE = {"WSC702": "keep the value in a tensor buffer",
           "WSC704": "draw on the device with torch.rand*"}


def run_dynamo(step: Step, report: RuntimeReport, progress: Any = None) -> list[int]:
    """Run every batch under dynamo; report graph breaks, and guards that fail on a step after the first.

    A recompile during the first step is not instability: one code object entered with different arguments
    (a decorator's wrapper shared by every module's `forward`, the frame resuming a loop after a break, entered
    at each iteration with the loop one step further) is compiled once per variant, and later steps
    find every variant in dynamo's cache. Only a guard that fails again on a later step means the graph
    changes per step. Returns the steps recompiled because an input tensor had another size than before
    (those guards name no user line: the caller knows where the batches came from).
    """
    torch._dynamo.reset()
    graphs: list[torch.fx.GraphModule] = []
    optimizers = optimizers_of(step.fn)  # before the run fills their state
    probes: dict[str, StepProbe | None] = {}

    def capture_only(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        graphs.append(gm)
        return gm.forward

    with torch._dynamo.config.patch(capture_scalar_outputs=False, capture_dynamic_output_shape_ops=False,
                                    suppress_errors=False), _dynamo_logs() as logs, _recording_breaks() as found, \
            _without_unused_dynamo_work(), _tracing_through_loops():
        compiled = torch.compile(step.fn, backend=capture_only, fullgraph=False, dynamic=False)
        for index, batch in enumerate(step.batches):
            logs.step = index
            compiled(*batch)
            if progress is not None:
                progress(f"dynamo step {index + 1}/{len(step.batches)}")
    torch._dynamo.reset()
    breaks: set[tuple[str, int, str]] = set()
    registry = graph_break_registry.load()  # the running torch's: the ids its dynamo prints
    uncovered: dict[tuple[str, int], str] = {}
    for graph_break in found:
        site = _site(graph_break.stack)
        if site is None:
            continue
        path, line = site
        if _every_step_does_it(graph_break, path, line) or graph_break.gb_type.startswith(_CANNOT_RESUME):
            continue
        code = _break_code(graph_break, path, line)
        if code is None:
            uncovered.setdefault((path, line), graph_break.gb_type)
            continue
        breaks.add((path, line, graph_break.gb_type))
        chain = tuple(f"{p}:{n} in {f}" for p, n, f in graph_break.stack)
        why = title_and_reason(graph_break.gb_type, graph_break.reason)
        report.add(RuntimeFinding(code.code, path, line, f"graph break: {code.what} ({why})",
                                  "dynamo", chain=chain, graph_break=registry.id_of(graph_break.gb_type) or ""))
    first_step_recompiles = 0
    resized: list[int] = []
    for step_index, message in logs.records:
        if step_index == 0:
            first_step_recompiles += 1
            continue
        if _INPUT_SIZE.search(message):
            resized.append(step_index)
        recompiled = _RECOMPILED.search(message)
        for guard in _GUARD.finditer(message):
            path = os.path.abspath(guard["path"])
            if is_library_file(path, os.path.dirname(torch.__file__)):
                continue
            found = guard_origin(path, int(guard["line"]), guard["guard"].strip(),
                                 recompiled["function"] if recompiled is not None else "")
            if found is None:
                continue
            line, origin = found
            inside = _in_the_optimizer(guard["guard"].strip(), optimizers, probes) if origin is None else None
            if inside is not None:
                path, line, origin = inside
            mutated = origin or classify_guard_line(path, line)
            expression = guard_expression(guard["guard"])
            changed = f"`{expression}` no longer holds" if expression is not None else \
                "a Python value the step reads changed"
            report.add(RuntimeFinding(
                mutated.code, path, line,
                f"{mutated.what}: the graph is recompiled on step {step_index + 1} because {changed} "
                f"({_ADVICE.get(mutated.code, _ADVICE['WSC702'])})", "dynamo"))
    report.graph_breaks = len(breaks)
    report.notes.append(f"dynamo: {len(graphs)} graph(s) captured, {len(breaks)} distinct graph break(s)")
    for (path, line), gb_type in sorted(uncovered.items()):
        report.uncovered_breaks.append((path, line, gb_type))
        report.notes.append(f"dynamo: graph break at {path}:{line} ({gb_type}) on a construct no rule covers: "
                            "a static-graph device traces through it; torch.compile(fullgraph=True) stops there")
    if first_step_recompiles:
        report.notes.append(f"dynamo: {first_step_recompiles} recompile(s) during the first step only (a function "
                            "entered with different arguments, a loop resumed after a break at each iteration); "
                            "later steps reuse every compiled graph")
    return resized
