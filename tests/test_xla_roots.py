"""torch_xla training loops: what a loop ending in `xm.mark_step()` calls is traced like a step function."""

from __future__ import annotations

import pytest

MODEL = """
import torch
from torch import nn

class Regressor(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, 1)

    def forward(self, x):
        out = self.proj(x)
        if out.mean() > 0:
            out = out * 2
        return out
"""

TRAIN = """
import torch
import torch_xla.core.xla_model as xm

from model import Regressor


def train_step(model, x, y, optimizer):
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    print(f"loss {loss.item():.3f}")
    return loss


def train(loader, steps):
    model = Regressor(16).to(xm.xla_device())
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        train_step(model, x, y, optimizer)
        xm.mark_step()
    print("done", steps.item())
"""


def _found(diagnostics):
    return sorted((d.path.name, d.line, d.code) for d in diagnostics)


def test_a_function_called_in_a_mark_step_loop_is_a_traced_step(lint):
    found = lint({"model.py": MODEL, "train.py": TRAIN})
    assert ("train.py", 12, "WSC201") in _found(found)  # loss.item() inside the step
    assert ("train.py", 12, "WSC701") in _found(found)  # printing a traced value
    step = next(d for d in found if d.path.name == "train.py" and d.code == "WSC201")
    assert step.chain == ["train.train_step"]
    assert "xm.mark_step()" in step.reason
    branch = next(d for d in found if d.path.name == "model.py")
    assert (branch.line, branch.code) == (11, "WSC101")
    assert branch.chain == ["model.Regressor.forward"]  # a root of its own: `model`'s class is not known here


def test_an_annotated_model_parameter_puts_forward_under_the_step(lint):
    train = TRAIN.replace("def train_step(model,", "def train_step(model: Regressor,")
    branch = next(d for d in lint({"model.py": MODEL, "train.py": train}) if d.path.name == "model.py")
    assert branch.chain == ["train.train_step", "model.Regressor.forward"]


def test_code_around_the_loop_is_not_traced(lint):
    found = lint({"model.py": MODEL, "train.py": TRAIN})
    assert not [d for d in found if d.path.name == "train.py" and d.line > 16]  # `steps.item()` after the loop


def test_the_same_loop_without_mark_step_makes_no_root(lint):
    found = lint({"model.py": MODEL, "train.py": TRAIN.replace("        xm.mark_step()\n", "")})
    assert not [d for d in found if d.path.name == "train.py"]


@pytest.mark.parametrize("spelling", [
    ("import torch_xla.core.xla_model as xm", "xm.mark_step()"),
    ("from torch_xla.core import xla_model as xm", "xm.mark_step()"),
    ("from torch_xla.core.xla_model import mark_step", "mark_step()"),
    ("import torch_xla", "torch_xla.sync()"),
])
def test_spellings_of_mark_step(lint, spelling):
    import_line, call = spelling
    train = TRAIN.replace("import torch_xla.core.xla_model as xm", f"{import_line}\nimport torch_xla.core.xla_model")
    train = train.replace("xm.mark_step()", call).replace("xm.xla_device()", "'cpu'")
    found = lint({"model.py": MODEL, "train.py": train})
    assert any(d.path.name == "train.py" and d.code == "WSC201" for d in found)


def test_a_top_level_training_script_loop(lint):
    script = """
import torch
import torch_xla.core.xla_model as xm

def step(batch):
    loss = batch.sum()
    if loss > 0:
        loss = loss * 2
    return loss

for batch in torch.randn(4, 3):
    step(batch)
    xm.mark_step()
"""
    assert _found(lint({"script.py": script})) == [("script.py", 6, "WSC101")]


def test_a_method_loop_calling_self_train_step(lint):
    trainer = """
import torch_xla.core.xla_model as xm

class Trainer:
    def fit(self, loader):
        for batch in loader:
            self.train_step(batch)
            xm.mark_step()

    def train_step(self, batch):
        return batch.sum().item()

    def report(self, batch):
        return batch.sum().item()
"""
    assert _found(lint({"trainer.py": trainer})) == [("trainer.py", 10, "WSC201")]
