"""Finding messages (#40 item 5): one clause of what is wrong and what it does on the target, short enough to
read on one line; what explains it (the library code that does it, a guard that does not hold, an annotation
the callers contradict) is a note under it, in every format that has room for one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cslint.cli.main import main
from cslint.core.targets import TARGETS

REPO = Path(__file__).resolve().parent.parent
LONGEST = 120  # a message, code quotes included, fits a terminal line after its `path:line:col: CODE`

GUARDED_READ = '''
import torch


def _value(step):
    if not torch.jit.is_scripting() and torch.compiler.is_compiling():
        return step
    else:
        return step.item()


class Plain(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                count = _value(state["step"])
                p.mul_(1 - group["lr"] / count)
'''
GUARD_NOTE = "traced: `not torch.jit.is_scripting() and torch.compiler.is_compil...` is false under lazy tracing"


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> list[dict]:
    main(["check", "--no-cache", "--exit-zero", "--output-format", "json", *args])
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_every_message_on_the_shipped_code_fits_a_line(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    found = _json(capsys, "--target", target, str(REPO / "examples"), str(REPO / "tests" / "fixtures"))
    assert found, "the corpus has findings on every target"
    long = [(f["code"], len(f["message"]), f["message"]) for f in found if len(f["message"]) > LONGEST]
    assert not long


@pytest.mark.parametrize("target", ["compile", "xla"])
def test_a_loop_or_assert_gets_no_advice_meant_for_a_branch(target: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The old table of advice by code prefix gave every WSC1xx the `torch.cond` hint under compile."""
    found = _json(capsys, "--target", target, str(REPO / "examples"))
    loops_and_asserts = [f for f in found if f["code"] in ("WSC102", "WSC104", "WSC107")]
    assert loops_and_asserts
    assert not [f for f in loops_and_asserts if "torch.cond" in f["message"]]


def test_a_note_is_under_the_message_not_in_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "opt.py").write_text(GUARDED_READ.lstrip(), encoding="utf-8")
    found = _json(capsys, "--select", "WSC201", str(tmp_path / "opt.py"))
    assert [(f["line"], f["notes"]) for f in found] == [(8, [GUARD_NOTE])]
    assert "traced:" not in found[0]["message"]

    main(["check", "--no-cache", "--exit-zero", "--select", "WSC201", str(tmp_path / "opt.py")])
    full = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(full) if "WSC201" in line)
    assert f"  = note: {GUARD_NOTE}" in full[header + 1:header + 6]

    main(["check", "--no-cache", "--exit-zero", "--select", "WSC201", "--output-format", "concise",
          str(tmp_path / "opt.py")])
    assert "= note" not in capsys.readouterr().out


def test_a_cached_report_keeps_its_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "opt.py").write_text(GUARDED_READ.lstrip(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CSLINT_CACHE_DIR", str(tmp_path / "cache"))
    args = ["check", "--exit-zero", "--select", "WSC201", "--output-format", "json", "opt.py"]
    main(args)
    cold = json.loads(capsys.readouterr().out)
    main(args)
    warm = json.loads(capsys.readouterr().out)
    assert any((tmp_path / "cache").iterdir())
    assert warm == cold and warm[0]["notes"] == [GUARD_NOTE]
