"""WSC301-303: lazy optimizer state, state created in step, Python step counters."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import codes, run_linter

FIXTURES = Path(__file__).parent / "fixtures" / "optimizers"


def _fixture_findings(tmp_path: Path, name: str) -> list[tuple[str, int, str | None]]:
    result, _ = run_linter(tmp_path, {f"{name}.py": (FIXTURES / f"{name}.py").read_text(encoding="utf-8")},
                           select=("WSC3",))
    return [(d.code, d.line, d.fix.applicability if d.fix else None) for d in result.diagnostics]


def test_adam_fixture(tmp_path: Path) -> None:
    assert _fixture_findings(tmp_path, "adam") == [("WSC301", 30, "safe"), ("WSC303", 37, "safe")]


def test_sgd_clone_of_gradient_is_an_unsafe_fix(tmp_path: Path) -> None:
    assert _fixture_findings(tmp_path, "sgd") == [("WSC301", 34, "unsafe")]


def test_factored_optimizer_fixture(tmp_path: Path) -> None:
    assert _fixture_findings(tmp_path, "adafactor") == [("WSC301", 33, "safe"), ("WSC303", 42, "safe")]


def test_lazy_state_in_helper_reports_without_fix(lint) -> None:
    code = """
import torch
from torch.optim import Optimizer

def _momentum(p, state, momentum):
    if "buf" not in state:
        state["buf"] = torch.zeros_like(p)
    state["buf"].mul_(momentum).add_(p.grad)
    return state["buf"]

class SGD(Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr, momentum=0.9))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                p.sub_(group["lr"] * _momentum(p, self.state[p], group["momentum"]))
"""
    [finding] = lint(code, select=("WSC3",))
    assert (finding.code, finding.line, finding.fix) == ("WSC301", 5, None)
    assert finding.message.startswith('`if "buf" not in state`')


def test_quiet_outside_the_step(lint) -> None:
    code = """
import torch
from torch import nn
from torch.optim import Optimizer

class Ema(Optimizer):
    def __init__(self, params, decay=0.99):
        super().__init__(params, dict(lr=0.0, decay=decay))
        self.num_updates = 0
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["shadow"] = p.detach().clone()
                    state["step"] = 0

    def evaluate(self):
        self.num_updates += 1
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p].setdefault("seen", 0)

class Net(nn.Module):
    def forward(self, x, cache=None):
        if cache is None:
            cache = torch.zeros_like(x)
        return x + cache
"""
    assert lint(code, select=("WSC3",)) == []


def test_counter_fix_keeps_the_increment_and_uses_tensor_ops(fix) -> None:
    code = (FIXTURES / "adamw.py").read_text(encoding="utf-8")
    fixed = fix(code, unsafe=False)
    assert 'state["step"] = torch.tensor(0.0, dtype=torch.float32, device=p.device)' in fixed
    # 1 - beta ** step in float32 through log1p/expm1, accurate where 1 - torch.pow(beta, step) is not
    assert 'bias_correction1 = -torch.expm1(torch.log1p(torch.as_tensor(beta1 - 1)) * state["step"])' in fixed
    assert "step_size = step_size * torch.sqrt(bias_correction2) / bias_correction1" in fixed
    assert 'state["step"] += 1' in fixed
    assert "if len(state) == 0" not in fixed


POWER_THROUGH_A_NAME = """
import torch
from torch.optim import Optimizer

class Rectified(Optimizer):
    def __init__(self, params, lr=1e-3, beta2=0.999):
        super().__init__(params, dict(lr=lr, beta2=beta2))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta2 = group["beta2"]
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                state["step"] += 1
                beta2_t = beta2 ** state["step"]
                rho = 2 / (1 - beta2) - 1 - 2 * state["step"] * beta2_t / (1 - beta2_t)
{more}
                p.add_(p.grad, alpha=-group["lr"] * rho)
