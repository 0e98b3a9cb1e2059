"""One file is checked in its project: `cslint check FILE` analyses FILE with the rest of its project (the
nearest directory above it with pyproject.toml, setup.cfg or .git) and reports only FILE; `--isolated`
analyses the files named alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cslint.cli import main
from cslint.discovery import find_project_root

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

from pkg.layers import soft_cap


class Net(nn.Module):
    def forward(self, x):
        y = soft_cap(x)
        if y.max() > 1:
            y = y - 1
        return y
"""


def _project(root: Path, marker: str = "pyproject.toml", init: bool = True) -> Path:
    if marker == ".git":
        (root / ".git").mkdir()
    else:
        (root / marker).write_text("[project]\nname = 'demo'\n" if marker == "pyproject.toml" else "[metadata]\n")
    (root / "pkg").mkdir()
    if init:
        (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "layers.py").write_text(LAYERS)
    (root / "pkg" / "model.py").write_text(MODEL)
    return root / "pkg" / "layers.py"


def _check(capsys, *args: str) -> tuple[int, list[tuple[str, int, str]]]:
    code = main(["check", *args, "--output-format", "json", "--no-cache"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return code, sorted((Path(f["filename"]).name, f["line"], f["code"]) for f in json.loads(out))


@pytest.mark.parametrize("marker", ["pyproject.toml", "setup.cfg", ".git"])
@pytest.mark.parametrize("init", [True, False])
def test_one_file_is_checked_in_its_project_and_alone_reported(tmp_path, capsys, marker, init):
    layers = _project(tmp_path, marker, init)
    assert _check(capsys, str(layers)) == (1, [("layers.py", 5, "WSC101")])


def test_isolated_checks_the_named_files_alone(tmp_path, capsys):
    layers = _project(tmp_path)
    assert _check(capsys, str(layers), "--isolated") == (0, [])
    assert _check(capsys, str(layers), "--project-context") == (1, [("layers.py", 5, "WSC101")])


def test_isolated_and_project_context_together_are_a_usage_error(tmp_path, capsys):
    layers = _project(tmp_path)
    with pytest.raises(SystemExit) as exit_:
        main(["check", str(layers), "--isolated", "--project-context"])
    assert exit_.value.code == 2
    assert "not allowed with" in capsys.readouterr().err


def test_the_nearest_marker_above_the_file_is_its_project(tmp_path, monkeypatch):
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    (tmp_path / "sub" / "setup.cfg").write_text("[metadata]\n")
    assert find_project_root(tmp_path / "sub" / "deep" / "x.py") == (tmp_path / "sub").resolve()
    assert find_project_root(tmp_path / "other.py") == tmp_path.resolve()
    (tmp_path / "sub" / "setup.cfg").unlink()
    (tmp_path / ".git").rmdir()
    assert find_project_root(tmp_path / "sub" / "deep" / "x.py") is None


def test_a_file_in_no_project_is_checked_with_the_files_named_only(tmp_path, capsys):
    layers = _project(tmp_path, "setup.cfg")
    (tmp_path / "setup.cfg").unlink()  # no marker: nothing around the file is walked
    assert _check(capsys, str(layers)) == (0, [])
    assert _check(capsys, str(layers), str(tmp_path / "pkg" / "model.py")) == \
        (1, [("layers.py", 5, "WSC101"), ("model.py", 10, "WSC101")])


def test_the_flake8_plugin_uses_the_same_project_root(tmp_path):
    pytest.importorskip("flake8")
    layers = _project(tmp_path, ".git", init=False)  # no pyproject.toml: found by .git, from another directory
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "WSC", str(layers)], cwd=tmp_path.parent,
                          capture_output=True, text=True)
    assert proc.returncode == 1, proc.stderr
    assert ":5:8: WSC101" in proc.stdout
