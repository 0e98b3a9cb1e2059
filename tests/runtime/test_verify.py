"""`cslint check --fix --verify`: a tensor-branch fix is kept when the runtime agrees; a wrong one is rolled back."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

pytest.importorskip("torch")

from cslint.cli import main as cslint_main  # noqa: E402
from cslint.runtime import RuntimeReport, check  # noqa: E402
from cslint.runtime.verify import outputs_differ  # noqa: E402

MODEL = textwrap.dedent('''
    import torch
    from torch import nn


    class Gate(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(6, 6)

        def forward(self, x):
            h = self.proj(x)
            if h.mean() > 0:
                y = h * 2
            else:
                y = h - 1
            return y


    def target(device):
        return Gate().to(device), [torch.randn(3, 6, device=device) * 3 for _ in range(2)]
''').lstrip()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.cslint]\nruntime-targets = ["model.py:target"]\n')
    (tmp_path / "model.py").write_text(MODEL)

    def check_here(target: str, backends: tuple[str, ...] = ("lazy",), **kwargs: object) -> RuntimeReport:
        return check(target, backends, outputs=True, isolate=False)  # the child process costs seconds per run
    monkeypatch.setattr("cslint.runtime.verify.check", check_here)
    return tmp_path


def test_verified_fix_is_kept(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = check(f"{project / 'model.py'}:target", ("lazy",), isolate=False)
    assert [f.code for f in before.findings] == ["WSC101"]
    cslint_main(["check", str(project / "model.py"), "--fix", "--verify"])
    assert "torch.where" in (project / "model.py").read_text()
    assert "runtime findings 1 -> 0, outputs allclose; fixes kept" in capsys.readouterr().err
    assert check(f"{project / 'model.py'}:target", ("lazy",), isolate=False).findings == []


def test_wrong_fix_is_rolled_back(project: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    import cslint.fixers.where as where

    def swapped(torch: str, test: cst.BaseExpression, a: cst.BaseExpression, b: cst.BaseExpression) -> cst.Call:
        return cst.Call(func=cst.Attribute(value=cst.Name(torch), attr=cst.Name("where")),
                        args=[cst.Arg(test), cst.Arg(b), cst.Arg(a)])  # deliberately wrong: branches swapped
    monkeypatch.setattr(where, "_where", swapped)
    cslint_main(["check", str(project / "model.py"), "--fix", "--verify"])
    assert (project / "model.py").read_text() == MODEL
    assert "fixes rolled back" in capsys.readouterr().err


def test_outputs_differ_uses_the_tolerance() -> None:
    assert outputs_differ([[1.0, 2.0]], [[1.0, 2.0 + 1e-9]], 1e-5) is None
    assert "largest difference" in (outputs_differ([[1.0, 2.0]], [[1.0, 2.5]], 1e-5) or "")
    assert "structure" in (outputs_differ([[1.0]], [[1.0, 2.0]], 1e-5) or "")
