"""torch_xla training loops: the body of a loop that ends in `xm.mark_step()` is traced like a step function."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from cslint.analysis.index import index_module
from cslint.analysis.kinds import STATIC
from cslint.analysis.project import Project
from cslint.analysis.traced import find_roots
from cslint.analysis.xla_loops import LoopStep, loop_step_seeds
from tests.test_step_function import OPTIMIZER  # the same hand-written optimizer

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

# The classic loop, written out in the function: the statements before xm.mark_step() are the step.
TRAIN_LOOP = """
import torch
import torch_xla.core.xla_model as xm

from model import Regressor

loss_fn = torch.nn.MSELoss()


def train_loop(model: Regressor, loader, optimizer):
    for x, y in loader:
        optimizer.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        print(loss.item())
        xm.mark_step()
"""

# The loop calls a step function defined in the tree; model and optimizer are built before the loop.
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


def _project(files: dict[str, str]) -> Project:
    return Project(index_module(Path(name), code, cst.parse_module(code), name.removesuffix(".py"), False)
                   for name, code in files.items())


def _roots(files: dict[str, str]) -> dict[str, str]:
    return {func.qualname: reason for func, reason in find_roots(_project(files))}


def test_the_loop_body_before_mark_step_is_a_traced_step(lint):
    found = lint({"model.py": MODEL, "train.py": TRAIN_LOOP}, target="xla")
    assert _found(found) == [("model.py", 11, "WSC101"), ("train.py", 15, "WSC201"), ("train.py", 15, "WSC701")]
    item = next(d for d in found if d.code == "WSC201")
    assert item.chain == ["train.train_loop"]
    assert item.reason == "the body of a loop in train_loop that ends each step with xm.mark_step()"
    assert item.message.endswith("on XLA it runs the graph so far")  # the xla target's consequence
    branch = next(d for d in found if d.path.name == "model.py")
    assert branch.chain == ["train.train_loop", "model.Regressor.forward"]  # `model(x)`, model: Regressor


def test_the_loop_root_stands_in_for_the_function():
    roots = _roots({"model.py": MODEL, "train.py": TRAIN_LOOP})
    assert roots["train.train_loop"] == "the body of a loop in train_loop that ends each step with xm.mark_step()"
    assert roots["model.Regressor.forward"] == "forward of nn.Module subclass Regressor"


def test_the_same_loop_without_mark_step_makes_no_root(lint):
    train = TRAIN_LOOP.replace("        xm.mark_step()\n", "")
    assert "train.train_loop" not in _roots({"model.py": MODEL, "train.py": train})
    found = lint({"model.py": MODEL, "train.py": train}, target="xla")
    assert _found(found) == [("model.py", 11, "WSC101")]
    assert found[0].chain == ["model.Regressor.forward"]


def test_a_project_function_named_mark_step_is_not_xla(lint):
    train = TRAIN_LOOP.replace("import torch_xla.core.xla_model as xm\n", "import torch_xla\nfrom utils import xm\n")
    utils = "def mark_step():\n    pass\n\nclass xm:\n    mark_step = staticmethod(mark_step)\n"
    assert "train.train_loop" not in _roots({"model.py": MODEL, "train.py": train, "utils.py": utils})
    assert _found(lint({"model.py": MODEL, "train.py": train, "utils.py": utils}, target="xla")) == [
        ("model.py", 11, "WSC101")]


@pytest.mark.parametrize(("import_line", "call", "spelled"), [
    ("import torch_xla.core.xla_model as xm", "xm.mark_step()", "xm.mark_step()"),
    ("from torch_xla.core import xla_model as xm", "xm.mark_step()", "xm.mark_step()"),
    ("import torch_xla.core.xla_model as xla_model", "xla_model.mark_step()", "xm.mark_step()"),
    ("from torch_xla.core.xla_model import mark_step", "mark_step()", "xm.mark_step()"),
    ("import torch_xla.core.xla_model", "torch_xla.core.xla_model.mark_step()", "xm.mark_step()"),
    ("import torch_xla", "torch_xla.sync()", "torch_xla.sync()"),
    ("import torch_xla as tx", "tx.sync()", "torch_xla.sync()"),
    ("from torch_xla import sync", "sync()", "torch_xla.sync()"),
])
def test_spellings_of_mark_step(lint, import_line, call, spelled):
    train = TRAIN_LOOP.replace("import torch_xla.core.xla_model as xm", import_line).replace("xm.mark_step()", call)
    found = lint({"model.py": MODEL, "train.py": train}, target="xla")
    assert _found(found) == [("model.py", 11, "WSC101"), ("train.py", 15, "WSC201"), ("train.py", 15, "WSC701")]
    assert {d.reason for d in found} == {f"the body of a loop in train_loop that ends each step with {spelled}"}


def test_with_torch_xla_step_marks_the_step(lint):
    train = TRAIN_LOOP.replace("import torch_xla.core.xla_model as xm", "import torch_xla").replace(
        """    for x, y in loader:
        optimizer.zero_grad()""", """    for x, y in loader:
      with torch_xla.step():
        optimizer.zero_grad()""").replace("        xm.mark_step()\n", "")
    found = lint({"model.py": MODEL, "train.py": train}, target="xla")
    assert _found(found) == [("model.py", 11, "WSC101"), ("train.py", 16, "WSC201"), ("train.py", 16, "WSC701")]


def test_loop_roots_are_found_for_every_target(lint):
    for target in ("wsc", "rdu", "compile"):
        found = lint({"model.py": MODEL, "train.py": TRAIN_LOOP}, target=target)
        assert ("train.py", 15, "WSC201") in _found(found), target


def test_code_around_the_step_is_not_traced(lint):
    train = """