"""


def test_one_minus_a_name_holding_the_counters_power_is_accurate(fix) -> None:
    """`beta2_t = beta2 ** step` then `1 - beta2_t`: the same cancellation as `1 - beta2 ** step` (RAdam's
    rectification term is 0.5% off at step 6 with a float32 subtraction), so the same rewrite."""
    fixed = fix(POWER_THROUGH_A_NAME.format(more=""), unsafe=False)
    assert "beta2_t = torch.pow(beta2, state[\"step\"])" in fixed
    assert "beta2_t / (-torch.expm1(torch.log1p(torch.as_tensor(beta2 - 1)) * state[\"step\"]))" in fixed


def test_a_name_bound_twice_is_not_read_as_the_power(fix) -> None:
    fixed = fix(POWER_THROUGH_A_NAME.format(more="                beta2_t = beta2_t * 2"), unsafe=False)
    assert "/ (1 - beta2_t)" in fixed


def test_the_accurate_form_of_one_minus_the_power_holds_where_the_subtraction_does_not() -> None:
    torch = pytest.importorskip("torch")
    beta2, step = 0.999, torch.tensor(6.0)
    exact = 1 - beta2 ** 6
    subtracted = float(1 - torch.pow(beta2, step))
    accurate = float(-torch.expm1(torch.log1p(torch.as_tensor(beta2 - 1)) * step))
    assert abs(accurate - exact) / exact < 1e-6 < abs(subtracted - exact) / exact


def test_group_and_attribute_counters_report_without_fix(lint) -> None:
    code = """
import torch
from torch.optim import Optimizer

class Sched(Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr, step=0))
        self.t = 0

    @torch.no_grad()
    def step(self):
        self.t += 1
        for group in self.param_groups:
            group["step"] += 1
            for p in group["params"]:
                p.sub_(group["lr"] * 0.9 ** group["step"] * p.grad / self.t)
"""
    found = lint(code, select=("WSC303",))
    assert codes(found) == [("WSC303", 11), ("WSC303", 13)]
    assert all(d.fix is None for d in found)


def test_counters_nothing_reads_are_not_step_counter_findings(lint) -> None:
    """#24 item 12: a count that no computation reads puts no Python value in the graph (the side-effect
    rule still says the attribute is updated once while tracing)."""
    code = """
import torch
from torch.optim import Optimizer

class Sched(Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr, calls=0))
        self.t = 0

    @torch.no_grad()
    def step(self):
        self.t += 1
        for group in self.param_groups:
            group["calls"] += 1
            for p in group["params"]:
                p.sub_(group["lr"] * p.grad)
