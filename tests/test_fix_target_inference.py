"""The target inferred from a project's imports, and fixes that never import a package the project does
not import (a torch.compile project gets compile wording and fixes, never `import cerebras.pytorch`)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cslint.cli.main import main
from cslint.core.config import Settings
from cslint.engine.target_inference import imported_modules, infer_target, with_inferred_target

COMPILED_MODEL = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        y = self.proj(x)
        loss = y.pow(2).mean()
        print(f"loss {loss}")
        if loss > 1:
            y = y * 0.5
        return y


model = torch.compile(Net(), fullgraph=True)
"""


def _write(root: Path, files: dict[str, str]) -> list[Path]:
    paths = []
    for name, text in files.items():
        path = root / name
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        paths.append(path)
    return paths


@pytest.mark.parametrize(("source", "target", "named"), [
    ("import cerebras.pytorch as cstorch\nimport torch\n", "wsc", "cerebras.pytorch"),
    ("from cerebras.pytorch.optim import Optimizer\n", "wsc", "cerebras.pytorch"),
    ("import torch_xla.core.xla_model as xm\n", "xla", "torch_xla"),
    ("from sambaflow import samba\n", "rdu", "sambaflow"),
    ("import samba.utils\n", "rdu", "sambaflow"),
    ("import torch\n\nstep = torch.compile(train_step, fullgraph=True)\n", "compile", "torch.compile"),
    ("from torch import compile, nn\n\nmodel = compile(nn.Linear(2, 2))\n", "compile", "torch.compile"),
])
def test_target_follows_the_platform_import(tmp_path, source, target, named):
    choice = infer_target(_write(tmp_path, {"train.py": source, "model.py": "import torch\n"}))
    assert choice.target == target
    assert choice.reason.startswith("inferred") and named in choice.reason and "train.py" in choice.reason


def test_an_accelerator_import_wins_over_torch_compile(tmp_path):
    paths = _write(tmp_path, {"a.py": "import torch\nf = torch.compile(g)\n", "b.py": "import torch_xla\n"})
    assert infer_target(paths).target == "xla"


def test_torch_compile_named_in_prose_is_not_a_use(tmp_path):
    # torch/optim/optimizer.py: "... whether for CUDA graphs or for torch.compile support." in a docstring
    text = 'import torch\n\ndef f():\n    """Graph capture for torch.compile support."""\n' \
           "    return torch.compiler.is_compiling()\n"
    assert infer_target(_write(tmp_path, {"optimizer.py": text})).target == "wsc"
    decorated = "import torch\n\n@torch.compile\ndef step(x):\n    return x\n"
    assert infer_target(_write(tmp_path, {"optimizer.py": decorated})).target == "compile"


@pytest.mark.parametrize(("line", "uses"), [
    ("step = torch.compile(train_step)", True),
    ("step = torch.compile (train_step)", True),
    ("    @torch.compile", True),
    ("@torch.compile(fullgraph=True)", True),
    ("from torch import nn, compile", False),  # imported, never called
    ("from torch import nn, compile; model = compile(net)", True),
    ("y = 1  # torch.compile(m) here would recompile", False),
    ("# from torch import compile", False),
    ("step = mytorch.compile(train_step)", False),
    ("fn = torch.compile", False),
    ("fn = torch.compiled(m)", False),
    ("x = @torch.compile", False),
    ("xfrom torch import compile; step = torch.compile(m)", True),  # the second use, after the first is refused
])
def test_what_counts_as_a_use_of_torch_compile_on_a_line(tmp_path, line, uses):
    choice = infer_target(_write(tmp_path, {"train.py": f"import torch\n{line}\n"}))
    assert (choice.target == "compile") is uses


def test_a_file_both_checked_and_in_its_project_context_is_read_once(tmp_path, monkeypatch):
    from cslint.engine import target_inference

    read = []
    real = target_inference.file_imports
    monkeypatch.setattr(target_inference, "file_imports", lambda path, size: read.append(path) or real(path, size))
    paths = _write(tmp_path, {"a.py": "import torch\n", "b.py": "import torch_xla\n"})
    choice = infer_target([*paths, tmp_path / "." / "a.py", *paths])
    assert choice.target == "xla" and sorted(p.name for p in read) == ["a.py", "b.py"]