import torch
import torch_xla
import torch_xla.core.xla_model as xm

from model import Regressor
from optim import SignSGD


def train(loader, epochs, log_every=10):
    device = xm.xla_device()
    model = Regressor(16).to(device)
    optimizer = SignSGD(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.MSELoss()
    total = 0.0
    for epoch in range(epochs):
        if epoch > 3 and log_every:
            print("late epoch", epoch)
        for step, (x, y) in enumerate(loader):
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            if step % log_every == 0:
                total += 1
            if loss > 10:
                loss = loss / 10
            torch_xla.sync()
            if step % log_every == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.3f}")
        total += loss.item()
    print("done", total)
    return model
"""
    found = lint({"model.py": MODEL, "optim.py": OPTIMIZER, "train.py": train}, target="xla")
    # only `if loss > 10` (line 26) in the loop; not the epoch loop, nor the logging after sync, nor after the loop
    assert _found(found) == [("model.py", 11, "WSC101"), ("optim.py", 11, "WSC601"), ("train.py", 26, "WSC101")]
    by_file = {d.path.name: d for d in found}
    assert by_file["model.py"].chain == ["train.train", "model.Regressor.forward"]  # model = Regressor(16)
    assert by_file["optim.py"].chain == ["train.train", "optim.SignSGD.step"]  # optimizer = SignSGD(...)
    assert by_file["train.py"].reason == "the body of a loop in train that ends each step with torch_xla.sync()"


def test_a_function_called_in_the_loop_gets_its_arguments(lint):
    found = lint({"model.py": MODEL, "train.py": TRAIN}, target="xla")
    assert _found(found) == [("model.py", 11, "WSC101"), ("train.py", 12, "WSC201"), ("train.py", 12, "WSC701")]
    step = next(d for d in found if d.code == "WSC201")
    assert step.chain == ["train.train", "train.train_step"]
    assert step.reason == "the body of a loop in train that ends each step with xm.mark_step()"
    branch = next(d for d in found if d.path.name == "model.py")
    assert branch.chain == ["train.train", "train.train_step", "model.Regressor.forward"]


def test_the_same_call_without_mark_step_makes_no_root(lint):
    found = lint({"model.py": MODEL, "train.py": TRAIN.replace("        xm.mark_step()\n", "")})
    assert _found(found) == [("model.py", 11, "WSC101")]


def test_gradient_accumulation_marks_the_step_in_a_branch(lint):
    train = """
import torch
import torch_xla.core.xla_model as xm

from optim import SignSGD


def fit(model, loader, accumulate, max_steps):
    optimizer = SignSGD(model.parameters(), lr=1e-3)
    global_step = 0
    for i, batch in enumerate(loader):
        loss = model(**batch).loss / accumulate
        loss.backward()
        if (i + 1) % accumulate == 0:
            optimizer.step()
            optimizer.zero_grad()
            global_step += 1
            if xm.is_master_ordinal():
                xm.mark_step()
        if global_step >= max_steps:
            break
    return global_step
"""
    found = lint({"optim.py": OPTIMIZER, "train.py": train}, target="xla")
    assert _found(found) == [("optim.py", 11, "WSC601")]
    assert found[0].chain == ["train.fit", "optim.SignSGD.step"]


def test_a_top_level_training_script_loop(lint):
    script = """
import torch
import torch_xla.core.xla_model as xm

from model import Regressor

def step(batch):
    loss = batch.sum()
    if loss > 0:
        loss = loss * 2
    return loss

model = Regressor(8).to(xm.xla_device())
losses = []
if __name__ == "__main__":
    for batch in torch.randn(4, 3):
        losses.append(step(batch).item())
        model(batch).sum().backward()
        xm.mark_step()
    print(sum(losses))
"""
    found = lint({"model.py": MODEL, "script.py": script}, target="xla")
    assert _found(found) == [("model.py", 11, "WSC101"), ("script.py", 8, "WSC101"), ("script.py", 16, "WSC201")]
    item = next(d for d in found if d.code == "WSC201")
    assert item.chain == ["script.<module>"]
    assert item.reason == "the body of a loop in the top level of script that ends each step with xm.mark_step()"
    assert next(d for d in found if d.line == 8).chain == ["script.<module>", "script.step"]
    assert next(d for d in found if d.path.name == "model.py").chain == ["script.<module>", "model.Regressor.forward"]


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
    found = lint({"trainer.py": trainer}, target="xla")
    assert _found(found) == [("trainer.py", 10, "WSC201")]
    assert found[0].chain == ["trainer.Trainer.fit", "trainer.Trainer.train_step"]


def test_a_trainer_using_its_model_attribute(lint):
    trainer = """
