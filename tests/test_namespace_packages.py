"""Imports between directories without `__init__.py` resolve as Python resolves them from the project root
(and its `src/`): namespace packages (PEP 420), `src/` layouts, a vendored package whose parent has no
`__init__.py`. The helper is traced only through a `forward` in another file."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cslint.cli.main import main

LAYERS = """\
import torch


def soft_cap(x):
    if x.sum() > 0:
        return x * 2
    return x
"""

MODEL = """\
import torch
from torch import nn

from {package}.layers import soft_cap


class Net(nn.Module):
    def forward(self, x):
        return soft_cap(x)
"""


def _findings(capsys, *args: str) -> list[tuple[str, int, str]]:
    code = main(["check", *args, "--output-format", "json", "--no-cache"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return sorted((Path(f["filename"]).name, f["line"], f["code"]) for f in json.loads(out))


def _project(root: Path, package: str, init: bool = False) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    directory = root / package.replace(".", "/")
    if "src" in directory.relative_to(root).parts[:1]:
        directory = root / "src" / package.replace(".", "/")
    directory.mkdir(parents=True)
    if init:
        (directory / "__init__.py").write_text("")
    (directory / "layers.py").write_text(LAYERS)
    (directory / "model.py").write_text(MODEL.format(package=package))
    return directory


@pytest.mark.parametrize("package", ["pkg", "research.pkg"])
def test_a_namespace_package_helper_is_traced_from_another_file(tmp_path, capsys, package):
    _project(tmp_path, package)
    assert _findings(capsys, str(tmp_path)) == [("layers.py", 5, "WSC101")]


def test_a_regular_package_inside_a_namespace_directory_is_found_by_both_names(tmp_path, capsys):
    directory = _project(tmp_path, "research.pkg", init=True)  # research/ has no __init__.py
    assert _findings(capsys, str(tmp_path)) == [("layers.py", 5, "WSC101")]
    (directory / "model.py").write_text(MODEL.format(package="pkg"))  # as an installed `pkg` imports it
    assert _findings(capsys, str(tmp_path)) == [("layers.py", 5, "WSC101")]


@pytest.mark.parametrize("init", [False, True])
def test_a_src_layout_resolves_from_src(tmp_path, capsys, init):
    directory = tmp_path / "src" / "pkg"
    directory.mkdir(parents=True)
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    if init:
        (directory / "__init__.py").write_text("")
    (directory / "layers.py").write_text(LAYERS)
    (directory / "model.py").write_text(MODEL.format(package="pkg"))
    assert _findings(capsys, str(tmp_path)) == [("layers.py", 5, "WSC101")]


def test_a_vendored_torch_optim_without_torch_init_is_linted_as_torch(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if not torch.__version__.startswith("2.13."):
        pytest.skip("lines pinned for torch 2.13")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'vendored'\n")
    vendored = tmp_path / "torch" / "optim"
    vendored.mkdir(parents=True)
    for name in ("__init__.py", "optimizer.py", "sgd.py"):
        shutil.copy(Path(torch.__file__).parent / "optim" / name, vendored / name)
    found = _findings(capsys, str(vendored / "sgd.py"), "--select", "WSC3,WSC4", "--target", "wsc")  # in its project
    # the same findings as on the installed torch (tests/test_torch_optim.py)
    assert [(code, line) for name, line, code in found if name == "sgd.py"] == \
        [("WSC302", 150), ("WSC401", 377), ("WSC401", 472), ("WSC401", 476)]