"""
    assert codes(lint(code, select=("WSC303",))) == []
    assert codes(lint(code.replace('p.sub_(group["lr"] * p.grad)', 'p.sub_(group["lr"] * p.grad * self.t)'),
                      select=("WSC303",))) == [("WSC303", 11)]


def test_optimizer_reached_from_a_step_function_keeps_its_findings(lint):
    files = {
        "opt.py": """
            import torch
            from torch.optim import Optimizer

            class Momentum(Optimizer):
                def __init__(self, params, lr=0.1):
                    super().__init__(params, dict(lr=lr))

                def step(self, closure=None):
                    for group in self.param_groups:
                        for p in group["params"]:
                            state = self.state[p]
                            if len(state) == 0:
                                state["buf"] = torch.zeros_like(p)
                            state["buf"].mul_(0.9).add_(p.grad)
                            p.add_(state["buf"], alpha=-group["lr"])
        """,
        "train.py": """
            import cerebras.pytorch as cstorch
            import torch
            from opt import Momentum

            model = torch.nn.Linear(4, 4)
            optimizer = Momentum(model.parameters())

            @cstorch.trace
            def training_step(x):
                loss = model(x).sum()
                loss.backward()
                optimizer.step()
                return loss
        """,
    }
    alone = lint({"opt.py": files["opt.py"]}, select=("WSC3", "WSC4"))
    together = [d for d in lint(files, select=("WSC3", "WSC4")) if d.path.name == "opt.py"]
    assert [(d.code, d.line) for d in together] == [(d.code, d.line) for d in alone] == [
        ("WSC301", 12), ("WSC401", 15)]
    assert together[0].chain == ["train.training_step", "opt.Momentum.step"]


def test_optimizers_following_the_cerebras_contract_are_clean(lint):
    code = """
    import torch
    import cerebras.pytorch as cstorch

    class Adam(cstorch.optim.Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps), enable_global_step=True)

        def preinitialize(self):
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                    state["beta1_power"] = torch.tensor(1.0, device=p.device)
                    state["beta2_power"] = torch.tensor(1.0, device=p.device)

        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                beta1, beta2 = group["betas"]
                lr = group["lr"]
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    state = self.state[p]
                    self.increment_global_step(p)
                    state["beta1_power"].mul_(beta1)
                    state["beta2_power"].mul_(beta2)
                    state["exp_avg"].mul_(beta1).add_(p.grad, alpha=1 - beta1)
                    state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                    denom = (state["exp_avg_sq"] / (1 - state["beta2_power"])).sqrt().add_(group["eps"])
                    update = state["exp_avg"] / denom / (1 - state["beta1_power"])
                    update *= lr
                    p.sub_(update)

    class SGD(cstorch.optim.Optimizer):
        def __init__(self, params, lr=0.1):
            super().__init__(params, dict(lr=lr))

        def preinitialize(self):
            pass

        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        p.add_(-group["lr"] * p.grad)
    """
    assert lint(code) == []


A2GRAD_LIKE = """
import math
import torch
from torch.optim import Optimizer


class Averaged(Optimizer):
    @staticmethod
    def _lr(group, param_state):
        return min(group["eps"], 1.0 / math.sqrt(param_state["step"]))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["v"] = 0
                    state["avg"] = torch.zeros_like(p)
                state["step"] += 1
                delta = p.grad - state["avg"]
                if state["step"] == 1:
                    state["sq"] = torch.sum(delta * delta).item()
                else:
                    state["sq"] *= group["rho"]
                state["v"] = max([state["sq"], state["v"]])
                h = math.sqrt((state["step"] + 1) * state["v"])
                lr = self._lr(group, state)
                p.add_(state["avg"] * math.sqrt(state["avg"].norm()), alpha=h * lr)
"""


def test_state_entries_only_ever_python_numbers_are_python_values(lint):
    found = codes(lint(A2GRAD_LIKE, target="wsc"))
    # math.sqrt of the tensor entry `avg` only: not of param_state["step"] in the helper nor of state["v"]
    assert [line for code, line in found if code == "WSC204"] == [29]
    assert ("WSC201", 23) in found  # the .item() itself
    assert ("WSC303", 20) in found  # the Python step counter


def test_python_state_entries_outside_traced_code_stay_quiet(lint):
    code = """
    import math

    def summarize(state):
        state["v"] = 0
        return math.sqrt(state["v"] + 1)
    """
    assert codes(lint(code)) == []


def test_bias_correction_in_float32_stays_within_2e7_of_float64() -> None:
    torch = pytest.importorskip("torch")
    for beta in (0.9, 0.999, 0.9999):
        for step in range(1, 2001, 7):
            exact = 1 - beta ** step
            fixed = float(-torch.expm1(torch.log1p(torch.as_tensor(beta - 1)) * torch.tensor(float(step))))
            assert abs(fixed - exact) / exact < 2e-7, (beta, step)
            naive = float(1 - torch.pow(beta, torch.tensor(float(step))))
            assert beta == 0.9 or step > 200 or abs(naive - exact) / exact > 1e-6  # what the rewrite avoids


STORED = """
import torch
from torch.optim import Optimizer

