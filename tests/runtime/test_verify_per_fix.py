"""`cslint check --fix --verify` keeps what it verified: each file's fixes, then each fix, on their own when the
whole set does not pass; one line per fix not written, with the whole cause of a backend that stopped; a
torch.compile step under dynamo only; progress on stderr."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import libcst as cst
import pytest

pytest.importorskip("torch")

from cslint.cli.main import main as cslint_main  # noqa: E402
from cslint.core.config import Settings  # noqa: E402
from cslint.engine.fixed import FixedFinding  # noqa: E402
from cslint.core.report import Diagnostic  # noqa: E402
from cslint.core.run_result import RunResult
from cslint.runtime import RuntimeReport, check  # noqa: E402
from cslint.runtime.cli import render_text  # noqa: E402
from cslint.runtime.findings import COMPLETE, stopped  # noqa: E402
from cslint.runtime.trials import Trials, verified  # noqa: E402
from cslint.runtime.findings import RuntimeFinding  # noqa: E402
from cslint.runtime.verify import backends_for, incomplete, new_problems  # noqa: E402
from cslint.core.sources import SourceFile  # noqa: E402

GATE = textwrap.dedent('''
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
''').lstrip()
GATE_WHERE = "        y = torch.where(h.mean() > 0, h * 2, h - 1)\n"
GATE_IF = "        if h.mean() > 0:\n            y = h * 2\n        else:\n            y = h - 1\n"

HEAD = textwrap.dedent('''
    import torch
    from torch import nn


    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.out = nn.Linear(6, 3)

        def forward(self, y):
            loss = self.out(y).pow(2).mean()
            if loss > 10.0:
                loss = loss - 1.0
            return loss
''').lstrip()

STEP = textwrap.dedent('''
    import torch


    def target(device):
        torch.manual_seed(0)
        gate, head = Gate().to(device), Head().to(device)

        def step(x):
            loss = head(gate(x))
            loss.backward()
            return loss.detach(), head.out.weight.grad.sum()

        return step, [torch.randn(3, 6, device=device) * 3 for _ in range(2)]
''')

TWO_FILES = {"gate.py": GATE, "head.py": HEAD, "model.py": "from gate import Gate\nfrom head import Head\n" + STEP}
ONE_FILE = {"model.py": GATE + HEAD.split("\n", 3)[3] + STEP}  # Head's class after Gate's, one import block


def _in_process(target: str, backends: tuple[str, ...] = ("lazy",), *, cwd: str | None = None,
                compiled_backends: tuple[str, ...] | None = None, **kwargs: object) -> RuntimeReport:
    """The run in this process (a child process costs seconds): the project's modules are imported afresh
    from the copy each time, as a child process would."""
    def forget() -> None:
        for name, module in list(sys.modules.items()):
            if cwd and (getattr(module, "__file__", None) or "").startswith(cwd + os.sep):
                del sys.modules[name]
    forget()
    sys.path.insert(0, cwd or ".")
    try:
        return check(target, backends, outputs=True, isolate=False, compiled_backends=compiled_backends,
                     progress=bool(kwargs.get("progress")))
    finally:
        sys.path.remove(cwd or ".")
        forget()


def _project(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text('[tool.cslint]\nruntime-targets = ["model.py:target"]\n')
    for name, text in files.items():
        (root / name).write_text(text)
    return root


@pytest.fixture
def wrong_head_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    """The torch.where fix of `if loss > 10.0` swaps its branches (a wrong fix); Gate's stays right."""
    import cslint.fixers.where as where

    right = where._where

    def swapped_for_loss(torch: str, test: cst.BaseExpression, a: cst.BaseExpression,
                         b: cst.BaseExpression) -> cst.Call:
        if "loss" in cst.Module([]).code_for_node(test):
            return right(torch, test, b, a)
        return right(torch, test, a, b)
    monkeypatch.setattr(where, "_where", swapped_for_loss)


