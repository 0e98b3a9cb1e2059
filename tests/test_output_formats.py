"""Report formats: SARIF validates against the shipped 2.1.0 schema, GitHub annotations follow the
workflow-command syntax, grouped/json-lines carry every finding, and `-o` writes the report to a file."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from cslint.cli.main import main
from cslint.core.report import Diagnostic

SCHEMA = Path(__file__).parent / "fixtures" / "sarif" / "sarif-schema-2.1.0.json"

MODEL = """\
import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x, threshold):
        if x.mean() > threshold:
            x = x * 2
        else:
            x = x
        scale = 0.5 if x.max() > 1 else 1.0
        return x * scale
"""

# ::error title=...,file=...,line=N,col=N,endLine=N,endColumn=N::message  (properties escape % CR LF : ,)
GITHUB = re.compile(r"^::error (?P<props>(?:[a-zA-Z]+=[^,:\r\n]*)(?:,[a-zA-Z]+=[^,:\r\n]*)*)::(?P<msg>[^\r\n]*)$")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def report(capsys: pytest.CaptureFixture[str], fmt: str, *extra: str) -> str:
    assert main(["check", "--output-format", fmt, *extra, "model.py"]) == 1
    return capsys.readouterr().out


def test_sarif_validates_against_the_schema(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = json.loads(report(capsys, "sarif"))
    schema = json.loads(SCHEMA.read_text())
    jsonschema.Draft4Validator(schema, format_checker=jsonschema.FormatChecker()).validate(log)
    run = log["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["WSC101", "WSC103"]
    assert all(r["helpUri"].endswith(f"/rules/{r['id']}.md") and r["help"]["markdown"] for r in rules)
    first = run["results"][0]
    assert rules[first["ruleIndex"]]["id"] == first["ruleId"] == "WSC101"
    location = first["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "model.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"]["startLine"] == 7 and location["region"]["startColumn"] == 12
    assert first["properties"]["traceChain"] == ["model.Gate.forward"]


def test_schema_rejects_a_broken_log() -> None:
    schema = json.loads(SCHEMA.read_text())
    broken = {"version": "2.1.0", "runs": [{"tool": {"driver": {}}, "results": []}]}  # driver needs a name
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(schema).validate(broken)


def test_github_annotations_follow_workflow_command_syntax(project: Path, capsys) -> None:
    lines = report(capsys, "github").splitlines()
    assert len(lines) == 2
    for line in lines:
        match = GITHUB.match(line)
        assert match, line
        props = dict(p.split("=", 1) for p in match["props"].split(","))
        assert props["file"] == "model.py"
        assert props["title"] in {"cslint (WSC101)", "cslint (WSC103)"}
    assert "line=7,col=12," in lines[0] and lines[0].split("::", 2)[2].startswith("WSC101 ")


def test_github_escaping() -> None:
    from cslint.output.github import escape_data, escape_property

    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"


def test_grouped_and_json_lines(project: Path, capsys) -> None:
    grouped = report(capsys, "grouped", "-q").splitlines()
    assert grouped[0] == "model.py:"
    assert re.match(r"^  7:12\s+WSC101 \[\*\] ", grouped[1]) and re.match(r"^  11:\d+\s+WSC103 ", grouped[2])
    records = [json.loads(line) for line in report(capsys, "json-lines").splitlines()]
    assert [(r["code"], r["line"]) for r in records] == [("WSC101", 7), ("WSC103", 11)]


def test_output_file(project: Path, capsys) -> None:
    assert main(["check", "--output-format", "sarif", "-o", "report.sarif", "model.py"]) == 1
    assert capsys.readouterr().out == ""
    assert json.loads((project / "report.sarif").read_text())["runs"][0]["results"]


def test_a_long_source_line_is_shown_as_a_window_around_the_finding() -> None:
    from cslint.output.text import EXCERPT_WIDTH, _excerpt

    line = "        y = " + " + ".join(["x"] * 5000) + " if x.max() > 0 else x\n"  # 20 KB on one line
    column = line.index("x.max()") + 1
    d = Diagnostic(Path("m.py"), 7, column, 7, column + len("x.max() > 0"), "WSC101", "branch", source_line=line)
    _, shown, carets = _excerpt(d)
    assert len(shown) < EXCERPT_WIDTH + 20
    assert shown.startswith("7 | ...") and "x.max() > 0 else x" in shown
    assert shown[carets.index("^"):].startswith("x.max() > 0")  # the caret is under the finding
    assert carets.count("^") == len("x.max() > 0")
    short = Diagnostic(Path("m.py"), 7, 12, 7, 23, "WSC101", "branch", source_line="        if x.max() > 0:\n")
    assert _excerpt(short)[1:] == ["7 |         if x.max() > 0:", "  |            ^^^^^^^^^^^"]
