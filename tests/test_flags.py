"""Flags as ruff users expect them: `--diff`, `--statistics`, `--force-exclude`, `--show-files`,
`--show-settings`, flag combinations that make no sense, and configuration that names no rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cslint.cli.main import main

BAD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.max() > 0:
            y = x * 2
        else:
            y = x
        return y
"""

ASSERTS = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        assert x.sum() > 0
        return x * 2
"""

GOOD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return torch.where(x.max() > 0, x * 2, x)
"""


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    return tmp_path


# ---- --diff ------------------------------------------------------------------------------------------

def test_diff_goes_to_the_output_file(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "check", "--diff", "-o", "fixes.diff", "bad.py")
    assert code == 1 and out == ""
    diff = (project / "fixes.diff").read_text()
    assert diff.startswith("--- a/bad.py") and "+        y = torch.where(" in diff
    assert "1 fix would be applied." in err
    assert (project / "bad.py").read_text() == BAD


def test_diff_with_nothing_to_fix_exits_zero(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "check", "--diff", "good.py")
    assert code == 0 and out == ""
    assert "No fixes would be applied." in err


def test_diff_summary_counts_unsafe_fixes_left_out(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "asserts.py").write_text(ASSERTS)
    # the assert's fix (a device-side assertion, unsafe) exists under compile; lazy targets keep it unfixed
    code, out, err = _run(capsys, "check", "--diff", "--target", "compile", "asserts.py", "bad.py")
    assert code == 1 and "torch.where" in out and "-        assert" not in out
    assert "1 fix would be applied; 1 more with --unsafe-fixes." in err
    code, out, err = _run(capsys, "check", "--diff", "--unsafe-fixes", "--target", "compile", "asserts.py")
    assert code == 1 and "-        assert x.sum() > 0" in out and "+        torch._assert_async(x.sum() > 0" in out
    assert "1 fix would be applied." in err


def test_diff_with_only_unsafe_fixes_left_exits_zero(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "asserts.py").write_text(ASSERTS)
    code, out, err = _run(capsys, "check", "--diff", "--target", "compile", "asserts.py")
    assert code == 0 and out == ""
    assert "No fixes would be applied; 1 more with --unsafe-fixes." in err


# ---- --statistics --------------------------------------------------------------------------------------

def test_statistics_as_json(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "--statistics", "--output-format", "json", ".")
    assert code == 1
    assert json.loads(out) == [{"code": "WSC101", "name": "tensor-if", "count": 1, "fixable": True}]


# ---- combinations that make no sense -------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["--diff", "--output-format", "json"], "--diff prints a diff"),
    (["--diff", "--statistics"], "--diff cannot be combined with --statistics"),
    (["--statistics", "--output-format", "sarif"], "--statistics"),
    (["--statistics", "--show-chain"], "--show-chain"),
    (["--add-noqa", "--statistics"], "--add-noqa"),
    (["--add-noqa", "--output-format", "json"], "--add-noqa"),
    (["--add-noqa", "-o", "report.txt"], "--add-noqa"),
    (["--add-noqa", "--fix"], "--add-noqa"),
    (["--show-files", "--fix"], "--show-files"),
    (["--show-settings", "--show-files"], "--show-settings"),
])
def test_senseless_combinations_are_usage_errors(project: Path, capsys: pytest.CaptureFixture[str],
                                                 argv: list[str], message: str) -> None:
    code, out, err = _run(capsys, "check", *argv, "bad.py")
    assert code == 2 and message in err and out == ""
    assert (project / "bad.py").read_text() == BAD
    assert not (project / "report.txt").exists()


# ---- --force-exclude ----------------------------------------------------------------------------------

