"""WSC7xx: trace-time side effects flagged in traced steps and helpers, never outside traced code."""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import codes

SIDE_EFFECTS = """
import logging
import random
import warnings
import numpy as np
import torch
from torch import nn

STEP = 0

class Net(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.calls = 0

    def forward(self, x):
        global STEP
        print("loss", x.mean())
        logging.info("x %s", x)
        warnings.warn(f"max {x.max()}")
        self.calls += 1
        STEP += 1
        y = x * (0.9 ** self.calls)
        torch.manual_seed(0)
        random.seed(1)
        noise = np.random.rand()
        x.requires_grad_(True)
        self.encoder.weight.requires_grad = False
        self.encoder.train()
        return y + noise
"""
EXPECTED = [("WSC701", 18), ("WSC701", 19), ("WSC701", 20), ("WSC702", 21), ("WSC702", 22), ("WSC703", 23),
            ("WSC704", 24), ("WSC704", 25), ("WSC704", 26), ("WSC705", 27), ("WSC705", 28), ("WSC705", 29)]


def test_every_form_is_flagged_in_forward(lint):
    assert codes(lint(SIDE_EFFECTS, select=("WSC7",))) == EXPECTED


def test_every_form_is_flagged_in_a_helper_called_from_forward(lint):
    code = SIDE_EFFECTS.replace("    def forward(self, x):\n        global STEP",
                                "    def forward(self, x):\n        return self._body(x)\n\n"
                                "    def _body(self, x):\n        global STEP")
    found = lint(code, select=("WSC7",))
    assert codes(found) == [(c, n + 3) for c, n in EXPECTED]
    assert all(d.chain[-1].endswith("Net._body") and d.chain[0].endswith("Net.forward") for d in found)


def test_host_generators_under_compile_are_graph_breaks_not_frozen_values(lint):
    """dynamo does not trace `random`, NumPy's generator or seeding (torch 2.13, fullgraph: "Attempted to call
    function marked as skipped"): under torch.compile the message says the graph breaks, not that the value
    is frozen, and gives no logging advice."""
    rng = [d for d in lint(SIDE_EFFECTS, select=("WSC704",), target="compile")]
    assert [d.line for d in rng] == [24, 25, 26]
    for d in rng:
        assert "a graph break under torch.compile" in d.message, d.message
        assert "constant of the graph" not in d.message and "runs once" not in d.message and "log" not in d.message
    lazy = lint(SIDE_EFFECTS, select=("WSC704",), target="wsc")
    assert lazy and all(("constant of the graph" in d.message or "runs once" in d.message)
                        and "graph break" not in d.message for d in lazy)


def test_not_flagged_outside_traced_code(lint):
    code = """
    import logging
    import random
    import numpy as np
    import torch
    from torch import nn

    logger = logging.getLogger(__name__)

    class Net(nn.Module):
        def __init__(self, encoder):
            super().__init__()
            torch.manual_seed(0)
            self.encoder = encoder
            self.encoder.requires_grad_(False)
            self.encoder.eval()
            self.calls = 0
            print("init weights", self.encoder.weight.mean())

        def forward(self, x):
            print("starting forward")
            return self.encoder(x)


    def train(model, loader, opt):
        step = 0
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            loss.backward()
            opt.step()
            step += 1
            model.calls += 1
            logger.info("step %d loss %s", step, loss)
            print(f"loss {loss.item():.4f}")


    def evaluate(model, loader):
        model.eval()
        for p in model.parameters():
            p.requires_grad = False
        return [model(x) for x in loader]


    def worker_init_fn(worker_id):
        np.random.seed(worker_id)
        random.seed(worker_id)
    """
    assert lint(code, select=("WSC7",)) == []


def test_registered_buffer_update_and_plain_messages_are_fine(lint):
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("step", torch.zeros((), dtype=torch.long))

        def forward(self, x):
            self.step += 1
            print("tracing forward with shape", tuple(x.shape))
            return x * torch.pow(0.99, self.step)
    """
    assert lint(code, select=("WSC7",)) == []


def test_counter_fix_needs_a_literal_start_after_super_init(lint):
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self, start):
            self.calls = 0
            super().__init__()

        def forward(self, x):
            self.calls += 1
            return x
    """
    found = lint(code, select=("WSC702",))
    assert codes(found) == [("WSC702", 10)]
    assert found[0].fix is None  # register_buffer before nn.Module.__init__ would raise


