"""The engine's entry point (engine/check.py): a request in, a result out, nothing printed; the fixes
written to disk, or returned for text that stands in for a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from cslint.core.config import load_settings
from cslint.engine.check import CheckRequest, as_reported, check, discover
from cslint.engine.selection import enabled_codes

BAD = """\
import torch
import torch_xla
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.max() > 0:
            y = x * 2
        else:
            y = x
        return y
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.cslint]\n")
    (tmp_path / "model.py").write_text(BAD)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def request(**choices: object) -> CheckRequest:
    settings = load_settings(None, Path("."))
    return CheckRequest(paths=(Path("model.py"),), settings=settings, codes=tuple(enabled_codes(settings)),
                        cache=False, jobs=1, **choices)  # type: ignore[arg-type]


def test_a_check_returns_its_findings_and_prints_nothing(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wanted = request()
    outcome = check(wanted, discover(wanted))
    assert [d.code for d in outcome.result.diagnostics] == ["WSC101"]
    assert outcome.files == [Path("model.py")] and outcome.settings.target == "xla"
    assert (project / "model.py").read_text() == BAD
    assert capsys.readouterr() == ("", "")


def test_a_fix_is_written_and_a_diff_is_not(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    diffed = check(request(fix=True, diff=True))
    assert diffed.result.changed_files and (project / "model.py").read_text() == BAD
    fixed = check(request(fix=True))
    assert fixed.result.fixed == 1 and fixed.result.diagnostics == []
    assert (project / "model.py").read_text() == fixed.result.changed_files[0].text != BAD
    assert capsys.readouterr() == ("", "")


def test_a_buffer_is_fixed_in_the_outcome_not_on_disk(project: Path) -> None:
    text = BAD.replace("y = x\n", "y = x + 1\n")
    outcome = check(request(fix=True, buffers={Path("model.py"): text}))
    assert outcome.buffers[Path("model.py")] != text and "torch.where" in outcome.buffers[Path("model.py")]
    assert (project / "model.py").read_text() == BAD


def test_a_front_ends_analysis_is_handed_the_engines_lint(project: Path) -> None:
    seen = []

    def analyse(lint, files, settings):  # type: ignore[no-untyped-def]
        seen.append((files, settings.target))
        return lint(files, lambda d: False)  # a fix run that chooses no fix

    outcome = check(request(fix=True), analyse=analyse)
    assert seen == [([Path("model.py")], "xla")]
    assert outcome.result.fixed == 0 and [d.code for d in outcome.result.diagnostics] == ["WSC101"]
    assert (project / "model.py").read_text() == BAD


def test_add_noqa_edits_the_file_and_counts(project: Path) -> None:
    outcome = check(request(add_noqa=True))
    assert outcome.noqa == (1, 1)
    assert "# noqa: WSC101" in (project / "model.py").read_text()
    as_reported(outcome)  # no notebook, no graph-break registry needed: the findings stay as they are
    assert outcome.result.diagnostics[0].line == 8
