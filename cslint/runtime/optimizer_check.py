"""Optimizer state: it must exist before the first `step()` (the Cerebras contract), `preinitialize()` must
create all of it, `step()` must add no keys, and no state value may be a Python number that changes."""

from __future__ import annotations

import copy
import inspect
import os
import sys
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import torch

from cslint.runtime.findings import RuntimeFinding, RuntimeReport
from cslint.runtime.frames import user_frame
from cslint.runtime.step_factory import OptimizerStep


class StateRecorder:
    def __init__(self, class_files: set[str]) -> None:
        self.class_files = class_files
        self.phase = "construction"
        self.created: dict[str, tuple[str, str, int]] = {}  # key -> (phase, path, line), first creation
        self.last_set: dict[str, tuple[str, int]] = {}
        self.functions: dict[tuple[str, int], str] = {}  # (path, line) -> the function there
        self.group_set: dict[str, tuple[str, int]] = {}  # a param group's key -> where it was last set

    def location(self) -> tuple[str, int]:
        """The innermost frame in the optimizer's own source (torch/optim/adam.py for Adam)."""
        frame = sys._getframe(2)
        probe = frame
        while probe is not None:
            if os.path.abspath(probe.f_code.co_filename) in self.class_files:
                site = os.path.abspath(probe.f_code.co_filename), probe.f_lineno or 0
                self.functions[site] = probe.f_code.co_name
                return site
            probe = probe.f_back
        found = user_frame(frame)
        return (found.path, found.line) if found else ("<unknown>", 0)

    def on_set(self, key: str, is_new: bool) -> None:
        path, line = self.location()
        self.last_set[key] = (path, line)
        if is_new and key not in self.created:
            self.created[key] = (self.phase, path, line)


    def on_group_set(self, key: str) -> None:
        self.group_set[key] = self.location()


class _RecordingGroup(dict):  # type: ignore[type-arg]
    recorder: StateRecorder

    def __setitem__(self, key: Any, value: Any) -> None:
        self.recorder.on_group_set(str(key))
        super().__setitem__(key, value)


class _RecordingState(dict):  # type: ignore[type-arg]
    recorder: StateRecorder

    def __setitem__(self, key: Any, value: Any) -> None:
        self.recorder.on_set(str(key), key not in self)
        super().__setitem__(key, value)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]


def recording_state(recorder: StateRecorder, existing: dict[Any, Any]) -> defaultdict[Any, Any]:
    def fresh() -> _RecordingState:
        state = _RecordingState()
        state.recorder = recorder
        return state

    class _StateMap(defaultdict):  # type: ignore[type-arg]
        def __setitem__(self, param: Any, value: Any) -> None:
            if isinstance(value, dict) and not isinstance(value, _RecordingState):
                wrapped = fresh()
                for key, item in value.items():
                    wrapped[key] = item
                value = wrapped
            super().__setitem__(param, value)

    state_map = _StateMap(fresh)
    for param, values in existing.items():
        wrapped = fresh()
        dict.update(wrapped, values)
        dict.__setitem__(state_map, param, wrapped)
    return state_map


def class_files(optimizer: torch.optim.Optimizer) -> set[str]:
    files = set()
    for cls in type(optimizer).__mro__:
        if cls in (object, torch.optim.Optimizer):
            continue
        module = sys.modules.get(cls.__module__)
        if module is not None and getattr(module, "__file__", None):
            files.add(os.path.abspath(module.__file__))  # type: ignore[arg-type]
    return files


def _python_numbers(optimizer: torch.optim.Optimizer) -> dict[str, Any]:
    return {str(k): v for state in optimizer.state.values() for k, v in state.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)}


