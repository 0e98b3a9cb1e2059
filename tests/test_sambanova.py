"""SambaNova RDU: roots from trace_graph/trace_multigraph calls and the misuse rules WSC851-WSC853."""

from __future__ import annotations

from cslint.analysis.index import index_module
from cslint.analysis.module_names import module_name_for
from cslint.analysis.project import Project
from cslint.analysis.traced import find_roots
from cslint.core.sources import parse, read_source

MODEL = """
import torch
import torch.nn as nn

class Classifier(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, 10)
        self.criterion = nn.CrossEntropyLoss()
        if torch.rand(()) > 0.5:  # __init__ is not traced
            self.fc.bias.data.zero_()

    def forward(self, x, y):
        logits = self.fc(x)
        loss = self.criterion(logits, y)
        return loss, logits
"""

OPTIM = """
import torch

class Momentum(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad.abs().max() > 1e3:
                    p.grad.clamp_(-1e3, 1e3)
                p.sub_(p.grad)
"""

TRAIN = """
from sambaflow import samba
import sambaflow.samba.utils as utils

from model import Classifier
from optim import Momentum

def main(args):
    model = Classifier(args.dim)
    samba.from_torch_model_(model)
    optimizer = Momentum(model.parameters(), lr=0.1)
    inputs = (samba.randn(8, args.dim, name="x"), samba.randint(10, (8,), name="y"))
    utils.trace_graph(model, inputs, optimizer, init_output_grads=False, pef=args.pef)
    for step in range(args.steps):
        loss, logits = samba.session.run(inputs, model.output_tensors)
    print(loss.item())  # host code: not traced
"""


def _roots(tmp_path, files):  # type: ignore[no-untyped-def]
    modules = []
    for name, code in files.items():
        path = tmp_path / name
        path.write_text(code.lstrip(), encoding="utf-8")
        source = read_source(path)
        parse(source)
        module_name, is_package = module_name_for(path)
        modules.append(index_module(path, source.text, source.tree, module_name, is_package))
    return {func.qualname: reason for func, reason in find_roots(Project(modules))}


def test_trace_graph_makes_forward_and_step_roots(tmp_path) -> None:
    roots = _roots(tmp_path, {"model.py": MODEL, "optim.py": OPTIM, "train.py": TRAIN})
    assert roots["model.Classifier.forward"] == "forward of Classifier, passed to samba.utils.trace_graph()"
    assert roots["optim.Momentum.step"] == "step of Momentum, passed to samba.utils.trace_graph()"


def test_trace_multigraph_roots_come_from_its_own_arguments(tmp_path) -> None:
    script = """
from sambaflow import samba
from model import Classifier
from optim import Momentum

head = Classifier(16)
samba.utils.trace_multigraph(head, inputs, optimizers=[Momentum(head.parameters())], trace_prefix="head")
"""
    roots = _roots(tmp_path, {"model.py": MODEL, "optim.py": OPTIM, "multi.py": script})
    assert roots["model.Classifier.forward"].endswith("passed to samba.utils.trace_multigraph()")
    assert roots["optim.Momentum.step"].endswith("passed to samba.utils.trace_multigraph()")


def test_a_local_function_named_trace_graph_is_not_samba(tmp_path) -> None:
    script = """
from model import Classifier

def trace_graph(model, inputs):
    return model(*inputs)

trace_graph(Classifier(4), inputs)
"""
    roots = _roots(tmp_path, {"model.py": MODEL, "script.py": script})
    assert roots["model.Classifier.forward"] == "forward of nn.Module subclass Classifier"


def test_rdu_fixture_gets_roots_and_misuse_findings(lint) -> None:
    found = lint({"model.py": MODEL, "optim.py": OPTIM, "train.py": TRAIN}, target="rdu")
    by_file = {(d.path.name, d.code) for d in found}
    assert ("train.py", "WSC851") in by_file
    assert ("train.py", "WSC853") in by_file
    # rules inside the roots the trace_graph call names, with the platform's reason
    step_if = next(d for d in found if d.path.name == "optim.py" and d.code == "WSC101")
    assert step_if.reason == "step of Momentum, passed to samba.utils.trace_graph()"
    assert not any(d.path.name == "model.py" and d.line < 12 for d in found)  # __init__ stays quiet
    assert not any(d.path.name == "train.py" and d.code.startswith(("WSC1", "WSC2")) for d in found)
    loss_indices = next(d for d in found if d.code == "WSC851")
    assert "`Classifier.forward` returns `loss, logits`" in loss_indices.message
    assert "loss_indices=[0]" in loss_indices.message


def test_rdu_rules_do_not_run_on_other_targets_unless_selected(lint) -> None:
    files = {"model.py": MODEL, "optim.py": OPTIM, "train.py": TRAIN}
    assert not any(d.code.startswith("WSC85") for d in lint(files))  # default target: wsc
    assert {d.code for d in lint(files, select=("WSC85",))} == {"WSC851", "WSC853"}


def test_loss_indices_and_grad_initialisation_silence_the_rules(lint) -> None:
    fixed = TRAIN.replace("init_output_grads=False, pef=args.pef)",
                          "init_output_grads=False, loss_indices=[0])\n"
                          "    utils.init_output_grads(model.output_tensors)")
    found = lint({"model.py": MODEL, "optim.py": OPTIM, "train.py": fixed}, target="rdu")
    assert not any(d.code.startswith("WSC85") for d in found)


def test_multigraph_traced_once_per_graph_is_quiet(lint) -> None:
    script = """
from sambaflow import samba

enc = samba.utils.trace_multigraph(encoder, enc_inputs, trace_prefix="enc")
dec = samba.utils.trace_multigraph(decoder, dec_inputs, trace_prefix="dec")
for step in range(10):
    samba.session.run(enc_inputs, enc)
"""
    assert lint(script, target="rdu") == []


def test_multigraph_retraced_in_a_training_loop_is_reported(lint) -> None:
    script = """
from sambaflow import samba

def train(encoder, loader):
    while True:
        batch = next(loader)
        outs = samba.utils.trace_multigraph(encoder, batch)
"""
    found = lint(script, target="rdu")
    assert [(d.code, d.line) for d in found] == [("WSC852", 6)]
    assert "in a loop" in found[0].message
