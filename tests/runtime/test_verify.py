"""`cslint check --fix --verify`: all fixes or none, verified from a copy of the project; the exit code and
the findings printed describe the files on disk."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import libcst as cst
import pytest

pytest.importorskip("torch")

from cslint.cli.main import main as cslint_main  # noqa: E402
from cslint.runtime import RuntimeReport, check  # noqa: E402
from cslint.runtime.verify import incomplete, original_lines, outputs_differ  # noqa: E402
from cslint.runtime.findings import COMPLETE, TIMED_OUT, stopped  # noqa: E402
from tests.signals import as_on_a_terminal  # noqa: E402

MODEL = textwrap.dedent('''
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


    def target(device):
        return Gate().to(device), [torch.randn(3, 6, device=device) * 3 for _ in range(2)]
''').lstrip()

GATE_IF = """        if h.mean() > 0:
            y = h * 2
        else:
            y = h - 1
"""
GATE_WHERE = "        y = torch.where(h.mean() > 0, h * 2, h - 1)\n"

UNREACHED = textwrap.dedent('''

    class Unused(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                y = x + 1
            else:
                y = x - 1
            return y
''')

# A target that records the text of the user's own model.py each time it runs (in the verification's copy).
SPY = textwrap.dedent('''

    import os as _os
    with open(_os.environ["CSLINT_TEST_SPY"], "a") as _log:
        _log.write(repr(open(_os.environ["CSLINT_TEST_USER_FILE"]).read()) + "\\n")
''')


def _in_process(target: str, backends: tuple[str, ...] = ("lazy",), *, compiled_backends: tuple[str, ...] | None = None,
                **kwargs: object) -> RuntimeReport:
    return check(target, backends, outputs=True, isolate=False,  # the child process costs seconds per run
                 compiled_backends=compiled_backends)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.cslint]\nruntime-targets = ["model.py:target"]\n')
    (tmp_path / "model.py").write_text(MODEL)
    monkeypatch.setattr("cslint.runtime.verify.check", _in_process)
    return tmp_path


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cslint_main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_verified_fix_is_kept(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = check(f"{project / 'model.py'}:target", ("lazy",), isolate=False)
    assert [f.code for f in before.findings] == ["WSC101"]
    code, out, err = _run(capsys, "check", str(project / "model.py"), "--fix", "--verify")
    assert code == 0
    assert "torch.where" in (project / "model.py").read_text()
    assert "model.py:target: runtime findings 1 -> 0, outputs allclose (lazy); fixes kept" in err
    assert "Fixed 1 finding in 1 file." in out
    assert check(f"{project / 'model.py'}:target", ("lazy",), isolate=False).findings == []


def test_wrong_fix_is_rolled_back(project: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    import cslint.fixers.where as where

    def swapped(torch: str, test: cst.BaseExpression, a: cst.BaseExpression, b: cst.BaseExpression) -> cst.Call:
        return cst.Call(func=cst.Attribute(value=cst.Name(torch), attr=cst.Name("where")),
                        args=[cst.Arg(test), cst.Arg(b), cst.Arg(a)])  # deliberately wrong: branches swapped
    monkeypatch.setattr(where, "_where", swapped)
    code, out, err = _run(capsys, "check", str(project / "model.py"), "--fix", "--verify")
    assert (project / "model.py").read_text() == MODEL
    assert "not written: model.py:12 WSC101: model.py:target: the outputs changed" in err
    assert err.rstrip().endswith("cslint: --verify: no fix written")
    assert code == 1 and "Fixed" not in out


def test_fixed_code_that_fails_to_import_is_rolled_back_and_exit_code_is_true(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    only_when_fixed = '\nif "torch." + "where(" in open(__file__).read():  # only the fixed text has it\n'
    fails = '    raise ImportError("the fixed code cannot be imported")\n'
    (project / "model.py").write_text(MODEL + only_when_fixed + fails)
    original = (project / "model.py").read_text()
    code, out, err = _run(capsys, "check", str(project / "model.py"), "--fix", "--verify")
    assert (project / "model.py").read_text() == original
    assert "the runtime run after fixing did not complete" in err and "cannot be imported" in err
    assert code == 1
    assert "Fixed" not in out and "All checks passed" not in out
    assert f"{project / 'model.py'}:12:12: WSC101" in out  # the line on disk, not a line of unwritten text


def test_fix_the_runtime_never_reached_is_not_kept_and_the_verified_one_is(
        project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "model.py").write_text(MODEL + UNREACHED)
    code, out, err = _run(capsys, "check", str(project / "model.py"), "--fix", "--verify")
    written = (project / "model.py").read_text()
    assert written.count("torch.where") == 1 and "if x.sum() > 0:" in written  # Gate's fix only
    assert written == MODEL.replace(GATE_IF, GATE_WHERE) + UNREACHED
    unseen = [line for line in err.splitlines() if "never saw" in line]
    assert len(unseen) == 1 and unseen[0].startswith("cslint: --verify: not written: model.py:25 WSC101: ")
    assert "model.py:target: runtime findings 1 -> 0, outputs allclose (lazy); 1 of 2 fixes kept" in err
    assert code == 1 and out.count("WSC101") == 1 and "Fixed 1 finding" in out


def test_the_users_file_is_never_written_while_verifying(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    (project / "model.py").write_text(MODEL + SPY)
    original = (project / "model.py").read_text()
    spy = project / "spy.log"
    monkeypatch.setenv("CSLINT_TEST_SPY", str(spy))
    monkeypatch.setenv("CSLINT_TEST_USER_FILE", str(project / "model.py"))
    code, _, _ = _run(capsys, "check", str(project / "model.py"), "--fix", "--verify")
    seen = spy.read_text().splitlines()
    assert len(seen) >= 2 and all(eval(text) == original for text in seen)
    assert code == 0 and "torch.where" in (project / "model.py").read_text()


def test_an_edit_made_during_verification_is_not_overwritten(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    user_file = project / "model.py"
    stat = user_file.stat()
    runs = []

    def edit_while_running(target: str, backends: tuple[str, ...] = ("lazy",), **kwargs: object) -> RuntimeReport:
        runs.append(target)
        if len(runs) == 2:  # the user saves an edit; the modification time is kept (as `cp -p` would)
            user_file.write_text(MODEL.replace("h * 2", "h * 3"))
            os.utime(user_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        return _in_process(target, backends)
    monkeypatch.setattr("cslint.runtime.verify.check", edit_while_running)
    code, _, err = _run(capsys, "check", str(user_file), "--fix", "--verify")
    assert user_file.read_text() == MODEL.replace("h * 2", "h * 3")
    assert "changed on disk" in err and code == 1


@pytest.mark.parametrize("argv, message", [
    (["--verify"], "use it with --fix"),
    (["--verify", "--diff"], "use it with --fix"),
    (["--verify-tolerance", "1e-3"], "--verify-tolerance needs --verify"),
])
def test_verify_without_fix_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str],
                                             argv: list[str], message: str) -> None:
    code, out, err = _run(capsys, "check", str(project / "model.py"), *argv)
    assert code == 2 and message in err and out == ""
    assert (project / "model.py").read_text() == MODEL


def test_verify_without_runtime_targets_is_a_usage_error(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "pyproject.toml").write_text("[tool.cslint]\n")
    code, out, err = _run(capsys, "check", str(project / "model.py"), "--fix", "--verify")
    assert code == 2 and "--verify needs `runtime-targets`" in err and out == ""
    assert (project / "model.py").read_text() == MODEL


def test_verify_without_torch_is_a_usage_error(project: Path, monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("cslint.runtime.verify.torch_available", lambda: False)
    code, out, err = _run(capsys, "check", str(project / "model.py"), "--fix", "--verify")
    assert code == 2 and "needs PyTorch" in err and out == ""
    assert (project / "model.py").read_text() == MODEL


def test_kill_during_verification_leaves_the_users_file_untouched(tmp_path: Path) -> None:
    """A real run in child processes: the target's second run (the fixed code) signals and waits; the
    whole cslint process group is then killed with SIGKILL."""
    waiting = tmp_path / "waiting"
    (tmp_path / "pyproject.toml").write_text('[tool.cslint]\nruntime-targets = ["model.py:target"]\n')
    (tmp_path / "model.py").write_text(MODEL + textwrap.dedent(f'''

        import time as _time
        if "torch." + "where(" in open(__file__).read():  # only the fixed text has it
            open({str(waiting)!r}, "w").close()
            _time.sleep(120)
    '''))
    original = (tmp_path / "model.py").read_text()
    env = dict(os.environ, CSLINT_NO_CACHE="1", CSLINT_NO_SERVER="1")
    process = subprocess.Popen([sys.executable, "-m", "cslint", "check", "model.py", "--fix", "--verify"],
                               cwd=tmp_path, env=env, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 240
        while not waiting.exists() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert waiting.exists(), "the fixed code never ran"
        assert (tmp_path / "model.py").read_text() == original
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert (tmp_path / "model.py").read_text() == original
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".cslint-tmp")]


def test_incomplete_runs_prove_nothing() -> None:
    complete = RuntimeReport("t", status={"lazy": COMPLETE, "dynamo": COMPLETE})
    assert incomplete(complete) is None
    assert incomplete(RuntimeReport("t")) == "no backend ran"
    failed = RuntimeReport("t", error="Traceback...\nValueError: fails here", status={"lazy": COMPLETE})
    assert "fails here" in (incomplete(failed) or "")
    halfway = RuntimeReport("t", status={"lazy": stopped("RuntimeError: no op", "m.py", 7), "dynamo": COMPLETE})
    assert incomplete(halfway) == "lazy stopped at m.py:7 (RuntimeError: no op)"
    assert incomplete(RuntimeReport("t", status={"lazy": COMPLETE, "dynamo": TIMED_OUT})) == "dynamo timed out"


def test_original_lines_follow_inserted_and_replaced_lines() -> None:
    back = original_lines("a\nb\nc\n", "import torch\na\nB\nc\n")
    assert list(back(2)) == [1] and list(back(3)) == [2] and list(back(4)) == [3]


def test_outputs_differ_uses_the_tolerance() -> None:
    assert outputs_differ([[1.0, 2.0]], [[1.0, 2.0 + 1e-9]], 1e-5) is None
    assert "largest difference" in (outputs_differ([[1.0, 2.0]], [[1.0, 2.5]], 1e-5) or "")
    assert "structure" in (outputs_differ([[1.0]], [[1.0, 2.0]], 1e-5) or "")


def _waiting_project(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """A project whose target, run from the verification's copy, signals and waits; its own temporary
    directory (TMPDIR), to see what cslint leaves there."""
    project, scratch = tmp_path / "project", tmp_path / "tmp"
    project.mkdir()
    scratch.mkdir()
    waiting = tmp_path / "waiting"
    (project / "pyproject.toml").write_text('[tool.cslint]\nruntime-targets = ["model.py:target"]\n')
    (project / "model.py").write_text(MODEL + textwrap.dedent(f'''

        import os as _os
        import time as _time
        with open({str(waiting)!r}, "w") as _waiting:
            _waiting.write(str(_os.getpid()))
        _time.sleep(120)
    '''))
    env = dict(os.environ, CSLINT_NO_CACHE="1", CSLINT_NO_SERVER="1", TMPDIR=str(scratch))
    return project, waiting, env


def _start_verify(project: Path, waiting: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    process = subprocess.Popen([sys.executable, "-m", "cslint", "check", "model.py", "--fix", "--verify"],
                               cwd=project, env=env, start_new_session=True, preexec_fn=as_on_a_terminal,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not (waiting.exists() and waiting.read_text()) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert waiting.exists(), "the target never ran"
    return process


def _gone(pid: int, seconds: float = 10) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def _scratch(directory: Path) -> list[str]:
    return sorted(p.name.rsplit("-", 1)[0] for p in directory.iterdir())


def test_scratch_of_a_killed_verify_is_removed_by_the_next_run(tmp_path: Path) -> None:
    """kill -9 during `--fix --verify` leaves the project's copy and the runtime checker's directory; the
    next run removes them, and keeps a live run's scratch and anything not cslint's own."""
    project, waiting, env = _waiting_project(tmp_path)
    scratch = Path(env["TMPDIR"])
    killed = _start_verify(project, waiting, env)
    live = subprocess.Popen([sys.executable, "-c", "import time; from cslint.support.scratch import scratch_directory\n"
                             "with scratch_directory('cslint-runtime-') as path:\n"
                             "    print(path, flush=True); time.sleep(60)"],
                            env=env, stdout=subprocess.PIPE, text=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    not_ours = [scratch / "cslint-verify-unmarked", scratch / "cslint-verify-symlink1", scratch / "other"]
    try:
        assert live.stdout is not None
        kept = Path(live.stdout.readline().strip())  # it swept the temporary directory: the verify ran on
        assert _scratch(scratch) == ["cslint-runtime", "cslint-runtime", "cslint-verify"]
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait()
        assert _gone(int(waiting.read_text())), "the target's process outlived the killed cslint"
        left = [p for p in scratch.iterdir() if p != kept]
        assert (next(scratch.glob("cslint-verify-*")) / "project" / "model.py").exists()  # what kill -9 leaves
        not_ours[0].mkdir()  # no marker: kept while younger than any cslint process takes to write one
        not_ours[1].symlink_to(elsewhere, target_is_directory=True)
        (elsewhere / ".cslint-scratch").write_text('{"pid": 999999999}')
        not_ours[2].mkdir()
        plain = subprocess.run([sys.executable, "-m", "cslint", "check", "--isolated", "model.py"], cwd=project,
                               env=env, capture_output=True, text=True, timeout=120)
        assert plain.returncode in (0, 1) and "Traceback" not in plain.stderr
        assert not any(p.exists() for p in left) and kept.is_dir() and elsewhere.is_dir()
        assert sorted(p.name for p in scratch.iterdir()) == sorted([kept.name] + [p.name for p in not_ours])
    finally:
        live.kill()
        live.wait()


@pytest.mark.parametrize("ending", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminated_verify_removes_its_scratch(tmp_path: Path, ending: signal.Signals) -> None:
    project, waiting, env = _waiting_project(tmp_path)
    original = (project / "model.py").read_text()
    process = _start_verify(project, waiting, dict(env, PYTHONFAULTHANDLER="1"))
    try:
        process.send_signal(ending)
        try:
            _, err = process.communicate(timeout=120)
        except subprocess.TimeoutExpired:  # where it is stuck: faulthandler prints every thread's stack on SIGABRT
            process.send_signal(signal.SIGABRT)
            _, err = process.communicate(timeout=30)
            pytest.fail(f"cslint did not end within 120 s of {ending.name}:\n{err.decode(errors='replace')}")
    finally:
        with contextlib.suppress(ProcessLookupError):  # the target's process went with cslint
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130 and err.decode().endswith("cslint: interrupted\n")
    assert _gone(int(waiting.read_text()))
    assert list(Path(env["TMPDIR"]).iterdir()) == []
    assert (project / "model.py").read_text() == original
