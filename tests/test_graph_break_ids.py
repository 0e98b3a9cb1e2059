"""Graph-break ids: under --target compile a finding dynamo reports as a graph break carries the registry id,
the runtime's hint and the id's page, read from the installed torch's registry or the copy cslint ships."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from cslint.engine import graph_break_registry
from cslint.cli.main import main
from cslint.core.graph_break_ids import CONSTRUCT_IDS, GRAPH_BREAK_IDS, graph_break_id

SCHEMA = Path(__file__).parent / "fixtures" / "sarif" / "sarif-schema-2.1.0.json"
MODEL = """\
import torch
from torch import nn


class Gate(nn.Module):
    def forward(self, x):
        if x.mean() > 0:
            x = x * 2
        assert x.sum() > 0
        return x.tolist()
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (tmp_path / "model.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    main(["check", "--no-cache", "--exit-zero", *args, "model.py"])
    return capsys.readouterr().out


def test_text_shows_the_id_the_runtime_prints(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = _run(capsys, "--target", "compile")
    assert "model.py:7:12: WSC101 [GB0170]" in out
    assert "WSC201 [GB0109]" in out  # .tolist(): dynamo's own id for it, not .item()'s
    assert "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html" in out
    assert "WSC104 [" not in out  # dynamo traces `assert` on a tensor: no break, no id


def test_json_and_sarif_carry_the_id_and_its_page(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = json.loads(_run(capsys, "--target", "compile", "--output-format", "json"))
    found = {d["code"]: d.get("graph_break") for d in report}
    assert found["WSC101"]["id"] == "GB0170" and found["WSC101"]["url"].endswith("/gb/gb0170.html")
    assert found["WSC101"]["type"] == "Data-dependent branching"
    assert found["WSC104"] is None
    assert found["WSC201"]["id"] == "GB0109"
    sarif = json.loads(_run(capsys, "--target", "compile", "--output-format", "sarif"))
    jsonschema.validate(sarif, json.loads(SCHEMA.read_text()))
    breaks = {r["ruleId"]: r.get("properties", {}).get("graphBreak") for r in sarif["runs"][0]["results"]}
    assert breaks["WSC101"]["id"] == "GB0170" and breaks["WSC101"]["helpUri"].endswith("gb0170.html")


@pytest.mark.parametrize("target", ["wsc", "xla", "rdu"])
def test_other_targets_carry_no_id(project: Path, capsys: pytest.CaptureFixture[str], target: str) -> None:
    assert "[GB" not in _run(capsys, "--target", target)
    assert all("graph_break" not in d for d in json.loads(_run(capsys, "--target", target, "--output-format", "json")))


def test_without_torch_the_shipped_copy_is_read() -> None:
    registry = graph_break_registry.load("none")  # `python = "none"`: no libraries, so no torch
    assert registry.source == graph_break_registry.SHIPPED
    assert registry.torch_version == "2.13"
    mapped = set(GRAPH_BREAK_IDS.values()) | {v for v in CONSTRUCT_IDS.values() if v}
    assert mapped == set(registry.entries)  # trimmed: exactly the ids cslint maps
    assert registry.entries["GB0124"].hint.startswith("Set `torch._dynamo.config.capture_scalar_outputs")


def test_the_installed_registry_is_read_without_importing_torch() -> None:
    pytest.importorskip("torch")
    import subprocess
    import sys

    code = ("import sys; from cslint.engine import graph_break_registry as g; r = g.load(None); "
            "print(r.source, len(r.entries), 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[0].endswith(os.path.join("torch", "_dynamo", "graph_break_registry.json"))
    assert int(out[1]) > 500 and out[2] == "False"


def test_the_shipped_copy_matches_the_installed_registry() -> None:
    pytest.importorskip("torch")
    installed = graph_break_registry.load(None)
    shipped = graph_break_registry._read(graph_break_registry.SHIPPED, "")
    assert installed.source != shipped.source
    for gb_id, entry in shipped.entries.items():
        assert installed.entries[gb_id] == entry


def test_a_registry_that_is_not_json_falls_back_to_the_shipped_copy(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "graph_break_registry.json"
    broken.write_text("{not json")
    monkeypatch.setattr(graph_break_registry, "installed_registry_path", lambda python=None: (str(broken), "9.9"))
    assert graph_break_registry.load(None).source == graph_break_registry.SHIPPED


@pytest.mark.parametrize(("code", "message", "expected"), [
    ("WSC201", "`h.max().item()` reads tensor values", "GB0124"),
    ("WSC201", "`h.tolist()` reads tensor values", "GB0109"),
    ("WSC201", "`h.numpy()` reads tensor values", None),
    ("WSC701", "`print(h)` prints tensor values", "GB0059"),
    ("WSC701", "`log.warning(\"%s\", h)` logs tensor values", "GB0291"),
    ("WSC704", "`random.random()` uses the host's random generator", "GB0007"),
    ("WSC704", "`np.random.rand()` uses the host's random generator", "GB0033"),
    ("WSC702", "`state[\"step\"]` is a Python-number step counter", None),
    ("WSC107", "`range(int(steps))` takes its trip count from a tensor value", "GB0124"),
    ("WSC107", "iterating over `expert_hit`, whose length depends on tensor values", None),
])
def test_construct_ids(code: str, message: str, expected: str | None) -> None:
    assert graph_break_id(code, message) == expected