class Stats(Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["buf"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                {store}
                p.sub_(group["lr"] * p.grad)
"""


def test_a_zero_dim_entry_stored_every_step_is_created_in_preinitialize(lint) -> None:
    [finding] = [d for d in lint(STORED.format(store='state["norm"] = p.grad.norm().clamp(0, 1)'))
                 if d.code == "WSC302"]
    assert finding.fix is not None and finding.fix.applicability == "unsafe"


def test_a_gradient_copied_on_the_first_step_only_is_created_in_preinitialize(fix) -> None:
    code = STORED.format(store='grad = p.grad.data\n                if group["lr"] > 0:\n'
                               '                    state["prev"] = grad.clone()')
    fixed = fix(code, unsafe=True)
    assert 'self.state[p]["prev"] = torch.zeros_like(p)' in fixed
    assert 'state["prev"].copy_(torch.where(torch.as_tensor(group["lr"] > 0), grad, state["prev"]))' in fixed


@pytest.mark.parametrize("store", [
    'state["last"] = p.grad * 2',  # not zero-dimensional: its shape is not known to preinitialize()
    'if group["lr"] > 0:\n                    state["norm"] = p.grad.norm()',  # not stored on every step
    'if group["lr"] > 0:\n                    state["prev"] = p.grad * 2',  # under a condition, not a copy
    'if group["lr"] > 0:\n                    state["prev"] = p.grad.clone()\n'
    '                else:\n                    state["prev"] = p.clone()',  # an else branch
])
def test_entries_preinitialize_cannot_create_keep_no_fix(lint, store) -> None:
    found = [d for d in lint(STORED.format(store=store)) if d.code == "WSC302"]
    assert found and all(d.fix is None for d in found)


DEN_SUM_LIKE = """
import math
import torch
from torch.optim import Optimizer


class AdEMAMixLike(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8):
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps))

    def init_group(self, group):
        for p in group["params"]:
            state = self.state[p]
            if len(state) == 0:
                state["den_sum"] = 0.0
                state["exp_avg_sq"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            self.init_group(group)
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                state = self.state[p]
                state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1.0 - beta2)
                state["den_sum"] = beta2 * state["den_sum"] + (1.0 - beta2)
                denom = state["exp_avg_sq"].sqrt().add_(math.sqrt(state["den_sum"]) * group["eps"])
                p.add_(-group["lr"] * p.grad / denom)
"""


@pytest.mark.parametrize("target", ["wsc", "compile"])
def test_a_state_entry_updated_from_itself_and_hyperparameters_stays_python(lint, target):
    """Sample C: `den_sum` starts at 0.0 and is only ever `beta2 * den_sum + (1 - beta2)`, Python arithmetic
    on a Python float and a hyperparameter from `group['betas']`: math.sqrt of it reads no tensor."""
    assert [c for c in codes(lint(DEN_SUM_LIKE, target=target)) if c[0] == "WSC204"] == []
    # the hyperparameter taken by index, and an entry computed from another Python entry
    by_index = DEN_SUM_LIKE.replace('beta1, beta2 = group["betas"]', 'beta2 = group["betas"][1]').replace(
        'state["den_sum"] = 0.0', 'state["den_sum"] = 0.0\n                state["scale"] = 0.5').replace(
        'state["den_sum"] = beta2 * state["den_sum"] + (1.0 - beta2)',
        'state["den_sum"] = beta2 * state["den_sum"] + state["scale"]')
    assert [c for c in codes(lint(by_index, target=target)) if c[0] == "WSC204"] == []


@pytest.mark.parametrize("target", ["wsc", "compile"])
@pytest.mark.parametrize("change", [
    # the traced learning rate in the update
    ('beta2 * state["den_sum"]', 'group["lr"] * state["den_sum"]'),
    # a tensor to start from
    ('state["den_sum"] = 0.0', 'state["den_sum"] = torch.zeros((), device=p.device)'),
    # another entry that is a tensor
    ('beta2 * state["den_sum"] + (1.0 - beta2)', 'beta2 * state["den_sum"] + state["exp_avg_sq"]'),
    # a local that is not only a hyperparameter
    ('beta1, beta2 = group["betas"]', 'beta1, beta2 = group["betas"]\n            beta2 = group["lr"]'),
])
def test_a_state_entry_updated_from_a_tensor_is_a_tensor(lint, target, change):
    code = DEN_SUM_LIKE.replace(*change)
    line = next(i for i, text in enumerate(code.lstrip("\n").splitlines(), 1) if "math.sqrt(" in text)
    assert ("WSC204", line) in codes(lint(code, target=target))


def test_a_self_updated_python_entry_outside_traced_code_stays_quiet(lint):
    code = """
    import math

    def summarize(state, group):
        beta2 = group["betas"][1]
        state["den_sum"] = beta2 * state["den_sum"] + (1.0 - beta2)
        return math.sqrt(state["den_sum"])
    """
    assert codes(lint(code)) == []


GROUP_AND_STATE_STEPS = """
import torch
from torch.optim import Optimizer


