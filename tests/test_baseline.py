"""The baseline (`cslint baseline`, `check --baseline`, `baseline = ...`): accepted findings are not reported
by any front end, matched by file, code and the flagged line's text (not its number), with a count."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cslint.core import baseline as baseline_module
from cslint.cli.main import main
from cslint.core.config import ConfigError

MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        if x.sum() > 0:
            x = x + 1
        print(x.item())
        return x
"""
TENSOR_IF = "        if x.sum() > 0:\n            x = x + 1\n"
CONFIG = '[tool.cslint]\nbaseline = "cslint-baseline.json"\n'


@dataclass
class Ran:
    returncode: int
    stdout: str
    stderr: str


_capture: list[pytest.CaptureFixture[str]] = []


def cslint(root: Path, *args: str) -> Ran:
    """`cslint ARGS` run in `root`, in this process (a subprocess costs seconds of imports)."""
    capsys = _capture[-1]
    capsys.readouterr()
    here = os.getcwd()
    os.chdir(root)
    try:
        code = main(list(args))
    finally:
        os.chdir(here)
    out, err = capsys.readouterr()
    return Ran(code, out, err)


@pytest.fixture
def project(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Path:
    _capture.append(capsys)
    monkeypatch.delenv("CSLINT_NO_CACHE", raising=False)
    monkeypatch.setenv("CSLINT_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "project"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text(CONFIG)
    (root / "pkg" / "model.py").write_text(MODEL)
    (root / "other.py").write_text(MODEL.replace("Net", "Other"))
    return root


def written(root: Path, *args: str) -> dict:
    out = cslint(root, "baseline", "--no-cache", *args)
    assert out.returncode == 0, out.stderr
    return json.loads((root / "cslint-baseline.json").read_text())


def findings(root: Path, *args: str) -> tuple[int, list[tuple[str, int, str]]]:
    out = cslint(root, "check", "--no-cache", "--output-format", "json", *args)
    assert out.returncode in (0, 1), out.stderr
    return out.returncode, [(Path(d["filename"]).as_posix(), d["line"], d["code"]) for d in json.loads(out.stdout)]


def above_every_line(text: str) -> str:
    """`text` with a blank line and a comment line added above each of its lines (every finding moves)."""
    return "".join(f"\n# moved\n{line}" for line in text.splitlines(keepends=True))


def test_the_file_is_sorted_versioned_counted_and_written_the_same_twice(project: Path) -> None:
    data = written(project)
    assert data["version"] == 1
    entries = data["findings"]
    keys = [(e["file"], e["code"], e["fingerprint"]) for e in entries]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert {e["file"] for e in entries} == {"other.py", "pkg/model.py"}  # relative to the baseline's directory
    twin = [e for e in entries if e["file"] == "pkg/model.py" and e["code"] == "WSC101"]
    assert len(twin) == 1 and twin[0]["count"] == 2 and twin[0]["text"] == "if x.sum() > 0:"
    assert not any("line" in e for e in entries)
    first = (project / "cslint-baseline.json").read_bytes()
    written(project)
    assert (project / "cslint-baseline.json").read_bytes() == first
    # one entry per line: a count that changes is a one-line diff
    assert first.decode().count("\n") == len(entries) + 5


def test_a_baselined_project_passes_in_every_format_even_after_lines_are_inserted_above(project: Path) -> None:
    written(project)
    for path in (project / "pkg" / "model.py", project / "other.py"):
        path.write_text(above_every_line(path.read_text()))
    for output_format in ("text", "concise", "grouped", "json", "json-lines", "sarif", "github"):
        out = cslint(project, "check", "--no-cache", "--output-format", output_format)
        assert out.returncode == 0, (output_format, out.stdout, out.stderr)
        assert "WSC101" not in out.stdout.replace('"WSC101"', "") or output_format == "sarif"
    text = cslint(project, "check", "--no-cache")
    assert "All checks passed (2 files)." in text.stdout and "hidden by the baseline" in text.stdout
    data = cslint(project, "check", "--no-cache", "--output-format", "json")
    assert json.loads(data.stdout) == [] and data.stderr == "cslint: 8 findings hidden by the baseline.\n"
    sarif = json.loads(cslint(project, "check", "--no-cache", "--output-format", "sarif").stdout)
    assert sarif["runs"][0]["results"] == []


def test_one_more_identical_finding_than_the_count_is_reported(project: Path) -> None:
    written(project)
    model = project / "pkg" / "model.py"
    model.write_text(model.read_text().replace("        return x\n", TENSOR_IF + "        return x\n"))
    code, found = findings(project)
    assert code == 1 and found == [("pkg/model.py", 12, "WSC101")]
    # the same line in another file is not covered by this file's entries
    code, found = findings(project, "--baseline", str(project / "cslint-baseline.json"))
    assert len(found) == 1


def test_stale_entries_are_named_in_the_summary_and_pruned(project: Path) -> None:
    written(project)
    model = project / "pkg" / "model.py"
    model.write_text(model.read_text().replace(TENSOR_IF, "", 1))
    out = cslint(project, "check", "--no-cache")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 stale baseline entry" in out.stdout and "--prune-baseline" in out.stdout
    assert "WSC" not in out.stdout  # not a finding
    pruned = cslint(project, "check", "--no-cache", "--prune-baseline")
    assert pruned.returncode == 0 and "Pruned 1 stale entry" in pruned.stderr
    entries = json.loads((project / "cslint-baseline.json").read_text())["findings"]
    assert [e["count"] for e in entries if e["file"] == "pkg/model.py" and e["code"] == "WSC101"] == [1]
    again = cslint(project, "check", "--no-cache")
    assert again.returncode == 0 and "stale" not in again.stdout
    # a file that is gone: its entries are stale; a file not checked in this run: its entries are kept
    (project / "other.py").unlink()
    assert "stale baseline entr" in cslint(project, "check", "--no-cache").stdout
    cslint(project, "check", "--no-cache", "--prune-baseline", "pkg")
    assert not any(e["file"] == "other.py" for e in json.loads((project / "cslint-baseline.json").read_text())["findings"])


def test_entries_of_rules_that_did_not_run_are_not_stale(project: Path) -> None:
    before = written(project)["findings"]
    out = cslint(project, "check", "--no-cache", "--select", "WSC101", "--prune-baseline")
    assert out.returncode == 0 and "stale" not in out.stdout and "Pruned 0" in out.stderr
    assert json.loads((project / "cslint-baseline.json").read_text())["findings"] == before


def test_a_run_on_some_files_keeps_the_entries_of_the_others(project: Path) -> None:
    before = written(project)["findings"]
    (project / "other.py").write_text("x = 1\n")
    after = written(project, "pkg/model.py")["findings"]
    assert after == before
    assert not any(e["file"] == "other.py" for e in written(project)["findings"])


def test_statistics_show_how_many_the_baseline_hid(project: Path) -> None:
    written(project)
    model = project / "pkg" / "model.py"
    model.write_text(model.read_text().replace("        return x\n", TENSOR_IF + "        return x\n"))
    out = cslint(project, "check", "--no-cache", "--statistics")
    assert out.returncode == 1
    lines = out.stdout.splitlines()
    assert lines[0].split()[:2] == ["1", "WSC101"]
    hidden = sum(e["count"] for e in json.loads((project / "cslint-baseline.json").read_text())["findings"])
    assert f"{hidden:>5}  hidden by the baseline" in lines


@pytest.mark.parametrize("content", [
    b"", b"{", b"[]", b'{"version": 2, "findings": []}', b'{"version": 1}',
    b'{"version": 1, "findings": [{"file": "a.py", "code": "WSC101", "fingerprint": "x", "count": 0}]}',
    b'{"version": 1, "findings": [{"file": "a.py", "code": "WSC101", "count": 1}]}',
    b'{"version": 1, "findings": [' + b"[" * 5000 + b"]" * 5000 + b"]}",
    b"\xff\xfe",
], ids=["empty", "truncated", "list", "version", "no-findings", "zero-count", "no-fingerprint", "deep", "binary"])
def test_a_baseline_that_cannot_be_read_is_one_line_and_exit_2(project: Path, content: bytes) -> None:
    (project / "cslint-baseline.json").write_bytes(content)
    out = cslint(project, "check", "--no-cache")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "baseline" in out.stderr and "Traceback" not in out.stderr


def test_a_missing_directory_or_oversized_baseline_is_an_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = cslint(project, "check", "--no-cache")
    assert out.returncode == 2 and "does not exist" in out.stderr and out.stderr.count("\n") == 1
    (project / "cslint-baseline.json").mkdir()
    out = cslint(project, "check", "--no-cache")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    (project / "cslint-baseline.json").rmdir()
    written(project)
    monkeypatch.setattr(baseline_module, "MAX_BASELINE_BYTES", 100)
    with pytest.raises(ConfigError, match="bytes, over the 100 cslint reads"):
        baseline_module.load(project / "cslint-baseline.json")
    out = cslint(project, "check", "--baseline", "nowhere.json")
    assert out.returncode == 2 and "nowhere.json does not exist" in out.stderr


def test_a_cached_report_follows_the_baseline_file(project: Path) -> None:
    assert cslint(project, "baseline").returncode == 0
    kept = (project / "cslint-baseline.json").read_text()
    assert cslint(project, "check").returncode == 0
    (project / "cslint-baseline.json").write_text('{"version": 1, "findings": []}\n')
    shown = cslint(project, "check", "--output-format", "concise")
    assert shown.returncode == 1 and shown.stdout.count("WSC101") == 4
    (project / "cslint-baseline.json").write_text(kept)
    assert cslint(project, "check").returncode == 0
    # the baseline written from the cache is the one written without it
    assert cslint(project, "baseline").returncode == 0
    assert (project / "cslint-baseline.json").read_text() == kept


def test_a_file_that_is_not_analysed_is_never_baselined(project: Path) -> None:
    (project / "broken.py").write_text("def f(:\n")
    out = cslint(project, "baseline", "--no-cache")
    assert out.returncode == 0 and "cannot be baselined" in out.stderr
    assert not any(e["file"] == "broken.py" for e in json.loads((project / "cslint-baseline.json").read_text())["findings"])
    code, found = findings(project)
    assert code == 1 and found == [("broken.py", 1, "WSC001")]


def test_fix_leaves_a_baselined_finding_alone(project: Path) -> None:
    written(project)
    model = project / "pkg" / "model.py"
    model.write_text(model.read_text().replace("        return x\n", TENSOR_IF + "        return x\n"))
    out = cslint(project, "check", "--no-cache", "--fix", "pkg/model.py")
    assert out.returncode == 0, out.stdout + out.stderr
    text = model.read_text()
    assert text.count("if x.sum() > 0:") == 2 and "torch.where" in text  # only the new one fixed


def test_baseline_usage_errors(project: Path, tmp_path: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.cslint]\n")
    out = cslint(project, "baseline")
    assert out.returncode == 2 and "--baseline FILE" in out.stderr
    assert cslint(project, "baseline", "--baseline", "b.json", "--fix").returncode == 2
    assert cslint(project, "check", "--prune-baseline").returncode == 2
    (project / "pyproject.toml").write_text("[tool.cslint]\nbaseline = 3\n")
    out = cslint(project, "check")
    assert out.returncode == 2 and "`baseline` must be" in out.stderr


def test_a_configured_baseline_outside_the_project_is_never_written(project: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's file\n")
    (project / "pyproject.toml").write_text('[tool.cslint]\nbaseline = "../victim.txt"\n')
    for args in (("baseline",), ("check", "--prune-baseline")):
        out = cslint(project, *args, "--no-cache")
        assert out.returncode == 2 and "outside its project" in out.stderr and out.stderr.count("\n") == 1
    (project / "sub").symlink_to(tmp_path)  # nor through a linked directory
    (project / "pyproject.toml").write_text('[tool.cslint]\nbaseline = "sub/victim.txt"\n')
    assert cslint(project, "baseline", "--no-cache").returncode == 2
    assert victim.read_text() == "the user's file\n"
    # named on the command line, it goes where the user says
    assert cslint(project, "baseline", "--no-cache", "--baseline", str(tmp_path / "mine.json")).returncode == 0


# ---- every front end ---------------------------------------------------------------------------------

def test_the_flake8_plugin_honours_the_baseline(project: Path) -> None:
    pytest.importorskip("flake8")
    written(project)

    def flake8() -> list[str]:
        proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "WSC", "."], cwd=project,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode in (0, 1), proc.stderr
        return proc.stdout.splitlines()

    model = project / "pkg" / "model.py"
    model.write_text(above_every_line(model.read_text()))
    assert flake8() == []
    unsaved = subprocess.run([sys.executable, "-m", "flake8", "--select", "WSC", "--stdin-display-name",
                              "pkg/model.py", "-"], cwd=project, input="\n\n\n" + MODEL, capture_output=True,
                             text=True, timeout=120)
    assert (unsaved.returncode, unsaved.stdout) == (0, ""), unsaved.stdout + unsaved.stderr
    model.write_text(model.read_text() + "\n" + MODEL.replace("Net", "Extra"))
    found = flake8()
    assert len(found) == 4 and all(line.startswith("./pkg/model.py:") for line in found)


def test_the_served_hook_honours_the_baseline(project: Path, tmp_path: Path) -> None:
    from tests.test_server import cslint as served, start_server

    env = {k: v for k, v in os.environ.items() if k not in ("CI", "CSLINT_NO_SERVER", "CSLINT_CACHE_DIR")}
    env.update(CSLINT_SERVER_DIR=str(tmp_path / "run"), CSLINT_SERVER_IDLE="120")
    (project / "model.py").write_text(MODEL)
    written(project)
    try:
        start_server(env, project)
        out = served(env, project, "check", "--server", "--no-cache", "model.py", "pkg/model.py")
        assert out.returncode == 0 and "hidden by the baseline" in out.stdout, out.stdout + out.stderr
        (project / "model.py").write_text(MODEL + "\n\n" + MODEL.replace("Net", "Extra"))
        out = served(env, project, "check", "--server", "--no-cache", "--output-format", "concise", "model.py")
        assert out.returncode == 1 and out.stdout.count("model.py:") == 4, out.stdout + out.stderr
    finally:
        served(env, project, "server", "stop")


def test_the_language_server_honours_the_baseline(project: Path) -> None:
    pytest.importorskip("pygls")
    from lsprotocol import types

    from tests.test_lsp import Session, run

    written(project)
    model = project / "pkg" / "model.py"

    async def scenario() -> None:
        async with Session(project) as s:
            s.open("pkg/model.py")
            assert await s.diagnostics("pkg/model.py") == []
            s.change("pkg/model.py", above_every_line(MODEL), version=2)
            assert await s.diagnostics("pkg/model.py", lambda p: p.version == 2) == []
            s.change("pkg/model.py", MODEL.replace("        return x\n", TENSOR_IF + "        return x\n"), version=3)
            found = await s.diagnostics("pkg/model.py", lambda p: p.version == 3)
            assert [(d.code, d.range.start.line) for d in found] == [("WSC101", 11)]
            # the baseline saved in the editor (emptied): every finding shows
            before = s.count("pkg/model.py")
            (project / "cslint-baseline.json").write_text('{"version": 1, "findings": []}\n')
            s.client.text_document_did_save(types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("cslint-baseline.json"))))
            assert len(await s.diagnostics("pkg/model.py", after=before)) == 5

    assert model.read_text() == MODEL
    run(scenario())


def test_baseline_help_is_the_baseline_commands(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["baseline", "--help"])
    out = capsys.readouterr().out
    assert ended.value.code == 0 and out.startswith("usage: cslint baseline ") and "Write the baseline" in out
