"""What a runtime target is: `path/to/file.py:factory` or `package.module:factory`.

The factory builds what to run. It may take one argument, the device ("lazy" or "cpu"), and should put
its model and inputs there; without that argument the checker moves modules and tensors itself. It returns
- `Step(fn, batches)` or a tuple `(fn, inputs)`: `fn(*batch)` is one training/inference step; inputs are
  one tensor, one tuple of arguments, or a list of batches (several steps, for graph stability);
- `Step(fn, loader=loader)`: the batches are those the user's own DataLoader yields (loader.py);
- a `torch.optim.Optimizer` (or `OptimizerStep(optimizer)`): its state is checked across `step()` calls.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from cslint.runtime.errors import TargetError


@dataclass
class Step:
    fn: Callable[..., Any]
    batches: list[tuple[Any, ...]] = field(default_factory=list)
    loader: Any = None  # a DataLoader (any iterable of batches) to take the batches from, instead of `batches`


@dataclass
class OptimizerStep:
    optimizer: Any
    steps: int = 3


def split_target(target: str) -> tuple[str, str]:
    location, sep, factory = target.rpartition(":")
    if not sep or not location or not factory.isidentifier():
        raise TargetError(f"target `{target}` must look like path/to/file.py:factory or package.module:factory")
    return location, factory


def load_module(location: str) -> ModuleType:
    if location.endswith(".py") or os.sep in location or "/" in location:
        path = os.path.abspath(location)
        if not os.path.isfile(path):
            raise TargetError(f"no such file: {location}")
        name = "cslint_runtime_target_" + os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise TargetError(f"cannot import {location}")
        module = importlib.util.module_from_spec(spec)
        sys.path.insert(0, os.path.dirname(path))  # the target's own sibling imports
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(location)
    except ModuleNotFoundError as exc:
        raise TargetError(f"cannot import module `{location}`: {exc}") from None


def load_factory(target: str) -> Callable[..., Any]:
    from cslint.runtime.loader import recording_loaders

    location, name = split_target(target)
    with recording_loaders():  # a loader the target's module builds
        module = load_module(location)
    factory = getattr(module, name, None)
    if not callable(factory):
        raise TargetError(f"`{name}` in {location} is not a function")
    return factory


def _takes_device(factory: Callable[..., Any]) -> bool:
    try:
        return len(inspect.signature(factory).parameters) >= 1
    except (TypeError, ValueError):
        return False


def _as_batch(value: Any) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, tuple) else (value,)


def build(factory: Callable[..., Any], device: str, move: bool = True) -> Step | OptimizerStep:
    """Call the factory for `device` and normalise what it returns; with `move`, put what a factory without
    a `device` argument made on the device (not needed when it was made there, as under fake tensors)."""
    import torch

    from cslint.runtime.loader import batches_from, recording_loaders

    with recording_loaders():
        made = factory(device) if _takes_device(factory) else factory()
    if isinstance(made, torch.optim.Optimizer):
        made = OptimizerStep(made)
    if isinstance(made, OptimizerStep):
        return made
    if isinstance(made, tuple) and len(made) == 2 and callable(made[0]):
        inputs = made[1]
        batches = [_as_batch(b) for b in inputs] if isinstance(inputs, list) else [_as_batch(inputs)]
        made = Step(made[0], batches)
    if isinstance(made, Step) and made.loader is not None:
        if made.batches:
            raise TargetError("give Step either batches or loader=, not both")
        code = getattr(factory, "__code__", None)
        fallback = (os.path.abspath(code.co_filename), code.co_firstlineno) if code is not None else None
        made = Step(made.fn, batches_from(made.loader, device, fallback), made.loader)
    if not isinstance(made, Step) or not callable(made.fn) or not made.batches:
        raise TargetError("the factory must return Step(fn, batches), (fn, inputs) or a torch optimizer; "
                          f"got {type(made).__name__}")
    if move and not _takes_device(factory):
        from cslint.runtime.captures import move_captures

        move_captures(made.fn, device)
        made = Step(_moved(made.fn, device), [tuple(_moved(a, device) for a in b) for b in made.batches],
                    made.loader)
    return made


def _moved(value: Any, device: str) -> Any:
    import torch

    if isinstance(value, (torch.Tensor, torch.nn.Module)):
        return value.to(device)
    bound = getattr(value, "__self__", None)
    if isinstance(bound, torch.nn.Module):  # a bound method such as model.training_step
        bound.to(device)
    return value