def _verify(capsys: pytest.CaptureFixture[str], root: Path, *argv: str) -> tuple[int, str, str]:
    code = cslint_main(["check", "--no-cache", str(root), "--fix", "--verify", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_fixes_of_a_file_that_pass_are_written_and_the_other_file_s_fix_is_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wrong_head_fix: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path, TWO_FILES)
    monkeypatch.chdir(root)
    monkeypatch.setattr("cslint.runtime.verify.check", _in_process)
    code, out, err = _verify(capsys, root)
    assert (root / "gate.py").read_text() == GATE.replace(GATE_IF, GATE_WHERE)
    assert (root / "head.py").read_text() == HEAD
    notes = [line for line in err.splitlines() if line.startswith("cslint: --verify: ")]
    assert "cslint: --verify: not written: head.py:12 WSC101: model.py:target: the outputs changed (largest " \
           "difference" in err
    assert "cslint: --verify: kept: gate.py:12 WSC101" in notes
    assert notes[-1] == "cslint: --verify: model.py:target: runtime findings 2 -> 1, outputs allclose (lazy); " \
                        "1 of 2 fixes kept"
    progress = [line.removeprefix("cslint: --verify: ") for line in notes if "running" in line or "trying" in line]
    assert progress == [
        "running model.py:target on the original code",
        "running model.py:target on both fixes",
        "both fixes did not pass together; trying each file's fixes on its own",
        "running model.py:target on the fix of gate.py:12 WSC101",
        "running model.py:target on the fix of head.py:12 WSC101",
    ]
    assert "cslint runtime: lazy step 2/2" in err  # the runs' own progress
    assert code == 1 and "Fixed 1 finding in 1 file." in out and out.count("WSC101") == 1


def test_the_fixes_of_one_file_are_verified_one_by_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wrong_head_fix: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path, ONE_FILE)
    monkeypatch.chdir(root)
    monkeypatch.setattr("cslint.runtime.verify.check", _in_process)
    code, out, err = _verify(capsys, root)
    assert (root / "model.py").read_text() == ONE_FILE["model.py"].replace(GATE_IF, GATE_WHERE)
    assert "both fixes did not pass together; trying each fix on its own" in err
    head_if = ONE_FILE["model.py"].splitlines().index("        if loss > 10.0:") + 1
    assert f"cslint: --verify: not written: model.py:{head_if} WSC101: model.py:target: the outputs changed" in err
    assert "cslint: --verify: kept: model.py:12 WSC101" in err and "1 of 2 fixes kept" in err
    assert code == 1 and "Fixed 1 finding in 1 file." in out


