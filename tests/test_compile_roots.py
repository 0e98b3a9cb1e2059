"""A `torch.compile` of an internal function does not make the whole project a torch.compile project
(cslint/engine/compile_uses.py, target_inference.py): the other roots keep the project's target, and the text
report ends with the target and why it was chosen."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cslint.cli.main import main
from cslint.engine.compile_uses import compile_uses
from cslint.engine.target_inference import infer_target

PLAIN_OPTIMIZER = """
import torch


class {name}(torch.optim.Optimizer):
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["buf"] = torch.zeros_like(p)
                p.add_(state["buf"], alpha=-group["lr"])
"""

COMPILED_HELPER = """
import torch


def _update_fn(param, grad, lr):
    param.sub_(grad * lr)


_update = torch.compile(_update_fn)


class Fused(torch.optim.Optimizer):
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                _update(p, p.grad, group["lr"])
"""


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def _report(capsys, root: Path, *flags: str) -> str:
    main(["check", "--no-cache", "--exit-zero", *flags, str(root)])
    return capsys.readouterr().out


def test_an_internal_compile_keeps_the_other_optimizers_on_wsc(tmp_path, capsys):
    _project(tmp_path, {"sgd.py": PLAIN_OPTIMIZER.format(name="Sgd"), "momentum.py": PLAIN_OPTIMIZER.format(name="Mom"),
                        "fused.py": COMPILED_HELPER})
    out = _report(capsys, tmp_path, "--output-format", "concise")
    for name in ("sgd.py", "momentum.py"):
        assert f"{name}:9:20: WSC301" in out and f"{name}:11:44: WSC401" in out
    assert "WSC703" not in out  # the compile wording of the same state creation


def test_the_text_report_ends_with_the_target_and_why(tmp_path, capsys):
    _project(tmp_path, {"sgd.py": PLAIN_OPTIMIZER.format(name="Sgd"), "fused.py": COMPILED_HELPER})
    assert _report(capsys, tmp_path).splitlines()[-1] == (
        "target: wsc (default: the project imports no accelerator package, and torch.compile is given only internal "
        "functions (`_update_fn` in fused.py), not a model or a training step); compile for 1 root handed to "
        "torch.compile (`_update_fn` in fused.py)")  # checked for compile: a target per root (test_root_targets.py)
    assert _report(capsys, tmp_path, "--target", "compile").splitlines()[-1] == "target: compile (set by --target)"
    (tmp_path / "pyproject.toml").write_text('[tool.cslint]\ntarget = "xla"\n', encoding="utf-8")
    assert _report(capsys, tmp_path).splitlines()[-1] == \
        "target: xla (set in pyproject.toml); compile for 1 root handed to torch.compile (`_update_fn` in fused.py)"


def test_a_compiled_model_still_makes_a_compile_project(tmp_path, capsys):
    train = """
    import torch
    from models import build

    def main(cfg):
        model = torch.compile(build(cfg))
        return model
    """
    _project(tmp_path, {"sgd.py": PLAIN_OPTIMIZER.format(name="Sgd"), "train.py": train})
    out = _report(capsys, tmp_path)
    assert "sgd.py:9:20: WSC703" in out and "WSC301" not in out
    assert out.splitlines()[-1] == ("target: compile (inferred: the project hands its model or step to torch.compile "
                                    "(train.py) and imports no accelerator package)")


@pytest.mark.parametrize(("source", "entry", "helpers"), [
    # internal: private, a helper method, a kernel only a step() calls
    ("update = torch.compile(_update_fn)\ndef _update_fn(p): pass\n", False, ("_update_fn",)),
    ("class O:\n    def __init__(self):\n        self.u = torch.compile(self._update)\n"
     "    def _update(self, p): pass\n", False, ("_update",)),
    ("@torch.compile(fullgraph=True)\ndef newton_schulz(g):\n    return g\n"
     "class Muon:\n    def step(self):\n        newton_schulz(1)\n", False, ("newton_schulz",)),
    ("class M:\n    @torch.compile\n    def _kernel(self, x):\n        return x\n", False, ("_kernel",)),
    # the model or the step: a module, a call's result, `self.model`, a step called from a loop, a forward,
    # a lambda
    ("model = torch.compile(build(cfg))\n", True, ()),
    ("model = torch.compile(model, mode='max-autotune')\n", True, ()),
    ("class T:\n    def __init__(self):\n        self.m = torch.compile(self.model)\n", True, ()),
    ("@torch.compile\ndef train_step(model, x):\n    model(x).sum().backward()\n"
     "def main():\n    for x in data:\n        train_step(m, x)\n", True, ()),
    ("def step(x):\n    return x\nstep = torch.compile(step)\n", True, ()),
    ("class N:\n    @torch.compile\n    def forward(self, x):\n        return x\n", True, ()),
    ("from torch import compile\nm = compile(net)\n", True, ()),
    ("step = torch.compile(lambda x: model(x))\n", True, ()),
    ("def broken(:\n    torch.compile(f)\n", True, ()),  # unparsable: as before, the project is compiled
])
def test_what_a_file_hands_to_torch_compile(source, entry, helpers):
    uses = compile_uses("import torch\n" + source)
    assert (uses.compiles_entry, uses.helpers) == (entry, helpers)


def test_a_helper_and_a_model_compiled_in_one_project_make_it_compile(tmp_path):
    (tmp_path / "fused.py").write_text(textwrap.dedent(COMPILED_HELPER), encoding="utf-8")
    (tmp_path / "train.py").write_text("import torch\nmodel = torch.compile(net)\n", encoding="utf-8")
    choice = infer_target([tmp_path / "fused.py", tmp_path / "train.py"])
    assert choice.target == "compile" and "train.py" in choice.reason
