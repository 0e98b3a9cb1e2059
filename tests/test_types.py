"""`mypy --strict` passes on every layer below the front ends (the files `[tool.mypy]` in pyproject.toml
names), and the check can fail."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("mypy", reason="mypy is in the test extra: pip install -e '.[test]'")


def _mypy(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", str(cache), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def test_the_layers_below_the_front_ends_type_check_strictly(tmp_path: Path) -> None:
    run = _mypy(cache=tmp_path / "cache")
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_type_error_is_reported(tmp_path: Path) -> None:
    wrong = tmp_path / "wrong.py"
    wrong.write_text("from cslint.core.report import Diagnostic\n\ndef line(d: Diagnostic) -> str:\n    return d.line\n")
    run = _mypy("--strict", str(wrong), cache=tmp_path / "cache")
    assert run.returncode == 1 and "Incompatible return value type" in run.stdout, run.stdout + run.stderr