def test_a_file_edited_while_its_fixes_are_tried_one_by_one_is_not_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wrong_head_fix: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The trials re-lint the files to apply fixes one by one: a file the user saved meanwhile is read in its
    new text, whose fixes were never run; nothing is written."""
    root = _project(tmp_path, TWO_FILES)
    monkeypatch.chdir(root)
    runs = []
    edited = GATE.replace("h * 2", "h * 3")

    def edit_after_the_first_trial(target: str, backends: tuple[str, ...] = ("lazy",), **kwargs: object
                                   ) -> RuntimeReport:
        runs.append(target)
        if len(runs) == 2:  # the run of both fixes: the user saves gate.py
            (root / "gate.py").write_text(edited)
        return _in_process(target, backends, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr("cslint.runtime.verify.check", edit_after_the_first_trial)
    code, _, err = _verify(capsys, root)
    assert (root / "gate.py").read_text() == edited and (root / "head.py").read_text() == HEAD
    assert err.rstrip().endswith("cslint: --verify: no fix written: gate.py: changed on disk during verification; "
                                 "not overwritten")
    assert len(runs) == 2 and code == 1


SINGLE = GATE + textwrap.dedent('''


    def target(device):
        torch.manual_seed(0)
        return Gate().to(device), [torch.randn(3, 6, device=device) * 3 for _ in range(2)]
''')


def test_quiet_verification_prints_its_verdict_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    root = _project(tmp_path, {"model.py": SINGLE})
    monkeypatch.chdir(root)
    monkeypatch.setattr("cslint.runtime.verify.check", _in_process)
    code, _, err = _verify(capsys, root, "-q")
    assert err.splitlines() == ["cslint: --verify: model.py:target: runtime findings 1 -> 0, outputs allclose "
                                "(lazy); fixes kept"]
    assert code == 0 and "torch.where" in (root / "model.py").read_text()


MULTI_LINE_FAILURE = textwrap.dedent('''

    _FIXED = "torch." + "where(" in open(__file__).read()  # only the fixed text has it


    def _lazy_fails(x):
        if _FIXED and x.device.type == "lazy":
            raise RuntimeError("The following operation failed in the TorchScript interpreter.\\n"
                               "Traceback of TorchScript (most recent call last):\\n"
                               "RuntimeError: expected m1 and m2 to have the same dtype, but got: float != double")
''')


def test_a_backend_that_stops_is_reported_with_its_whole_cause(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """The status names the user's line and the first line of the exception; the rest of the message (what
    actually went wrong) follows it, never cut; paths are the project's, not the temporary copy's."""
    model = SINGLE.replace("        return y\n", "        _lazy_fails(y)\n        return y\n") + MULTI_LINE_FAILURE
    root = _project(tmp_path, {"model.py": model})
    monkeypatch.chdir(root)
    monkeypatch.setattr("cslint.runtime.verify.check", _in_process)
    code, _, err = _verify(capsys, root)
    assert (root / "model.py").read_text() == model
    line = next(i for i, text in enumerate(model.splitlines(), 1) if text.strip().startswith("raise RuntimeError("))
    head = ("cslint: --verify: not written: model.py:12 WSC101: model.py:target: the runtime run after fixing did "
            f"not complete: lazy stopped at model.py:{line} (RuntimeError: The following operation failed in the "
            "TorchScript interpreter.)")
    lines = err.splitlines()
    at = lines.index(head)
    assert lines[at + 1:at + 5] == [
        "    RuntimeError: The following operation failed in the TorchScript interpreter.",
        "    Traceback of TorchScript (most recent call last):",
        "    RuntimeError: expected m1 and m2 to have the same dtype, but got: float != double",
        "    (the lazy backend runs the ops it recorded since its last sync at this line, so the op at fault may be "
        "on an earlier line)"]
    assert str(tmp_path) not in err.replace(f"running {root}", "")  # the copy's paths are the project's
    assert code == 1


def test_the_whole_cause_survives_the_child_process_and_cslint_runtime_prints_it() -> None:
    report = RuntimeReport("t.py:step", status={"lazy": stopped("RuntimeError: first", "t.py", 3), "dynamo": COMPLETE},
                           causes={"lazy": "RuntimeError: first\nsecond\nthird"})
    again = RuntimeReport.from_json(report.to_json())
    assert again.causes == report.causes
    assert render_text(again).splitlines()[:4] == [
        "t.py:step: lazy: stopped at t.py:3 (RuntimeError: first)", "    RuntimeError: first", "    second",
        "    third"]
    assert incomplete(again) == "lazy stopped at t.py:3 (RuntimeError: first)\n    RuntimeError: first\n" \
                                "    second\n    third"
    failed = RuntimeReport("t", error="Traceback (most recent call last):\n  File ...\nValueError: fails here")
    assert incomplete(failed) == "it failed: ValueError: fails here\n    Traceback (most recent call last):\n" \
                                 "      File ...\n    ValueError: fails here"


COMPILED = textwrap.dedent('''
    import functools

    import torch


    def _loss(w, x):
        return (x @ w).pow(2).mean()


    def compiled(device):
        w = torch.ones(4, 2, device=device)
        return torch.compile(_loss, backend="eager"), [(w, torch.randn(3, 4, device=device))]


    def plain(device):
        w = torch.ones(4, 2, device=device)
        return _loss, [(w, torch.randn(3, 4, device=device))]
''')


def test_a_torch_compile_step_runs_under_dynamo_only(tmp_path: Path) -> None:
    (tmp_path / "steps.py").write_text(COMPILED)
    compiled = check(f"{tmp_path / 'steps.py'}:compiled", ("lazy",), isolate=False, compiled_backends=("dynamo",))
    assert compiled.status == {"dynamo": COMPLETE}
    plain = check(f"{tmp_path / 'steps.py'}:plain", ("lazy",), isolate=False, compiled_backends=("dynamo",))
    assert plain.status == {"lazy": COMPLETE}
    assert check(f"{tmp_path / 'steps.py'}:compiled", ("lazy",), isolate=False).status == {"lazy": COMPLETE}


def test_compiled_steps_are_recognised() -> None:
    import functools

    import torch

    from cslint.runtime.compiled_steps import is_compiled_step

    def step(x):
        return x + 1

    model = torch.compile(torch.nn.Linear(2, 2))
    compiled = torch.compile(step)

    def calls_compiled_model(x):
        return model(x)

    assert is_compiled_step(compiled) and is_compiled_step(model) and is_compiled_step(model.forward)
    assert is_compiled_step(functools.partial(compiled, 1)) and is_compiled_step(calls_compiled_model)
    assert not is_compiled_step(step) and not is_compiled_step(torch.nn.Linear(2, 2))
    assert not is_compiled_step(functools.partial(step, 1))


def test_each_target_runs_on_its_targets_backend() -> None:
    assert backends_for(Settings(target="compile")) == ("dynamo",)
    assert backends_for(Settings(target="wsc")) == backends_for(Settings(target="xla")) == ("lazy",)


def test_a_recompile_the_fix_moves_into_the_step_s_frame_is_not_new() -> None:
    """The walk-through's classifier: once the WSC101 fix removed the graph break in `forward`, dynamo inlines
    the model into the step and reports the counter's recompile (WSC702 at model.py:14 before) as WSC703 at
    the step's `model(x, labels)` in train.py; the fix was refused for it."""
    def found(path: str, line: int, code: str) -> tuple[str, RuntimeFinding]:
        return path, RuntimeFinding(code, path, line, "m", "dynamo")

    before = [found("model.py", 14, "WSC702"), found("model.py", 19, "WSC101")]
    assert new_problems(before, [found("train.py", 12, "WSC703")]) == ""
    assert new_problems(before, [found("train.py", 12, "WSC703"), found("train.py", 13, "WSC704")]) == \
        "a recompile"
    assert new_problems(before, [found("model.py", 14, "WSC702"), found("train.py", 9, "WSC201")]) == \
        "WSC201 in train.py"


