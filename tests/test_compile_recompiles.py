"""Under torch.compile an optimizer's step is compiled again when it fills its state on the first step
(WSC703) or keeps a Python-number counter dynamo guards on (WSC702); on lazy-tensor targets WSC301/WSC303
report the same code, and neither is reported outside traced code or where the state exists before step 1."""

from __future__ import annotations

import pytest

from tests.conftest import codes

LAMB = '''
import math
import torch
from torch.optim import Optimizer


class Lamb(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))

    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad.data
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]
                beta1, beta2 = group["betas"]
                state["step"] += 1
                exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                correction = math.sqrt(1 - beta2 ** state["step"]) / (1 - beta1 ** state["step"])
                p.data.add_(exp_avg / exp_avg_sq.sqrt().add(group["eps"]), alpha=-group["lr"] * correction)
'''
GUARD, COUNTER = 17, 23

# pytorch-optimizer's shape: the state made by a helper the step calls once per group, a counter in the group
GROUP_HELPER = '''
import torch
from torch.optim import Optimizer


class Tiger(Optimizer):
    def __init__(self, params, lr=1e-3, beta=0.965):
        super().__init__(params, dict(lr=lr, beta=beta))

    def init_group(self, group):
        for p in group["params"]:
            state = self.state[p]
            if "exp_avg" not in state:
                state["exp_avg"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            if "step" not in group:
                self.init_group(group)
                group["step"] = 1
            else:
                group["step"] += 1
            for p in group["params"]:
                exp_avg = self.state[p]["exp_avg"]
                exp_avg.mul_(group["beta"]).add_(p.grad, alpha=1.0 - group["beta"])
                p.add_(torch.sign(exp_avg), alpha=-group["lr"])
'''


def test_lamb_shape_under_compile(lint) -> None:
    found = lint(LAMB, target="compile")
    assert [(d.code, d.line) for d in found if d.code.startswith("WSC7")] == [("WSC703", GUARD), ("WSC702", COUNTER)]
    guard = next(d for d in found if d.code == "WSC703")
    assert "compiled again on the second" in guard.message, guard.message
    assert "graph break" not in guard.message  # the target's WSC7 hint is about side effects, not guards
    counter = next(d for d in found if d.code == "WSC702")
    assert "`state[\"step\"]`" in counter.message and "recompiles the step when it changes" in counter.message, counter.message


@pytest.mark.parametrize(("target", "expected"), [
    ("wsc", [("WSC301", GUARD), ("WSC303", COUNTER)]),  # lazy tensors: the WSC3 rules, unchanged
    ("rdu", [("WSC301", GUARD), ("WSC303", COUNTER)]),
    ("xla", []),
])
def test_lazy_tensor_targets_keep_their_own_rules(lint, target: str, expected: list[tuple[str, int]]) -> None:
    found = [(d.code, d.line) for d in lint(LAMB, target=target) if d.code.startswith(("WSC3", "WSC7"))]
    assert found == expected


def test_state_made_by_a_helper_and_a_param_group_counter(lint) -> None:
    found = [(d.code, d.line) for d in lint(GROUP_HELPER, target="compile") if d.code.startswith("WSC7")]
    assert found == [("WSC703", 12), ("WSC702", 22)]


STATE_BEFORE_THE_STEP = '''
import torch
from torch.optim import Optimizer


class Momentum(Optimizer):
    def __init__(self, params, lr=0.1, momentum=0.9):
        super().__init__(params, dict(lr=lr, momentum=momentum))
        self._init_state()

    def _init_state(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["step"] = torch.tensor(0.0)
                state["momentum_buffer"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:  # a defensive guard: never taken, the state exists from __init__
                    state["momentum_buffer"] = torch.zeros_like(p)
                state["step"] += 1  # a tensor counter: updated in place in the graph
                buf = state["momentum_buffer"]
                buf.mul_(group["momentum"]).add_(p.grad)
                p.sub_(group["lr"] * buf / (1 - group["momentum"] ** state["step"]))


class CerebrasAdam(Optimizer):
    """The Cerebras contract: the framework calls preinitialize() before the first step."""

    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["exp_avg"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if "exp_avg" not in state:
                    state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg"].lerp_(p.grad, 0.1)
                p.sub_(group["lr"] * state["exp_avg"])
'''


def test_state_made_before_the_first_step_and_tensor_counters_are_not_reported(lint) -> None:
    assert [d for d in lint(STATE_BEFORE_THE_STEP, target="compile") if d.code in ("WSC702", "WSC703")] == []


def test_a_key_the_constructor_does_not_make_is_still_made_on_the_first_step(lint) -> None:
    code = STATE_BEFORE_THE_STEP.replace(
        '                if len(state) == 0:  # a defensive guard: never taken, the state exists from __init__\n'
        '                    state["momentum_buffer"] = torch.zeros_like(p)\n',
        '                if "slow" not in state:\n'
        '                    state["slow"] = p.detach().clone()\n')
    assert [(d.code, d.line) for d in lint(code, target="compile") if d.code == "WSC703"] == [("WSC703", 22)]


def test_quiet_outside_traced_code(lint) -> None:
    """The same statements in a class that is no optimizer and in a function nothing traces."""
    code = '''
import torch


class RunningStats:
    def __init__(self):
        self.state = {}

    def update(self, name, value):
        state = self.state[name]
        if len(state) == 0:
            state["count"] = 0
            state["mean"] = torch.zeros_like(value)
        state["count"] += 1
        state["mean"] += (value - state["mean"]) / state["count"]


def schedule(groups):
    for group in groups:
        group["step"] = group.get("step", 0)
        group["step"] += 1
'''
    assert codes(lint(code, target="compile")) == []
    assert codes(lint(LAMB.replace("(Optimizer)", "").replace("def step(", "def update("), target="compile")) == []
