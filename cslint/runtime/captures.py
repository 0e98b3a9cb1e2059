"""Move what a step captures to the backend's device, for a factory that takes no `device`.

Reached: closure cells, defaults, `functools.partial` arguments, a bound method's `__self__`, and one level of
attributes of the objects found there (a trainer's `self.model`, `self.opt`). Tensors are moved with
`torch.utils.swap_tensors`, which keeps each tensor object (so optimizers, tied weights and every other holder
still see it); modules are moved the same way (`swap_module_params_on_conversion`). Optimizer state follows
its parameters (`step` stays where torch's optimizers keep it, as `load_state_dict` does).
"""

from __future__ import annotations

import functools
import types
from typing import Any


def move_captures(fn: Any, device: str) -> None:
    import torch

    target = torch.device(device)
    seen: set[int] = set()

    def tensor(t: torch.Tensor) -> None:
        if t.device == target or id(t) in seen:
            return
        seen.add(id(t))
        moved = t.detach().to(target)
        if isinstance(t, torch.nn.Parameter):
            moved = torch.nn.Parameter(moved, requires_grad=t.requires_grad)
        if t.grad is not None:
            moved.grad = t.grad.detach().to(target)
        torch.utils.swap_tensors(t, moved)

    def module(m: torch.nn.Module) -> None:
        previous = torch.__future__.get_swap_module_params_on_conversion()
        torch.__future__.set_swap_module_params_on_conversion(True)
        try:
            m.to(target)
        finally:
            torch.__future__.set_swap_module_params_on_conversion(previous)

    def optimizer(opt: torch.optim.Optimizer) -> None:
        for group in opt.param_groups:
            for p in group["params"]:
                tensor(p)
            for p in group["params"]:
                for key, value in opt.state.get(p, {}).items():
                    keep = key == "step" and not (group.get("capturable") or group.get("fused"))
                    if isinstance(value, torch.Tensor) and not keep:
                        tensor(value)

    def walk(value: Any, level: int) -> None:
        if id(value) in seen:
            return
        if isinstance(value, torch.Tensor):
            tensor(value)
            return
        seen.add(id(value))
        if isinstance(value, torch.nn.Module):
            module(value)
        elif isinstance(value, torch.optim.Optimizer):
            optimizer(value)
        elif isinstance(value, functools.partial):
            for item in (value.func, *value.args, *value.keywords.values()):
                walk(item, level)
        elif isinstance(value, types.MethodType):
            walk(value.__self__, level)
            walk(value.__func__, level)
        elif isinstance(value, types.FunctionType):
            for cell in value.__closure__ or ():
                try:
                    walk(cell.cell_contents, level)
                except ValueError:  # an empty cell
                    continue
            for item in (*(value.__defaults__ or ()), *(value.__kwdefaults__ or {}).values()):
                walk(item, level)
            return
        elif isinstance(value, (list, tuple, set)):
            for item in value:
                walk(item, level)
            return
        elif isinstance(value, dict):
            for item in value.values():
                walk(item, level)
            return
        if level == 0 and not isinstance(value, (type, types.ModuleType)) and hasattr(value, "__dict__"):
            for name, item in vars(value).items():
                if not name.startswith("_"):
                    walk(item, level + 1)

    walk(fn, 0)