# ---- trials, with a fake linter and runtime --------------------------------------------------------------


def _diagnostic(path: str, line: int) -> Diagnostic:
    return Diagnostic(Path(path), line, 1, line, 2, "WSC101", "m", fix=SimpleNamespace(applicability="safe"))


class _Project:
    """Two files with one fix each; `fix_only` gives the texts with the chosen fixes applied."""

    originals = {"a.py": "a = 1\n", "b.py": "b = 1\n"}

    def __init__(self) -> None:
        self.plain = RunResult(diagnostics=[_diagnostic("a.py", 1), _diagnostic("b.py", 1)])
        self.fixes = [FixedFinding(Path("a.py"), 1, 1, "WSC101"), FixedFinding(Path("b.py"), 1, 1, "WSC101")]
        self.sources = {name: SourceFile(Path(name), text, original_text=text) for name, text in self.originals.items()}
        self.runs: list[str] = []

    def fix_only(self, choice) -> RunResult:  # type: ignore[no-untyped-def]
        chosen = [d for d in self.plain.diagnostics if choice(d)]
        changed = [SourceFile(d.path, self.originals[str(d.path)].replace("1", "2"), original_text=self.originals[
            str(d.path)]) for d in chosen]
        return RunResult(diagnostics=[d for d in self.plain.diagnostics if d not in chosen], changed_files=changed)

    def trials(self, fails_together: bool) -> Trials:
        def run(texts: dict[str, str], what: str) -> list[RuntimeReport]:
            self.runs.append(what)
            return [RuntimeReport("t", status={"lazy": COMPLETE})]

        def judge(trial, after):  # type: ignore[no-untyped-def]
            return (["t: the outputs changed"] if fails_together and len(trial.texts) == 2 else []), {}

        return Trials(self.plain, self.sources, self.fix_only, False, str, run, judge, lambda text: None)


