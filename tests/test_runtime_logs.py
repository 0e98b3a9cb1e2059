"""`cslint check --runtime-log`: logs captured from real steps (tests/fixtures/runtime_logs, made by
bench/capture_runtime_logs.py) map every event to a file:line with the static finding there or "runtime only";
--fix fixes only what a log confirmed; a log cslint cannot read is an error, never an empty report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cslint.cli.main import main
from cslint.runtime_logs import metrics_report, torch_logs
from cslint.runtime_logs.read import LogError, read_log

ROOT = Path(__file__).parent.parent
LOGS = Path(__file__).parent / "fixtures" / "runtime_logs"
LOGGED_ROOT = "/home/user/cslint"  # the checkout the shipped logs name (a path that is no file here)
TARGETS = Path("tests") / "runtime" / "targets"
HF = ("bert", "gpt2", "t5", "llama", "mixtral")
FAMILIES = ("control_flow", "host_transfer", "dynamic_shape", "python_counter")


def _report(capsys: pytest.CaptureFixture[str], logs: list[Path], *paths: str, fix: bool = False) -> dict:
    args = ["check", "--no-cache", "--exit-zero", "--target", "compile", "--output-format", "json",
            "--runtime-log", *map(str, logs), *(["--fix"] if fix else []), "--", *paths]
    assert main(args) == 0
    return json.loads(capsys.readouterr().out)


def _logs() -> list[Path]:
    return sorted(p for p in LOGS.iterdir() if p.is_dir() or p.suffix in (".log", ".txt", ".json"))


def test_the_shipped_logs_cover_five_models_on_both_backends() -> None:
    names = {p.name for p in _logs()}
    assert all(f"{family}.dynamo.log" in names for family in HF)
    assert all(f"{family}.lazy-report.json" in names for family in HF)
    assert any(name.endswith(".trace") for name in names) and any(name.endswith("lazy-metrics.txt") for name in names)


@pytest.mark.parametrize("log", _logs(), ids=lambda p: p.name)
def test_every_event_maps_to_a_line_and_a_finding_or_runtime_only(
        log: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    report = _report(capsys, [log], str(TARGETS / "real_steps.py"), str(TARGETS / "families.py"))
    if log.name == "python_counter.lazy-metrics.txt":  # a Python float is device data to lazy tensors: one compile
        assert not report["events"]
        return
    assert report["events"], f"{log.name}: no event read"
    for event in report["events"]:
        if log.name.endswith("lazy-metrics.txt"):  # a metrics report counts over the run: no line to map
            assert event["verdict"] == "run-wide" and event["filename"] is None
            continue
        assert event["frames"] and all(f["filename"] and f["line"] > 0 for f in event["frames"]), event
        assert event["verdict"] == ("static finding" if event["static"] else "runtime only"), event
        if event["static"]:
            assert all(d["filename"] == event["filename"] and d["line"] == event["line"] for d in event["static"])


@pytest.mark.parametrize(("log", "line", "code", "gb"), [
    ("control_flow.dynamo.log", 14, "WSC101", "GB0170"),
    ("control_flow.trace", 14, "WSC101", "GB0170"),
    ("host_transfer.dynamo.log", 26, "WSC201", "GB0124"),
    ("host_transfer.trace", 26, "WSC201", "GB0124"),
    ("dynamic_shape.dynamo.log", 49, "WSC502", "GB0036"),
])
def test_a_break_is_the_static_finding_at_its_line_with_the_same_id(
        log: str, line: int, code: str, gb: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    report = _report(capsys, [LOGS / log], str(TARGETS / "families.py"))
    [event] = [e for e in report["events"] if e["line"] == line]
    assert event["kind"] == "graph break" and event["graph_break"] == gb
    assert [(d["code"], d["graph_break"]["id"]) for d in event["static"]] == [(code, gb)]


def test_a_recompile_is_the_guarded_line_and_the_finding_it_did_not_see(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    for log in ("python_counter.dynamo.log", "python_counter.trace"):
        report = _report(capsys, [LOGS / log], str(TARGETS / "families.py"))
        [event] = report["events"]
        assert (event["kind"], event["line"], [d["code"] for d in event["static"]]) == ("recompile", 71, ["WSC702"])
        assert [(d["code"], d["line"]) for d in report["not_seen"]] == [("WSC703", 73)]


def test_the_training_step_breaks_are_runtime_only_at_the_users_lines(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """backward, optimizer.step (a break inside torch's optimizer.py, put at the user's call) and zero_grad."""
    monkeypatch.chdir(ROOT)
    report = _report(capsys, [LOGS / "llama.dynamo.log"], str(TARGETS / "real_steps.py"))
    assert {(e["line"], e["graph_break"], e["verdict"]) for e in report["events"]} == {
        (40, "GB0123", "runtime only"), (41, "GB0025", "runtime only"), (42, "GB0008", "runtime only")}


def test_mixtral_breaks_in_transformers_are_its_static_findings(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    transformers = pytest.importorskip("transformers")
    if transformers.__version__ != "5.24.0":
        pytest.skip("the log's lines are transformers 5.24.0's")
    monkeypatch.chdir(ROOT)
    modeling = Path(transformers.__file__).parent / "models" / "mixtral" / "modeling_mixtral.py"
    report = _report(capsys, [LOGS / "mixtral.dynamo.log"], str(modeling))
    found = {e["line"]: (e["graph_break"], [d["code"] for d in e["static"]]) for e in report["events"]
             if e["filename"] == str(modeling) and e["kind"] == "graph break"}
    assert found[79] == ("GB0036", ["WSC501"]) and found[83] == ("GB0170", ["WSC101"])
    assert (85, "WSC501") in {(d["line"], d["code"]) for d in report["not_seen"]}  # the loop ran eagerly


def test_fix_fixes_only_what_the_log_confirmed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "tests" / "runtime" / "targets"
    project.mkdir(parents=True)
    shutil.copy(ROOT / TARGETS / "families.py", project / "families.py")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    monkeypatch.chdir(tmp_path)
    before = (project / "families.py").read_text().splitlines()
    elsewhere = tmp_path / "control_flow.dynamo.log"  # as captured in another checkout
    logged = (LOGS / "control_flow.dynamo.log").read_text()
    elsewhere.write_text(logged.replace(LOGGED_ROOT, "/nonexistent/checkout"))
    assert "/nonexistent/checkout/tests/runtime/targets/families.py:14" in elsewhere.read_text()
    assert _report(capsys, [elsewhere], str(TARGETS / "families.py"), fix=True)["fixed"] == 1
    after = (project / "families.py").read_text().splitlines()
    assert "torch.where" in "\n".join(after[12:18]) and before[13] != after[13]  # line 14's `if`, confirmed
    assert any(".item()" in line for line in after)  # line 26's `.item()` has a safe fix, but no log saw it
    assert main(["check", "--no-cache", "--exit-zero", "--target", "compile", "--fix",
                 str(TARGETS / "families.py")]) == 0
    assert not any(".item()" in line for line in (project / "families.py").read_text().splitlines())


@pytest.mark.parametrize(("name", "content", "message"), [
    ("missing.log", None, "cannot read the runtime log"),
    ("notes.txt", "nothing a runtime printed\n", "not a runtime log cslint reads"),
    ("empty.log", "", "empty"),
    ("empty-trace", "", "no trace files"),
    ("broken.json", '[{"findings": [{"path": 3}]}]', "a finding without path, line and code"),
])
def test_a_log_cslint_cannot_read_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                              content: str | None, message: str) -> None:
    log = tmp_path / name
    if name == "empty-trace":
        log.mkdir()
    elif content is not None:
        log.write_text(content)
    (tmp_path / "model.py").write_text("x = 1\n")
    assert main(["check", "--no-cache", "--runtime-log", str(log), "--", str(tmp_path / "model.py")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("extra", [["--verify", "--fix"], ["--add-noqa"], ["--stdin-filename", "model.py", "-"]])
def test_runtime_log_with_what_it_cannot_apply_to_is_a_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, extra: list[str]) -> None:
    """It would be ignored silently: the report would not be the one asked for."""
    (tmp_path / "model.py").write_text("x = 1\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("x = 1\n"))
    args = ["check", "--no-cache", "--runtime-log", str(LOGS / "llama.dynamo.log"), *extra]
    assert main(args + (["model.py"] if "-" not in extra else [])) == 2
    assert "--runtime-log cannot be combined" in capsys.readouterr().err


def test_metrics_report_counters() -> None:
    """The lazy-tensor-core format torch_xla's `metrics_report()` prints (the sample of its troubleshooting
    guide, indented fields), and torch._lazy's, which the fixtures hold."""
    sample = ("Metric: CompileTime\n  TotalSamples: 3\n  Accumulator: 09s969ms486.408us\n"
              "  Percentiles: 1%=09s969ms486.408us; 5%=09s969ms486.408us\n"
              "Counter: CachedCompile\n  Value: 2\nCounter: UncachedCompile\n  Value: 3\n"
              "Counter: aten::_local_scalar_dense\n  Value: 4\nCounter: aten::nonzero\n  Value: 1\n"
              "Counter: xla::add\n  Value: 9\n")
    found = {e.summary.split(" ", 1)[0]: e.extra["family"] for e in metrics_report.events(sample)}
    assert found == {"aten::_local_scalar_dense": "WSC2", "aten::nonzero": "WSC5", "UncachedCompile": "WSC7"}
    assert read_log(str(LOGS / "host_transfer.lazy-metrics.txt"))


