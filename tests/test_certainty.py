"""Each finding says what it rests on (#36): `certainty` is `evidence`, or `assumed` for the
`include-uncertain` tier, whose findings carry the assumption (a library entry point: that a user's step
calls it) in JSON, SARIF and the text report, and keep it through the report cache."""

from __future__ import annotations

import json
from pathlib import Path

from cslint.cli.main import main
from tests.test_library_entry_points import ODEINT, lines_of

HELPERS = '''
import torch


def scale(x):
    if x.sum() > 0:
        return x * 2
    return x
'''

MODEL = '''
import torch
from torch import nn
from lib.helpers import scale


class Net(nn.Module):
    def forward(self, x):
        return scale(torch.relu(x))
'''


def _project(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "lib"\n', encoding="utf-8")
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text.lstrip("\n"), encoding="utf-8")
    return root


def _run(capsys, root: Path, *flags: str) -> str:
    code = main(["check", str(root), "-j", "1", "--target", "wsc", *flags])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return out


ODEINT_FILES = {"lib/__init__.py": "from .odeint import odeint\n", "lib/odeint.py": ODEINT}


def test_a_finding_of_a_library_entry_point_is_assumed_and_says_why(tmp_path, capsys):
    root = _project(tmp_path, ODEINT_FILES)
    found = json.loads(_run(capsys, root, "--no-cache", "--include-uncertain", "--output-format", "json"))
    item = next(f for f in found if f["code"] == "WSC201" and f["line"] == lines_of(ODEINT, "ratio.item()"))
    assert item["certainty"] == "assumed"
    assert item["assumption"] == "library entry point: public function odeint, which a user's step may call"
    assert {f["certainty"] for f in found} == {"assumed"}

    text = _run(capsys, root, "--no-cache", "--include-uncertain")
    assert "  = assumed: library entry point: public function odeint, which a user's step may call" in text

    sarif = json.loads(_run(capsys, root, "--no-cache", "--include-uncertain", "--output-format", "sarif"))
    properties = [r["properties"] for r in sarif["runs"][0]["results"]]
    assert properties and all(p["certainty"] == "assumed" and p["assumption"].startswith("library entry point")
                              for p in properties)


def test_a_finding_a_forward_reaches_rests_on_evidence(tmp_path, capsys):
    root = _project(tmp_path, {"lib/__init__.py": "", "lib/helpers.py": HELPERS, "lib/model.py": MODEL})
    found = json.loads(_run(capsys, root, "--no-cache", "--include-uncertain", "--output-format", "json"))
    assert [(Path(f["filename"]).name, f["certainty"], f["assumption"]) for f in found] == \
        [("helpers.py", "evidence", None)]
    assert "= assumed:" not in _run(capsys, root, "--no-cache", "--include-uncertain")


def test_the_report_cache_keeps_the_assumption(tmp_path, capsys):
    root = _project(tmp_path / "project", ODEINT_FILES)
    cache = tmp_path / "cache"
    flags = ("--cache-dir", str(cache), "--include-uncertain", "--output-format", "json")
    first = json.loads(_run(capsys, root, *flags))
    kept = "".join(path.read_text(encoding="utf-8") for path in cache.rglob("*.json"))
    assert "library entry point: public function odeint" in kept  # what the second run reads back
    again = json.loads(_run(capsys, root, *flags))
    assert again == first and first and all(f["certainty"] == "assumed" for f in again)


def test_the_editor_shows_an_assumed_finding_as_information_with_its_assumption():
    from lsprotocol import types
    from pygls.workspace import PositionCodec

    from cslint.core.report import Diagnostic
    from cslint.lsp.convert import to_lsp

    assumed = Diagnostic(Path("odeint.py"), 3, 5, 3, 9, "WSC201", "`r.item()` reads tensor values into Python",
                         assumption="library entry point: public function odeint, which a user's step may call")
    plain = Diagnostic(Path("odeint.py"), 3, 5, 3, 9, "WSC201", "`r.item()` reads tensor values into Python")
    lines = ["import torch\n", "\n", "    r.item()\n"]
    shown = to_lsp(assumed, lines, PositionCodec(types.PositionEncodingKind.Utf16), [])
    assert shown.severity == types.DiagnosticSeverity.Information
    assert shown.message.endswith("\nassumed: library entry point: public function odeint, which a user's step may call")
    assert shown.data["certainty"] == "assumed"
    shown = to_lsp(plain, lines, PositionCodec(types.PositionEncodingKind.Utf16), [])
    assert shown.severity == types.DiagnosticSeverity.Warning and "assumed" not in shown.message
    assert shown.data["certainty"] == "evidence"
