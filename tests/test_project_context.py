"""One file is checked in its project: `cslint check FILE` analyses FILE with the rest of its project (the
nearest directory above it with pyproject.toml, setup.cfg or .git) and reports only FILE; `--isolated`
analyses the files named alone."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cslint.cli.main import main
from cslint.engine.discovery import find_project_root
from tests.samples import CROSS_FILE_LAYERS as LAYERS, CROSS_FILE_MODEL as MODEL


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


CALLER = """\
from torch import nn

from pkg.shared import clip


class Other(nn.Module):
    def forward(self, x):
        return clip(x, x.mean())
"""

SHARED = """\
def clip(x, limit):
    if limit > 0:
        return x.clamp(max=limit)
    return x
"""

USER = """\
from pkg.shared import clip


def scale(x):
    return clip(x, 1.0)
"""

UNRELATED = """\
import torch
from torch import nn


class Lone(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x
"""


def _linked_project(root: Path) -> None:
    _project(root)
    for name, text in (("caller", CALLER), ("shared", SHARED), ("user", USER)):
        (root / "pkg" / f"{name}.py").write_text(text)
    (root / "unrelated").mkdir()
    for i in range(5):
        (root / "unrelated" / f"lone_{i}.py").write_text(UNRELATED)


def test_each_file_alone_gets_the_report_of_the_whole_project(tmp_path, capsys):
    """A file checked alone is analysed with the files linked to it through imports, in either direction,
    directly or not: its importers' roots, and the other callers of what it calls (user.py's `clip` is
    traced only through caller.py, which user.py does not import)."""
    _linked_project(tmp_path)
    _, whole = _check(capsys, str(tmp_path))
    assert ("shared.py", 2, "WSC101") in whole and ("lone_0.py", 7, "WSC101") in whole
    for path in sorted(tmp_path.rglob("*.py")):
        assert _check(capsys, str(path))[1] == [f for f in whole if f[0] == path.name], path


def test_context_files_not_linked_to_the_named_file_are_not_analysed(tmp_path, capsys):
    _linked_project(tmp_path)
    main(["check", str(tmp_path / "pkg" / "user.py"), "--no-cache", "--profile"])
    err = capsys.readouterr().err
    assert "files analysed: 3," in err, err  # user.py, shared.py and caller.py; not layers, model or lone_*


def test_a_file_over_the_size_limit_is_not_read_to_find_the_projects_target_or_imports(tmp_path, capsys,
                                                                                      monkeypatch):
    from cslint.engine.target_inference import infer_target

    big = tmp_path / "big.py"
    big.write_text("import torch_xla\n" + "x = 1\n" * 400)
    assert infer_target([big], max_size=1000).target == "wsc"
    assert infer_target([big], max_size=10_000).target == "xla"
    _project(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.cslint]\nmax-file-size = 1000\n")
    (tmp_path / "pkg" / "big.py").write_text("from pkg.layers import soft_cap\n" + "x = 1\n" * 400)
    monkeypatch.chdir(tmp_path)  # its configuration, and its cache
    for _ in range(2):  # the second run from the cache
        code = main(["check", "pkg", "--output-format", "json"])
        found = sorted((Path(f["filename"]).name, f["code"]) for f in json.loads(capsys.readouterr().out))
        assert code == 1 and found == [("big.py", "WSC004"), ("layers.py", "WSC101"), ("model.py", "WSC101")]