def test_program_output_between_log_lines_is_not_an_event() -> None:
    text = (LOGS / "control_flow.dynamo.log").read_text()
    lines = text.splitlines()
    mixed = "\n".join([lines[0], "epoch 1 loss 0.25", "W1128 warnings.py:1] a warning", *lines[1:]])
    assert torch_logs.events(mixed) == torch_logs.events(text)
    assert torch_logs.events(text)[0].summary == "Data-dependent branching"
    with pytest.raises(LogError):
        read_log(str(LOGS))  # the fixtures directory is not a TORCH_TRACE directory


def test_a_library_file_with_the_name_of_a_checked_file_is_not_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """A log path that is a file here, and not the one checked, is that other file, however it ends."""
    library = tmp_path / "site-packages" / "tests" / "runtime" / "targets" / "families.py"
    library.parent.mkdir(parents=True)
    library.write_text("")
    log = tmp_path / "run.log"
    log.write_text((LOGS / "control_flow.dynamo.log").read_text().replace(LOGGED_ROOT, str(tmp_path / "site-packages")))
    monkeypatch.chdir(ROOT)
    [event] = _report(capsys, [log], str(TARGETS / "families.py"))["events"]
    assert event["filename"] is None and event["verdict"] == "runtime only" and not event["static"]