PRINT_LOSS = """
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x, y):
        loss = (x - y).pow(2).mean()
        print(f"loss {loss.item():.4f}")
        return loss
"""


def test_print_fix_targets_a_step_closure_by_default(fix):
    # the project imports cerebras.pytorch elsewhere (its training script), so the model file may too
    fixed = fix(PRINT_LOSS, unsafe=True, project_packages=("cerebras", "torch"))
    assert 'cerebras.pytorch.step_closure(lambda loss: print(f"loss {loss.item():.4f}"))(loss)' in fixed
    assert fixed.startswith("import cerebras.pytorch\n")
    assert fix(PRINT_LOSS) == fix(PRINT_LOSS, cerebras_version="2.4")  # unsafe: not applied by default


def test_no_fix_imports_a_package_the_project_does_not_import(fix):
    # neither the file nor the project imports cerebras.pytorch: the step-closure fix is not offered
    assert fix(PRINT_LOSS, unsafe=True) == textwrap.dedent(PRINT_LOSS).lstrip("\n")
    assert fix(PRINT_LOSS, unsafe=True, project_packages=("torch",)) == textwrap.dedent(PRINT_LOSS).lstrip("\n")


def test_print_fix_uses_the_existing_alias(fix):
    code = "import cerebras.pytorch as cstorch\n" + PRINT_LOSS
    fixed = fix(code, unsafe=True)
    assert "cstorch.step_closure(lambda loss: print(" in fixed
    assert fixed.count("import cerebras") == 1


def test_print_fix_targets_summarize_scalar_before_2_1(fix):
    fixed = fix(PRINT_LOSS, unsafe=True, cerebras_version="2.0", project_packages=("cerebras",))
    assert 'cerebras.pytorch.summarize_scalar("loss", loss)' in fixed


def test_summarize_tensor_for_a_tensor_of_unknown_rank(fix):
    code = """
    import cerebras.pytorch as cstorch
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x):
            logits = x.softmax(-1)
            print(logits)
            return logits
    """
    assert 'cstorch.summarize_tensor("logits", logits)' in fix(code, unsafe=True, cerebras_version="1.9")


def test_summarize_names_the_summary_from_a_bytes_message(fix):
    # the name is the message's words, and a bytes literal's value is bytes (its items are ints)
    code = """
    import cerebras.pytorch as cstorch
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x, y):
            print(b"total:", x + y)
            return x
    """
    assert 'cstorch.summarize_tensor("total", x + y)' in fix(code, unsafe=True, cerebras_version="1.9")


def test_summarize_fix_computes_the_same(fix, tmp_path):
    torch = pytest.importorskip("torch")
    code = PRINT_LOSS.replace("import torch\n", "import torch\nfrom types import SimpleNamespace\n"
                              "try:\n    import cerebras.pytorch as cstorch\nexcept ImportError:\n"
                              "    cstorch = SimpleNamespace(summarize_scalar=lambda name, value: None)\n")
    fixed = fix(code, unsafe=True, cerebras_version="2.0")
    assert 'cstorch.summarize_scalar("loss", loss)' in fixed
    before: dict[str, object] = {}
    after: dict[str, object] = {}
    exec(compile(code, "before", "exec"), before)
    exec(compile(fixed, "after", "exec"), after)
    for seed in range(3):
        torch.manual_seed(seed)
        x, y = torch.randn(4, 3), torch.randn(4, 3)
        torch.testing.assert_close(after["Net"]()(x, y), before["Net"]()(x, y))  # type: ignore[operator]


