"""The flake8 plugin, run through real flake8: same findings and columns as `cslint check`."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "flake8" / "project"
FLAKE8_LINE = re.compile(r"^\.?/?(?P<path>[^:]+):(?P<line>\d+):(?P<col>\d+): (?P<code>[A-Z]+\d+) ")

Finding = tuple[str, int, int, str]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root)
    return root


def flake8(root: Path, *args: str) -> set[Finding]:
    proc = subprocess.run([sys.executable, "-m", "flake8", *args, "."], cwd=root, capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    found = set()
    for line in proc.stdout.splitlines():
        match = FLAKE8_LINE.match(line)
        assert match, line
        found.add((match["path"], int(match["line"]), int(match["col"]), match["code"]))
    return found


def cslint(root: Path, *args: str) -> set[Finding]:
    proc = subprocess.run([sys.executable, "-m", "cslint", "check", "--output-format", "json", *args, "."],
                          cwd=root, capture_output=True, text=True)
    assert proc.returncode in (0, 1), proc.stderr
    return {(Path(d["filename"]).as_posix(), d["line"], d["column"], d["code"]) for d in json.loads(proc.stdout)}


def test_flake8_reports_what_cslint_check_reports(project: Path) -> None:
    via_flake8 = flake8(project, "--select", "WSC")
    assert via_flake8 == cslint(project)
    # the cross-file chain (Decoder.forward -> pkg.ops) resolves although flake8 hands over one file at a time
    assert ("pkg/ops.py", 6, 8, "WSC101") in via_flake8
    # [tool.cslint] ignore = ["WSC104"] is read; the `# noqa: WSC101` line and untraced evaluate() are quiet
    assert {code for *_, code in via_flake8} == {"WSC101", "WSC103"}
    assert not any(path == "pkg/loop.py" for path, *_ in via_flake8)


def test_columns_point_at_the_reported_expression(project: Path) -> None:
    found = flake8(project, "--select", "WSC")
    snippets = {("pkg/ops.py", 6): "logits.abs().max() > cap", ("pkg/ops.py", 12): "h.norm() > 1.0",
                ("pkg/model.py", 19): "ratio > 0.5"}
    for path, line, col, _ in found:
        text = (project / path).read_text().splitlines()[line - 1]
        assert text[col - 1:].startswith(snippets[(path, line)]), (path, line, col, text)


def test_flake8_select_and_ignore_are_honoured(project: Path) -> None:
    assert not any(code.startswith("WSC") for *_, code in flake8(project, "--select", "E9"))
    assert {code for *_, code in flake8(project, "--select", "WSC", "--ignore", "WSC101")} == {"WSC103"}
    assert {code for *_, code in flake8(project, "--select", "WSC1", "--extend-ignore", "WSC103")} == {"WSC101"}


def test_opt_in_rule_runs_when_flake8_extend_selects_it(project: Path) -> None:
    assert not any(code == "WSC003" for *_, code in flake8(project, "--select", "WSC"))
    found = flake8(project, "--select", "WSC", "--extend-select", "WSC003")
    assert ("pkg/loop.py", 17, 31, "WSC003") in found
    assert found == cslint(project, "--extend-select", "WSC003")


def test_cslint_options_as_flake8_options(project: Path) -> None:
    found = flake8(project, "--select", "WSC", "--cslint-trace-roots", "pkg.loop.custom_step")
    assert ("pkg/loop.py", 6, 11, "WSC102") in found
    assert found == cslint(project, "--trace-roots", "pkg.loop.custom_step")
    (project / "setup.cfg").write_text("[flake8]\ncslint-trace-roots = pkg.loop.custom_step\n")
    assert flake8(project, "--select", "WSC") == found


def test_single_file_still_sees_the_project(project: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "WSC", "pkg/ops.py"], cwd=project,
                          capture_output=True, text=True)
    assert "pkg/ops.py:6:8: WSC101" in proc.stdout


def test_stdin_buffer_is_linted_as_given(project: Path) -> None:
    code = (project / "pkg" / "model.py").read_text().replace("scale = 1.0 if ratio > 0.5 else 2.0",
                                                                  "\n\nscale = 1.0 if ratio > 0.5 else 2.0")
    code = code.replace("\n\nscale", "\n        \n        scale")
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "WSC", "--stdin-display-name",
                           "pkg/model.py", "-"], cwd=project, input=code, capture_output=True, text=True)
    assert "pkg/model.py:21:24: WSC103" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("config", ['[tool.cslint]\nselect = 5\n', '[tool.cslint]\nbaseline = "baseline.json"\n'])
def test_a_configuration_cslint_cannot_read_is_one_finding_per_file_not_a_traceback(project: Path,
                                                                                     config: str) -> None:
    """flake8 prints a plugin's exception as a traceback and a 'critical error'; the file was not checked,
    so it is not clean either: one WSC002 finding on it, saying why."""
    (project / "pyproject.toml").write_text(config)
    (project / "baseline.json").write_text("{not json")
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "WSC", "pkg/ops.py"], cwd=project,
                          capture_output=True, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    [line] = proc.stdout.splitlines()
    assert line.startswith("pkg/ops.py:1:1: WSC002 cslint: configuration error: "), line