class LoRARiteLike(Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))

    def init_group(self, group):
        if "step" not in group:
            group["step"] = 0
        for p in group["params"]:
            state = self.state[p]
            if len(state) == 0:
                state["step"] = 0

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            self.init_group(group)
            group["step"] += 1
            for p in group["params"]:
                state = self.state[p]
                p.mul_(1.0 - 0.9 ** state["step"])
                state["step"] += 1
"""


@pytest.mark.parametrize("target", ["wsc", "compile"])
def test_a_group_counter_is_not_read_by_reading_the_state_counter_of_that_name(lint, target):
    """Sample C lora_rite:426: `group['step'] += 1` that nothing reads (only `state['step']` is read) puts
    no value in the graph; the state counter that is read is still reported."""
    assert codes(lint(GROUP_AND_STATE_STEPS, select=("WSC303",), target=target)) == [("WSC303", 25)]


@pytest.mark.parametrize("target", ["wsc", "compile"])
@pytest.mark.parametrize("read", [
    'p.mul_(1.0 - 0.9 ** group["step"])',  # in the update
    'p.mul_(self._decay(group["step"]))',  # passed to a function
    'print(f"step {group[\'step\']}")',  # formatted
    'p.mul_(0.5 if group.get("step", 0) > 10 else 1.0)',  # compared
])
def test_a_group_counter_that_is_read_is_reported(lint, target, read):
    code = GROUP_AND_STATE_STEPS.replace('p.mul_(1.0 - 0.9 ** state["step"])', read) + """
    def _decay(self, step):
        return 1.0 - 0.9 ** step
"""
    assert ("WSC303", 21) in codes(lint(code, select=("WSC303",), target=target))


COUNTERS_AND_METHODS = """
import torch
from torch.optim import Optimizer


class Wrapped(Optimizer):
    def __init__(self, params, base, lr=1e-3):
        super().__init__(params, dict(lr=lr))
        self.base_optimizer = base
        self.updates = 0

    @torch.no_grad()
    def step(self, closure=None):
        self.updates += 1
        for group in self.param_groups:
            if "step" in group:
                group["step"] += 1
            else:
                group["step"] = 1
            for p in group["params"]:
                p.add_(p.grad, alpha=-group["lr"])
        self.base_optimizer.step()
        return {"updates": 0}["updates"]
"""


@pytest.mark.parametrize("target", ["wsc", "compile"])
def test_a_counter_is_not_read_by_an_attribute_or_key_of_its_name(lint, target):
    """`group['step'] += 1` is not read by `self.base_optimizer.step()` (a method, seen in a DeMo-like
    optimizer), nor `self.updates += 1` by a dict's `["updates"]`: no value of either reaches the graph."""
    assert codes(lint(COUNTERS_AND_METHODS, select=("WSC303",), target=target)) == []