def check_optimizer(target: OptimizerStep, report: RuntimeReport) -> None:
    optimizer = target.optimizer
    recorder = StateRecorder(class_files(optimizer))
    optimizer.state = recording_state(recorder, dict(optimizer.state))
    params = [p for group in optimizer.param_groups for p in group["params"] if p.requires_grad]
    has_preinitialize = callable(getattr(type(optimizer), "preinitialize", None))
    if has_preinitialize and not any(optimizer.state.values()):
        recorder.phase = "preinitialize"
        optimizer.preinitialize()
    name = type(optimizer).__name__
    numbers: list[dict[str, Any]] = []
    for number in range(1, target.steps + 1):
        recorder.phase = f"step {number}"
        for p in params:
            p.grad = torch.randn_like(p)
        optimizer.step()
        numbers.append(_python_numbers(optimizer))
    report.steps = target.steps
    for key, (phase, path, line) in recorder.created.items():
        if not phase.startswith("step"):
            continue
        if has_preinitialize:
            why = f"`{name}.preinitialize()` does not create state `{key}`; `step()` creates it here ({phase})"
        else:
            why = (f"optimizer state `{key}` of `{name}` is created inside `step()` ({phase}); it must exist before "
                   "the first step: create it in `preinitialize()`")
        report.add(RuntimeFinding("WSC301", path, line, why, "optimizer"))
    for key in numbers[0] if numbers else {}:
        values = [n.get(key) for n in numbers]
        if len(set(values)) > 1:
            path, line = recorder.last_set.get(key, ("<unknown>", 0))
            report.add(RuntimeFinding(
                "WSC303", path, line, f"optimizer state `{key}` is a Python number that changes every step "
                f"({' -> '.join(map(str, values))}); the graph would change: keep it a tensor", "optimizer"))


@dataclass
class GroupsBefore:
    """An optimizer the step function reaches, with its param groups' settings as they were before the run."""
    optimizer: torch.optim.Optimizer
    groups: list[dict[str, Any]]


def optimizers_of(fn: Any) -> dict[str, GroupsBefore]:
    """The optimizers a step function names (closure variables and globals) whose state is still empty, with a
    copy of their groups' settings: a later look at where `step()` creates state starts from these."""
    try:
        names = inspect.getclosurevars(fn)
    except (TypeError, ValueError):
        return {}
    found = {}
    for name, value in {**names.globals, **names.nonlocals}.items():
        if isinstance(value, torch.optim.Optimizer) and not value.state:
            try:
                groups = [{k: copy.deepcopy(v) for k, v in g.items() if k != "params"} for g in value.param_groups]
            except Exception:  # noqa: BLE001 -- a setting that cannot be copied: no look for this optimizer
                continue
            found[name] = GroupsBefore(value, groups)
    return found


@dataclass
class StepProbe:
    """What two `step()`s of a copy of an optimizer did, each at its line in the optimizer's own source."""
    created: dict[str, tuple[str, int]]  # state key -> where the first step made it
    state_set: dict[str, tuple[str, int]]  # state key -> where the step last set it (`state["step"] += 1`)
    group_set: dict[str, tuple[str, int]]  # param group key -> where the step last set it


def probe_step(before: GroupsBefore) -> StepProbe | None:
    """Two `step()`s of a copy of the optimizer (fresh parameters of the same shapes, the groups' settings
    from before the run, empty state, random gradients), recording where it sets state and group entries;
    None when the copy cannot be made. The optimizer itself is left as it is."""
    optimizer = before.optimizer
    params = [p for g in optimizer.param_groups for p in g["params"]]
    fresh = {id(p): p.detach().clone().requires_grad_(p.requires_grad) for p in params}
    recorder = StateRecorder(class_files(optimizer))
    memo: dict[int, Any] = dict(fresh)
    memo[id(optimizer.state)] = recording_state(recorder, {})
    for group, settings in zip(optimizer.param_groups, before.groups):
        copied = memo[id(group)] = _RecordingGroup(copy.deepcopy(settings))
        copied.recorder = recorder
        dict.__setitem__(copied, "params", [fresh[id(p)] for p in group["params"]])
    probe = object.__new__(type(optimizer))  # every attribute: an Optimizer pickles only three of them
    try:
        probe.__dict__.update({name: copy.deepcopy(value, memo) for name, value in vars(optimizer).items()})
    except Exception:  # noqa: BLE001 -- an optimizer that cannot be copied: no answer, the guard's line stands
        return None
    for number in (1, 2):  # the second step sets what changes every step (`+= 1`, not the first `= 1`)
        recorder.phase = f"step {number}"
        for p in fresh.values():
            if p.requires_grad:
                p.grad = torch.randn_like(p)
        try:
            probe.step()
        except Exception:  # noqa: BLE001 -- a step that needs a closure: what it did before failing stands
            break
    return StepProbe({key: (path, line) for key, (phase, path, line) in recorder.created.items() if phase == "step 1"},
                     dict(recorder.last_set), dict(recorder.group_set))