import torch
import torch_xla.core.xla_model as xm

from model import Regressor

class Trainer:
    def __init__(self, dim, lr):
        self.model = Regressor(dim).to(xm.xla_device())
        self.optimizer = torch.optim.SGD(self.model.parameters(), lr=lr)

    def fit(self, loader):
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(self.model(x), y)
            loss.backward()
            self.optimizer.step()
            if torch.isnan(loss):
                raise ValueError("nan loss")
            xm.mark_step()
"""
    found = lint({"model.py": MODEL, "trainer.py": trainer}, target="xla")
    assert _found(found) == [("model.py", 11, "WSC101"), ("trainer.py", 16, "WSC101")]
    assert found[0].chain == ["trainer.Trainer.fit", "model.Regressor.forward"]


def test_a_loop_in_a_function_nested_in_the_spawned_function(lint):
    train = """
import torch
import torch_xla.core.xla_model as xm

from model import Regressor


def _mp_fn(index, flags):
    device = xm.xla_device()
    model = Regressor(flags.dim).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=flags.lr)

    def train_loop_fn(loader, epoch):
        for step, (data, target) in enumerate(loader):
            optimizer.zero_grad()
            loss = torch.nn.functional.mse_loss(model(data), target)
            loss.backward()
            if loss > 100:
                print("diverged at", step)
            xm.optimizer_step(optimizer)
            xm.mark_step()

    for epoch in range(flags.epochs):
        train_loop_fn(flags.loader, epoch)
"""
    found = lint({"model.py": MODEL, "train.py": train}, target="xla")
    assert _found(found) == [("model.py", 11, "WSC101"), ("train.py", 17, "WSC101")]
    assert found[0].chain == ["train._mp_fn", "model.Regressor.forward"]
    assert found[1].reason == "the body of a loop in _mp_fn that ends each step with xm.mark_step()"


def test_two_loops_in_one_function_are_one_root(lint):
    train = TRAIN_LOOP + """
    for x, y in loader:
        if model(x).sum() > 0:
            print("positive")
        xm.mark_step()
"""
    roots = _roots({"model.py": MODEL, "train.py": train})
    assert [name for name in roots if name.startswith("train.")] == ["train.train_loop"]
    assert _found(lint({"model.py": MODEL, "train.py": train}, target="xla")) == [
        ("model.py", 11, "WSC101"), ("train.py", 15, "WSC201"), ("train.py", 15, "WSC701"), ("train.py", 19, "WSC101")]


def test_a_loop_step_is_a_loop_step_function():
    roots = [func for func, _ in find_roots(_project({"model.py": MODEL, "train.py": TRAIN_LOOP}))]
    (step,) = [func for func in roots if isinstance(func, LoopStep)]
    assert step.step_function and step.enclosing is not None and step.enclosing.qualname == "train.train_loop"
    assert [type(s).__name__ for s in step.node.body.body] == ["SimpleStatementLine"] * 6


def test_other_parameters_of_the_loop_function_are_not_tensors(lint):
    train = TRAIN_LOOP.replace("loader, optimizer):", "loader, optimizer, clip, log_every):").replace(
        "        optimizer.step()\n", """        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
""")
    found = lint({"model.py": MODEL, "train.py": train}, target="xla")
    assert _found(found) == [("model.py", 11, "WSC101"), ("train.py", 17, "WSC201"), ("train.py", 17, "WSC701")]


def test_a_fallback_for_a_missing_torch_xla_keeps_the_import(lint):
    script = """
import torch
try:
    import torch_xla.core.xla_model as xm
except ImportError:
    xm = None

from model import Regressor

model = Regressor(8)
for step in range(100):
    loss = model(torch.randn(4, 8)).sum()
    loss.backward()
    xm.mark_step()
    print(step, loss.item())
"""
    found = lint({"model.py": MODEL, "script.py": script}, target="xla")
    assert _found(found) == [("model.py", 11, "WSC101")]  # `loss.item()` after mark_step is fine
    project = _project({"model.py": MODEL, "script.py": script})
    (step,) = [func for func, _ in find_roots(project) if isinstance(func, LoopStep)]
    seeds = loop_step_seeds(project, step, {})
    assert seeds["step"] == STATIC and seeds["model"].cls == "model.Regressor"
    assert "xm" not in seeds  # still resolves through its import


def test_a_python_counter_in_an_xla_loop_is_not_reported_as_running_once(lint):
    """XLA re-runs the loop's Python every step, so `self.steps += 1` counts; WSC702 is about trace-once."""
    trainer = """
import torch_xla.core.xla_model as xm

class Trainer:
    def __init__(self):
        self.steps = 0

    def fit(self, loader):
        for batch in loader:
            self.steps += 1
            loss = batch.sum()
            xm.mark_step()
"""
    assert [d.code for d in lint({"trainer.py": trainer})] == []