@pytest.mark.parametrize("target", ["wsc", "compile"])
@pytest.mark.parametrize("read, line", [
    ("self.updates", 13),  # the attribute counter read as an attribute
    ('getattr(self, "updates")', 13),  # or by getattr
    ('group["step"]', 16),  # the group counter read as a key
    ('group.get("step", 0)', 16),  # or by get
])
def test_a_counter_read_as_its_own_kind_of_access_is_reported(lint, target, read, line):
    code = COUNTERS_AND_METHODS.replace('return {"updates": 0}["updates"]', f"return {read}")
    assert ("WSC303", line) in codes(lint(code, select=("WSC303",), target=target))


def test_group_and_state_counters_outside_traced_code_stay_quiet(lint):
    code = """
    def count(group, state):
        group["step"] += 1
        state["step"] += 1
        return state["step"] + group["step"]
    """
    assert codes(lint(code)) == []


SOAP_LIKE = """
import torch
from torch.optim import Optimizer


class SoapLike(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.95), precondition_frequency=10, shampoo_beta=None):
        super().__init__(params, dict(lr=lr, betas=betas, precondition_frequency=precondition_frequency,
                                      shampoo_beta=shampoo_beta))

    def init_group(self, group):
        _, beta2 = group["betas"]
        for p in group["params"]:
            state = self.state[p]
            if len(state) == 0:
                state["exp_avg"] = torch.zeros_like(p)
                self.init_preconditioner(
                    p, state, precondition_frequency=group["precondition_frequency"],
                    shampoo_beta=group["shampoo_beta"] if group["shampoo_beta"] is not None else beta2)

    def init_preconditioner(self, p, state, precondition_frequency: int = 10, shampoo_beta: float = 0.95):
        state["gg"] = torch.zeros(p.shape[0], p.shape[0], device=p.device)
        state["precondition_frequency"] = precondition_frequency
        state["shampoo_beta"] = shampoo_beta

    def update_preconditioner(self, p, state, step: int):
        state["gg"].lerp_(p.grad @ p.grad.T, 1.0 - state["shampoo_beta"])
        if step > 0 and step % state["precondition_frequency"] == 0:
            state["gg"].mul_(0.5)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            self.init_group(group)
            if "step" not in group:
                group["step"] = 0
            group["step"] += 1
            step: int = group["step"] - 1
            for p in group["params"]:
                state = self.state[p]
                self.update_preconditioner(p, state, step)
                p.add_(state["exp_avg"], alpha=-group["lr"])
"""


@pytest.mark.parametrize("target", ["wsc", "compile"])
def test_a_group_hyperparameter_handed_to_a_method_and_stored_in_state_stays_python(lint, target):
    """Sample C soap:289: `state['precondition_frequency']` is set by a method from its parameter, which
    every call gives `group['precondition_frequency']` (a Python hyperparameter): a Python number, so
    `step % state['precondition_frequency']` on a Python counter does not branch on a tensor."""
    assert [c for c in codes(lint(SOAP_LIKE, target=target)) if c[0].startswith("WSC1")] == []
    # the same entry copied straight from the group
    direct = SOAP_LIKE.replace('state["precondition_frequency"] = precondition_frequency\n', "").replace(
        '                state["exp_avg"] = torch.zeros_like(p)\n',
        '                state["exp_avg"] = torch.zeros_like(p)\n'
        '                state["precondition_frequency"] = group["precondition_frequency"]\n')
    assert [c for c in codes(lint(direct, target=target)) if c[0].startswith("WSC1")] == []