def test_no_platform_import_keeps_the_default_and_says_so(tmp_path):
    choice = infer_target(_write(tmp_path, {"model.py": "import torch\n# torch.compile is not called here\n"}))
    assert choice.target == "wsc" and choice.reason.startswith("default")
    assert choice.packages == ("torch",)


def test_imported_modules_reads_every_import_form():
    text = "import os, torch.nn as tnn\nfrom . import sibling\nfrom torch_xla.core import xla_model  # x\n" \
           "    import numpy as np\n"
    assert imported_modules(text) == {"os", "torch.nn", "torch_xla.core", "numpy"}


def test_imported_modules_reads_each_line_once_and_only_at_its_start():
    text = "from importlib import import_module\nx = 'import os'\nif 1: import math\n" \
           "  from torch import nn  # import numpy\nimport reimport, importlib.util\nimport  sys"
    assert imported_modules(text) == {"importlib", "torch", "reimport", "importlib.util", "sys"}


def test_a_given_target_is_kept_and_the_packages_recorded(tmp_path):
    paths = _write(tmp_path, {"a.py": "import torch_xla\n"})
    given = with_inferred_target(Settings(target="rdu", target_reason="set by --target"), paths)
    assert (given.target, given.target_reason, given.project_packages) == ("rdu", "set by --target", ("torch_xla",))
    inferred = with_inferred_target(Settings(), paths)
    assert inferred.target == "xla" and inferred.target_reason.startswith("inferred")


def test_compile_project_without_target_gets_compile_wording_and_no_cerebras_import(tmp_path, capsys):
    (path,) = _write(tmp_path, {"model.py": COMPILED_MODEL})
    assert main(["check", "--no-cache", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == ("target: compile (inferred: the project hands its model or step to torch.compile "
                                    "(model.py) and imports no accelerator package)")
    assert "a graph break (an error under `fullgraph=True`)" in out or "is compiled with `fullgraph=True`" in out
    assert "step closure" not in out and "inside the compiled step" in out  # compile wording for WSC701
    main(["check", "--no-cache", "--fix", "--unsafe-fixes", str(tmp_path)])
    fixed = path.read_text(encoding="utf-8")
    assert "torch.where(loss > 1, y * 0.5, y)" in fixed  # the compile target's fixes are applied
    assert "cerebras" not in fixed


def test_explicit_wsc_on_a_project_without_cerebras_adds_no_cerebras_import(tmp_path, capsys):
    (path,) = _write(tmp_path, {"model.py": COMPILED_MODEL})
    main(["check", "--no-cache", "--target", "wsc", "--fix", "--unsafe-fixes", str(tmp_path)])
    assert capsys.readouterr().out.splitlines()[-1] == "target: wsc (set by --target)"
    assert "cerebras" not in path.read_text(encoding="utf-8")


def test_cerebras_project_gets_the_step_closure(tmp_path, capsys):
    paths = _write(tmp_path, {"model.py": COMPILED_MODEL.replace("model = torch.compile(Net(), fullgraph=True)\n", ""),
                              "train.py": "import cerebras.pytorch as cstorch\n"})
    main(["check", "--no-cache", "--fix", "--unsafe-fixes", str(tmp_path)])
    assert "target: wsc (inferred: the project imports cerebras.pytorch (train.py))" in capsys.readouterr().out
    assert "cerebras.pytorch.step_closure(lambda loss: print(" in paths[0].read_text(encoding="utf-8")


def test_a_target_in_the_configuration_is_not_inferred(tmp_path, capsys):
    _write(tmp_path, {"model.py": COMPILED_MODEL, "pyproject.toml": "[tool.cslint]\ntarget = \"xla\"\n"})
    main(["check", "--no-cache", str(tmp_path)])
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == "target: xla (set in pyproject.toml)"
    assert "on XLA it runs the graph so far, on every step" in out
