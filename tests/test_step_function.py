"""A `@cstorch.trace` step function reaches the forward and optimizer step of the objects it uses."""

from __future__ import annotations

from tests.conftest import codes

MODEL = """
import torch
from torch import nn

class Classifier(nn.Module):
    def __init__(self, dim, classes):
        super().__init__()
        self.head = nn.Linear(dim, classes)

    def forward(self, x, labels):
        logits = self.head(x)
        keep = labels != -100
        return nn.functional.cross_entropy(logits[keep], labels[keep])

class Unused(nn.Module):
    def forward(self, x):
        return x[x > 0]
"""

OPTIMIZER = """
import torch

class SignSGD(torch.optim.Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                p.sub_(group["lr"] * p.grad.double().sign())
"""

TRAIN = """
import cerebras.pytorch as cstorch
from models import Classifier
from optim import SignSGD

DEVICE = "cpu"
model = Classifier(16, 4).to(DEVICE)
compiled = cstorch.compile(model, backend=None)
optimizer = SignSGD(model.parameters(), lr=0.01)

@cstorch.trace
def training_step(batch):
    loss = compiled(batch["features"], batch["labels"])
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss
"""


def _by_code(found):
    return {d.code: d for d in found}


def test_findings_in_forward_and_step_carry_the_chain(lint):
    found = lint({"models.py": MODEL, "optim.py": OPTIMIZER, "train.py": TRAIN}, select=("WSC502", "WSC601"))
    by_path = {(d.path.name, d.code, d.line): d.chain for d in found}
    assert by_path[("models.py", "WSC502", 12)] == ["train.training_step", "models.Classifier.forward"]
    assert by_path[("optim.py", "WSC601", 11)] == ["train.training_step", "optim.SignSGD.step"]
    # a module the step never uses is still linted as a root of its own
    assert by_path[("models.py", "WSC502", 16)] == ["models.Unused.forward"]


def test_without_a_step_function_the_chain_is_the_root(lint):
    found = lint({"models.py": MODEL, "optim.py": OPTIMIZER}, select=("WSC601",))
    assert [d.chain for d in found] == [["optim.SignSGD.step"]]


def test_step_parameters_get_object_kinds_by_name_and_annotation(lint):
    code = """
    import torch
    import cerebras.pytorch as cstorch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            return self.fc(x)

    THRESHOLD = 0.5

    @cstorch.trace
    def training_step(model, optimizer, batch, net: Net, loss_scale: float = 1.0):
        if model.training and THRESHOLD > 0:
            out = model(batch["x"])
        for group in optimizer.param_groups:
            group["weight_decay"] = 0.0
        loss = (out.sum() + net(batch["x"]).sum()) * loss_scale
        if loss > 10:
            loss = loss / 2
        loss.backward()
        optimizer.step()
        return loss
    """
    # only the data-dependent `if loss > 10` is control flow on a tensor
    assert codes(lint(code, select=("WSC1",))) == [("WSC101", 22)]


def test_passed_objects_keep_their_class(lint):
    code = """
    import cerebras.pytorch as cstorch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x):
            return x[x.isnan()]

    model = Net()

    @cstorch.trace
    def training_step(model, x):
        return model(x)
    """
    found = lint(code, select=("WSC502",))
    assert [d.chain for d in found] == [["model.training_step", "model.Net.forward"]]