def test_fixes_that_pass_apart_and_together_are_kept_together() -> None:
    project = _Project()
    outcome = verified(project.fixes, None, project.trials(fails_together=False))
    assert outcome.kept is not None and outcome.kept.fixes == project.fixes and not outcome.rejected
    assert project.runs == ["both fixes"]


def test_fixes_that_pass_apart_but_not_together_keep_the_first_and_report_the_other() -> None:
    project = _Project()
    outcome = verified(project.fixes, None, project.trials(fails_together=True))
    assert project.runs == ["both fixes", "the fix of a.py:1 WSC101", "the fix of b.py:1 WSC101",
                            "the 2 fixes that passed, together"]
    assert outcome.kept is not None and outcome.kept.fixes == project.fixes[:1]
    assert outcome.kept.texts == {"a.py": "a = 2\n"}
    assert outcome.rejected == {project.fixes[1]: "passed on its own, but not with the fixes that are kept: "
                                                  "t: the outputs changed"}


# ---- the ten-file project of issue #38 -------------------------------------------------------------------

PROJECT = Path(__file__).parent / "projects" / "tinygpt_project"
SLOW = pytest.mark.skipif(os.environ.get("CSLINT_RUNTIME_MODELS") != "1",
                          reason="about 2 minutes of runtime runs: set CSLINT_RUNTIME_MODELS=1")


@SLOW
def test_the_ten_file_project_gets_its_verified_fixes(tmp_path: Path) -> None:
    """A small GPT whose loss is halved under a tensor `if`, a hand-written Lion, a torch.compile step and a
    `@cstorch.trace` step (`runtime-targets` names both). The WSC101 fix of the `if` makes the lazy backend
    stop (its TorchScript interpreter fails on `0-dim tensor * Python float` in the backward, which the
    original never ran: the branch is not taken), so it is reported with that cause; Lion's WSC301 fix
    (state created in preinitialize()) is verified and written; its WSC401 fix is never seen at runtime
    (`group["lr"]` is a Python number there) and is left unverified. Real child processes, as a user runs it."""
    root = tmp_path / "tinygpt_project"
    shutil.copytree(PROJECT, root)
    env = dict(os.environ, CSLINT_NO_CACHE="1", CSLINT_NO_SERVER="1")
    run = subprocess.run([sys.executable, "-m", "cslint", "check", ".", "--fix", "--verify"], cwd=root, env=env,
                         capture_output=True, text=True, timeout=900)
    optim, model = (root / "tinygpt" / "optim.py").read_text(), (root / "tinygpt" / "model.py").read_text()
    assert "def preinitialize(self):" in optim and "if len(state) == 0:" not in optim
    assert 'p.add_(update, alpha=-group["lr"])' in optim
    assert model == (PROJECT / "tinygpt" / "model.py").read_text()
    err = run.stderr.splitlines()
    assert "cslint: --verify: kept: tinygpt/optim.py:24 WSC301" in err
    assert any(line.startswith("cslint: --verify: not written: tinygpt/optim.py:29 WSC401: the runtime never saw")
               for line in err)
    rejected = next(i for i, line in enumerate(err) if line.startswith(
        "cslint: --verify: not written: tinygpt/model.py:24 WSC101: checks.py:traced_step: the runtime run after "
        "fixing did not complete: lazy stopped at tinygpt/optim.py:"))
    assert err[rejected + 3] == "    RuntimeError: expected scalar type Float but found Double"
    assert "cslint runtime: a torch.compile step: running it under dynamo only" in err
    assert err[-1].endswith("1 of 3 fixes kept") and "checks.py:compiled_step: runtime findings" in err[-1]
    assert "(dynamo)" in err[-1] and "(lazy)" in err[-1]
    assert run.returncode == 1 and "Fixed 1 finding in 1 file." in run.stdout
