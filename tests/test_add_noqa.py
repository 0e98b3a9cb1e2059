"""`--add-noqa` suppresses current findings in place; WSC003 reports (and removes) unused WSC codes."""

from __future__ import annotations

from pathlib import Path

import pytest

from cslint.cli.main import main
from cslint.engine.noqa_edit import add_noqa_to_text, with_noqa

MODEL = """\
import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x, threshold):
        if x.mean() > threshold:  # hot path
            x = x * 2
        scale = 0.5 if x.max() > 1 else 1.0  # noqa: E501
        doc = \"\"\"text\"\"\" if x.min() < 0 else \"\"\"
more\"\"\"
        return x * scale
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_add_noqa_suppresses_every_finding_it_can(project: Path, capsys) -> None:
    assert main(["check", "-q", "model.py"]) == 1
    capsys.readouterr()
    assert main(["check", "--add-noqa", "model.py"]) == 0
    assert "Added 2 noqa directives to 1 file." in capsys.readouterr().err
    text = (project / "model.py").read_text()
    assert "        if x.mean() > threshold:  # hot path  # noqa: WSC101\n" in text
    assert "scale = 0.5 if x.max() > 1 else 1.0  # noqa: E501, WSC103\n" in text
    # the ternary that opens a multi-line string cannot take a comment on its line: left reported
    assert main(["check", "--output-format", "concise", "-q", "model.py"]) == 1
    assert [line.split(": ")[1].split()[0] for line in capsys.readouterr().out.splitlines()] == ["WSC103"]
    # every directive it wrote is used
    assert main(["check", "-q", "--extend-select", "WSC003", "--output-format", "concise", "model.py"]) == 1
    assert "WSC003" not in capsys.readouterr().out


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_add_noqa_keeps_cr_and_crlf_line_endings(project: Path, capsys, newline: str) -> None:
    """A CR-only file (old Mac line endings) gets its directives as LF and CRLF files do, ending each line
    as it did."""
    (project / "model.py").write_bytes(MODEL.replace("\n", newline).encode())
    assert main(["check", "--add-noqa", "model.py"]) == 0
    assert "Added 2 noqa directives to 1 file." in capsys.readouterr().err
    data = (project / "model.py").read_bytes()
    assert data.count(newline.encode()) == MODEL.count("\n")
    text = data.decode().replace(newline, "\n")
    assert "        if x.mean() > threshold:  # hot path  # noqa: WSC101\n" in text
    assert "scale = 0.5 if x.max() > 1 else 1.0  # noqa: E501, WSC103\n" in text
    if newline == "\r":
        assert b"\n" not in data


def test_add_noqa_refuses_fix(project: Path, capsys) -> None:
    assert main(["check", "--add-noqa", "--fix", "model.py"]) == 2


def test_with_noqa_merges_and_keeps_line_endings() -> None:
    assert with_noqa("x = f(y)\r\n", ["WSC201"]) == "x = f(y)  # noqa: WSC201\r\n"
    assert with_noqa("x = f(y)  # noqa: E501\n", ["WSC201", "WSC101"], 10) == "x = f(y)  # noqa: E501, WSC101, WSC201\n"
    assert with_noqa("x = f(y)  # noqa\n", ["WSC201"], 10) == "x = f(y)  # noqa\n"
    text, added = add_noqa_to_text('s = "# noqa: E1"\nt = (a +\n     b)\n', {1: {"WSC2"}, 2: {"WSC1"}})
    assert text == 's = "# noqa: E1"  # noqa: WSC2\nt = (a +  # noqa: WSC1\n     b)\n' and added == 2


UNUSED = """\
import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        if x.mean() > 0:  # noqa: WSC101, WSC201
            x = x * 2
        y = torch.where(x > 0, x, 0)  # keep  # noqa: WSC103
        return y  # noqa: E501
"""


def test_unused_noqa_reported_and_removed(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.py").write_text(UNUSED)
    assert main(["check", "-q", "--output-format", "concise", "model.py"]) == 0  # opt-in: quiet by default
    capsys.readouterr()
    assert main(["check", "-q", "--extend-select", "WSC003", "--output-format", "concise", "model.py"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "model.py:7:27: WSC003 [*] unused `# noqa` directive (unused: WSC201)",
        "model.py:9:39: WSC003 [*] unused `# noqa` directive (unused: WSC103)",
    ]
    assert main(["check", "-q", "--extend-select", "WSC003", "--fix", "model.py"]) == 0
    text = (tmp_path / "model.py").read_text()
    assert "        if x.mean() > 0:  # noqa: WSC101\n" in text
    assert "        y = torch.where(x > 0, x, 0)  # keep\n" in text
    assert "return y  # noqa: E501\n" in text


def test_unused_noqa_names_disabled_and_unknown_codes(lint) -> None:
    code = UNUSED.replace("# noqa: E501", "# noqa: WSC1000")
    found = [(d.line, d.message) for d in lint(code, select=("WSC003", "WSC2")) if d.code == "WSC003"]
    assert found == [
        (7, "unused `# noqa` directive (unused: WSC201; not enabled: WSC101)"),
        (9, "unused `# noqa` directive (not enabled: WSC103)"),
        (10, "unused `# noqa` directive (unknown: WSC1000)"),
    ]


def test_per_file_ignores_silence_unused_noqa(lint) -> None:
    assert not [d for d in lint(UNUSED, extend_select=("WSC003",), per_file_ignores={"model.py": ("WSC003",)})
                if d.code == "WSC003"]