def test_force_exclude_skips_named_files_the_settings_exclude(project: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text("[tool.cslint]\nextend-exclude = ['generated', 'vendor_*.py']\n")
    (project / "generated").mkdir()
    (project / "generated" / "model.py").write_text(BAD)
    (project / "vendor_net.py").write_text(BAD)
    code, out, _ = _run(capsys, "check", "generated/model.py", "vendor_net.py")
    assert code == 1 and out.count("WSC101") == 2  # named explicitly: checked, as in ruff
    code, out, err = _run(capsys, "check", "--force-exclude", "generated/model.py", "vendor_net.py", "good.py")
    assert code == 0 and "WSC101" not in out and "(1 files)" in out


def test_shipped_hooks_pass_force_exclude() -> None:
    hooks = (Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml").read_text()
    entries = [line for line in hooks.splitlines() if line.strip().startswith("entry:")]
    assert len(entries) == 2 and all("--force-exclude" in entry for entry in entries)


# ---- --show-files and --show-settings -------------------------------------------------------------------

def test_show_files_lists_what_would_be_checked(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "build").mkdir()
    (project / "build" / "gen.py").write_text(BAD)
    code, out, _ = _run(capsys, "check", "--show-files", ".")
    assert code == 0
    assert out.splitlines() == [str(project / "bad.py"), str(project / "good.py")]


def test_show_settings_prints_the_resolved_settings(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text("[tool.cslint]\nignore = ['WSC2']\ntrace-roots = ['*.train_step']\n")
    code, out, _ = _run(capsys, "check", "--show-settings", "--extend-select", "WSC003", "bad.py")
    assert code == 0
    assert f"Settings path: {project / 'pyproject.toml'}" in out
    assert "ignore = ['WSC2']" in out and "extend_select = ['WSC003']" in out
    assert "trace_roots = ['*.train_step']" in out
    assert "WSC003" in out.split("enabled rules")[1]


# ---- configuration that names no rule ------------------------------------------------------------------

@pytest.mark.parametrize("table, key", [
    ("select = ['WSC999']", "select"),
    ("ignore = ['WSC1', 'E501']", "ignore"),
    ("extend-select = ['WSCX']", "extend-select"),
    ("[tool.cslint.per-file-ignores]\n'tests/*' = ['WSC10', 'WSC99']", "per-file-ignores"),
])
def test_unknown_codes_in_pyproject_are_configuration_errors(project: Path, capsys: pytest.CaptureFixture[str],
                                                              table: str, key: str) -> None:
    (project / "pyproject.toml").write_text(f"[tool.cslint]\n{table}\n")
    code, out, err = _run(capsys, "check", "bad.py")
    assert code == 2 and out == ""
    assert str(project / "pyproject.toml") in err and f"`{key}" in err
    assert "--select" not in err


def test_trace_roots_pattern_that_matches_nothing_is_a_warning(project: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    (project / "train.py").write_text("def train_step(model, batch):\n    return model(batch)\n")
    code, _, err = _run(capsys, "check", "--trace-roots", "train.train_step", "--trace-roots", "*.no_such_fn", ".")
    assert "warning: --trace-roots pattern `*.no_such_fn` matches no function" in err
    assert "train.train_step" not in err


# ---- paths with nothing to check ------------------------------------------------------------------------

def test_a_path_with_no_python_files_is_a_warning(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "data").mkdir()
    (project / "data" / "notes.txt").write_text("no python here\n")
    code, out, err = _run(capsys, "check", "data", "good.py")
    assert code == 0
    assert "warning: data: no Python files" in err


# ---- --add-noqa keeps a reason ------------------------------------------------------------------------

def test_add_noqa_keeps_a_free_form_reason(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "bad.py").write_text(BAD.replace("if x.max() > 0:", "if x.max() > 0:  # noqa: E501  keep short"))
    code, _, _ = _run(capsys, "check", "--add-noqa", "bad.py")
    assert code == 0
    assert "if x.max() > 0:  # noqa: E501, WSC101  keep short\n" in (project / "bad.py").read_text()
    code, out, _ = _run(capsys, "check", "bad.py")
    assert code == 0 and "All checks passed" in out


def test_diff_with_fix_still_writes_nothing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "check", "--diff", "--fix", "bad.py")
    assert code == 1 and "+        y = torch.where(" in out
    assert (project / "bad.py").read_text() == BAD