@pytest.mark.parametrize("target", ["wsc", "compile"])
@pytest.mark.parametrize("change", [
    # the learning rate is a traced tensor on WSC, and so is what is copied from it
    ('precondition_frequency=group["precondition_frequency"]', 'precondition_frequency=group["lr"]'),
    # a value computed from the gradient
    ('precondition_frequency=group["precondition_frequency"]', 'precondition_frequency=p.grad.norm()'),
    # one of the calls gives a tensor
    ('    @torch.no_grad()\n    def step(',
     '    def reset(self, p):\n        self.init_preconditioner(p, self.state[p], p.grad.abs().max())\n\n'
     '    @torch.no_grad()\n    def step('),
    # the parameter is rebound from a tensor inside the method
    ('        state["precondition_frequency"] = precondition_frequency\n',
     '        precondition_frequency = state["gg"].sum()\n'
     '        state["precondition_frequency"] = precondition_frequency\n'),
])
def test_a_tensor_handed_to_a_method_and_stored_in_state_is_a_tensor(lint, target, change):
    code = SOAP_LIKE.replace(*change)
    assert code != SOAP_LIKE
    line = next(i for i, text in enumerate(code.lstrip("\n").splitlines(), 1) if "step % state" in text)
    assert ("WSC101", line) in codes(lint(code, target=target))


def test_a_hyperparameter_stored_in_state_outside_traced_code_stays_quiet(lint):
    code = SOAP_LIKE.replace("class SoapLike(Optimizer):", "class SoapLike:").replace(
        "        super().__init__(params, dict(lr=lr, betas=betas, precondition_frequency=precondition_frequency,\n"
        "                                      shampoo_beta=shampoo_beta))",
        "        self.param_groups = [dict(params=list(params), lr=lr, betas=betas,\n"
        "                                  precondition_frequency=precondition_frequency, shampoo_beta=shampoo_beta)]"
    ).replace("        state[\"precondition_frequency\"] = precondition_frequency\n",
              "        state[\"precondition_frequency\"] = p.grad.norm()\n")
    assert codes(lint(code)) == []


def test_the_steps_state_aliases_are_worked_out_once_per_check(lint, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every `if` of a step asks whether its test reads the parameter's state, which needs the names bound to
    it (`state = self.state[p]`): a walk of the whole step, made once for the step, not once per `if`
    (an optimizer's step with 30 `if`s was walked 30 times on every check, and on every edit in an editor)."""
    from cslint.rules import optimizer_state

    guard = "                if \"k{0}\" not in state:\n                    state[\"k{0}\"] = torch.zeros_like(p)\n"
    ifs = "".join(guard.format(k) for k in range(30))
    code = f"""
import torch
from torch.optim import Optimizer

class Many(Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["buf"] = torch.zeros_like(p)
{ifs}"""
    walked: list[str] = []
    plain = optimizer_state.state_aliases
    monkeypatch.setattr(optimizer_state, "state_aliases", lambda node: walked.append(node.name.value) or plain(node))
    found = lint(code, select=("WSC301",))
    assert len(found) == 31 and found[0].message.startswith("`if len(state) == 0`")
    assert walked.count("step") <= 2  # once per check of the step (124 on the old code: per `if`, per question)


@pytest.mark.parametrize("target", ["wsc", "compile"])
def test_an_optional_argument_defaulted_in_a_helper_is_not_state(lint, target) -> None:
    """`def stochastic_round_(ref, source=None): if source is None: source = ref` called from a step with one
    argument: `source` is the caller's optional argument, given afresh on every call, not state the first step
    creates (set 3's F2, heavyball); the state entry made behind `if buf is None` in the step still is."""
    code = """
import torch


def stochastic_round_(ref: torch.Tensor, source: torch.Tensor | None = None):
    if source is None:
        source = ref.clone()
    ref.copy_(source)
    return ref


class Rounded(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                buf = state.get("momentum")
                if buf is None:
                    buf = state["momentum"] = torch.zeros_like(p)
                buf.mul_(0.9).add_(p.grad)
                p.add_(buf, alpha=-0.01)
                stochastic_round_(p)
"""
    first_step = {"wsc": "WSC301", "compile": "WSC703"}[target]
    assert [d.line for d in lint(code, target=target) if d.code == first_step] == [21]