def test_print_of_an_attribute_tensor_gets_no_closure_fix(lint):
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("ema", torch.zeros(()))

        def forward(self, x):
            print("ema", self.ema)
            return x
    """
    found = lint(code, select=("WSC701",))
    assert codes(found) == [("WSC701", 10)] and found[0].fix is None


@pytest.mark.parametrize("target, expected", [
    ("wsc", [14, 15]),
    # dynamo cannot trace any switch of `requires_grad` (checked on torch 2.13 with fullgraph=True: "setattr()
    # on Tensor.requires_grad", "returning intermediate with requires_grad_()"): each is a graph break
    ("compile", [9, 11, 12, 14, 15]),
])
def test_requires_grad_of_a_tensor_the_step_makes_is_not_a_switch(lint, target, expected):
    code = """
    import torch
    from torch import nn

    class Attention(nn.Module):
        def forward(self, hidden, position_bias=None):
            if position_bias is None:
                position_bias = torch.zeros(1, 8, hidden.shape[1], hidden.shape[1], device=hidden.device)
                if self.training:
                    position_bias.requires_grad = True
            rep = hidden.detach().clone()
            rep.requires_grad = True
            scale = torch.ones(()).requires_grad_()
            weight = self.proj.weight
            weight.requires_grad = False
            position_bias.requires_grad = False
            return self.proj(rep * scale) + position_bias
    """
    assert codes(lint(code, target=target)) == [("WSC705", line) for line in expected]


def test_requires_grad_outside_traced_code_stays_quiet(lint):
    code = """
    import torch

    def freeze(model):
        weight = model.proj.weight
        weight.requires_grad = False
        fresh = torch.zeros(3)
        fresh.requires_grad = True
    """
    assert codes(lint(code)) == []


SCHEDULER_LOOP = """
import torch
from torch import nn


class Scheduler:
    def __init__(self, steps):
        self._step_index = None
        self.sigmas = torch.linspace(1, 0, steps)
        self.first = 0

    def step(self, model_output, sample):
        if self._step_index is None:
            self._step_index = 0
        sigma = self.sigmas[self._step_index]
        base = self.sigmas[self.first]
        self._step_index += 1
        return sample - (sigma + base) * model_output


class EMA:
    def __init__(self):
        self.optimization_step = 0

    def step(self, params):
        self.optimization_step += 1
        decay = min(0.999, (1 + self.optimization_step) / (10 + self.optimization_step))
        for p in params:
            p.mul_(decay)


@torch.compile
def train_step(model, scheduler, ema, x, noise):
    x = scheduler.step(model(x), noise)
    ema.step(model.parameters())
    return x


model = nn.Linear(4, 4)
scheduler = Scheduler(10)
ema = EMA()
"""


@pytest.mark.parametrize("target", ("wsc", "compile"))
def test_python_state_of_any_object_the_step_advances(lint, target):
    assert codes(lint(SCHEDULER_LOOP, target=target)) == [
        ("WSC703", 14), ("WSC702", 16), ("WSC702", 25), ("WSC703", 28)]


def test_python_state_of_objects_outside_traced_code_stays_quiet(lint):
    assert codes(lint(SCHEDULER_LOOP.replace("@torch.compile\n", ""))) == []


DISABLED_HELPER = """
import numpy as np
import torch
from torch import nn


@torch.compiler.disable
def spans(length: int) -> np.ndarray:
    return np.random.rand(length) < 0.1


def scale(x):
    return x * 2


class Masker(nn.Module):
    def forward(self, x):
        keep = torch.as_tensor(spans(x.shape[1]))
        return scale(x) * keep


def collate(batch):
    return torch.stack(batch), torch.as_tensor(spans(len(batch[0])))
"""


def test_a_call_of_a_disabled_function_is_a_break_under_compile(lint):
    # the call in forward breaks the graph; the helper itself is not traced, the collate call is not in a step
    assert codes([d for d in lint(DISABLED_HELPER, target="compile")]) == [("WSC707", 17)]


@pytest.mark.parametrize("target", ("wsc", "xla", "rdu"))
def test_a_call_of_a_disabled_function_is_traced_through_on_lazy_targets(lint, target):
    # a lazy trace ignores the decorator: the draw inside is what gets reported there
    assert [d.code for d in lint(DISABLED_HELPER, target=target)] == ["WSC704"]
