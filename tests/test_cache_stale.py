"""Stale answers: a cached report always describes the very text analysed, and a damaged cache entry is
discarded, never an internal error. The damage is sealed as cslint seals what it writes (sealed.py), so
that what discards it is the check of each entry, not the seal (which discards any edit)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cslint.engine import incremental

from cslint.store import sealed
from cslint.cli.main import main

BRANCHING = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x
"""
STATIC = BRANCHING.replace("        if x.sum() > 0:\n            return x * 2\n", "")


def _check(capsys, root: Path, *args: str) -> tuple[int, list[tuple[str, int, str]]]:
    code = main(["check", str(root), "--output-format", "json", *args])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return code, sorted((Path(f["filename"]).name, f["line"], f["code"]) for f in json.loads(out))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "model.py").write_text(BRANCHING)
    return tmp_path


def test_a_file_rewritten_during_a_run_leaves_no_report_of_other_content(project, capsys, monkeypatch):
    model = project / "model.py"
    analyse = incremental.Session._analyse

    def rewritten_meanwhile(self, *args, **kwargs):  # the editor saves between the survey and the analysis
        model.write_text(STATIC)
        return analyse(self, *args, **kwargs)

    monkeypatch.setattr(incremental.Session, "_analyse", rewritten_meanwhile)
    _check(capsys, project, "--cache-dir", str(project / ".cache"))
    monkeypatch.undo()
    model.write_text(BRANCHING)  # undone: the text the survey hashed is back
    expected = _check(capsys, project, "--no-cache")
    assert expected == (1, [("model.py", 7, "WSC101")])
    assert _check(capsys, project, "--cache-dir", str(project / ".cache")) == expected


DAMAGE = {
    "mtime_ns": "yesterday", "size": None, "hash": 5, "module": ["model"], "imports": "torch", "reach": 3,
    "deps": {}, "hints": "roots", "diagnostics": 7,
}
DIAGNOSTIC_DAMAGE = {
    "line": "7", "column": None, "code": 101, "message": ["m"], "fix": ["safe"], "chain": "a.b", "reason": 1,
    "source_line": 0, "end_line": 1.5,
}


def _damaged_cache(capsys, project: Path, change) -> Path:
    _check(capsys, project, "--cache-dir", str(project / ".cache"))
    (path,) = (project / ".cache").glob("*.json")
    data = json.loads(path.read_text())
    (entry,) = data["files"].values()
    change(entry)
    _write_sealed(path, data)
    return path


def _write_sealed(path: Path, data: dict) -> None:
    data.pop("mac")
    path.write_bytes(sealed.seal(path.name, json.dumps(data)) or b"")


@pytest.mark.parametrize(("field", "value"), sorted(DAMAGE.items()))
def test_an_entry_field_of_the_wrong_type_is_discarded(project, capsys, field, value):
    _damaged_cache(capsys, project, lambda entry: entry.__setitem__(field, value))
    assert _check(capsys, project, "--cache-dir", str(project / ".cache")) == (1, [("model.py", 7, "WSC101")])


@pytest.mark.parametrize(("field", "value"), sorted(DIAGNOSTIC_DAMAGE.items()))
def test_a_cached_finding_field_of_the_wrong_type_is_discarded(project, capsys, field, value):
    _damaged_cache(capsys, project, lambda entry: entry["diagnostics"][0].__setitem__(field, value))
    assert _check(capsys, project, "--cache-dir", str(project / ".cache")) == (1, [("model.py", 7, "WSC101")])


@pytest.mark.parametrize("damage", [
    lambda data: data.__setitem__("files", []), lambda data: data["files"].__setitem__("x.py", "entry"),
    lambda data: data["files"].__setitem__("x.py", {"hash": "h"}), lambda data: data.__setitem__("format", "1"),
])
def test_a_cache_file_of_the_wrong_shape_is_discarded(project, capsys, damage):
    _check(capsys, project, "--cache-dir", str(project / ".cache"))
    (path,) = (project / ".cache").glob("*.json")
    data = json.loads(path.read_text())
    damage(data)
    _write_sealed(path, data)
    assert _check(capsys, project, "--cache-dir", str(project / ".cache")) == (1, [("model.py", 7, "WSC101")])
