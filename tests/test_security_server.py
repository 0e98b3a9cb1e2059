"""The hook server cannot be taken over, cannot hang a hook run, and cannot outlive its client's wishes.

Real sockets and processes: another user's server (a directory, or a listening process, owned by another
uid; the tests run as root where they can give them away), a stopped server, a client that trickles its
request, the client's umask and limits, and Ctrl-C on a `--server --fix` run.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cslint.server.address import code_fingerprint
from cslint.server.client import directory_problem
from tests.samples import FIXED_LINE, TENSOR_BRANCH
from tests.signals import as_on_a_terminal
from tests.test_precommit import HELPER, MODEL
from tests.test_server import start_server, status

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX") or not hasattr(os, "fork"),
                                reason="the server needs Unix sockets and fork")
OTHER_UID = 12345
CSLINT = [sys.executable, "-m", "cslint"]  # the same interpreter as here: the same server address

FAKE_SERVER = """\
import json, os, socket, sys
path, record, uid = sys.argv[1], sys.argv[2], int(sys.argv[3])
out = open(record, "wb", buffering=0)
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path)
os.chmod(path, 0o777)
if uid != os.getuid():
    os.setgid(uid)
    os.setuid(uid)  # the credentials a client sees are those of listen()
listener.listen(8)
print("up", flush=True)
while True:
    connection, _ = listener.accept()
    out.write(connection.recv(1 << 20))
    connection.sendall(b'{"ready": 1}\\n{"exit": 0}\\n{"exit": 0}\\n')
    connection.close()
"""


@pytest.fixture
def env(tmp_path: Path) -> Iterator[dict[str, str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "CSLINT_NO_SERVER", "CSLINT_CACHE_DIR")}
    env.update(CSLINT_SERVER_DIR=str(tmp_path / "run"), CSLINT_SERVER_IDLE="120", SECRET_TOKEN="hunter2")
    yield env
    cslint(env, tmp_path, "server", "stop")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / "helpers.py").write_text(HELPER)
    (root / "model.py").write_text(MODEL)
    return root


def cslint(env: dict[str, str], cwd: Path, *args: str, timeout: float = 120,
           **popen: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CSLINT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          **popen)  # type: ignore[call-overload]


def server_dir(env: dict[str, str]) -> Path:
    return Path(env["CSLINT_SERVER_DIR"]) / f"cslint-{os.getuid()}"


def assert_local_report(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 1 and "helpers.py:5:8: WSC101" in run.stdout, run.stdout + run.stderr
    assert "Traceback" not in run.stderr


def fake_server(env: dict[str, str], tmp_path: Path, uid: int) -> tuple[subprocess.Popen[bytes], Path]:
    """A server that records what it is sent and answers "all passed", listening where ours would."""
    record = tmp_path / "received"
    path = server_dir(env) / f"{code_fingerprint()}.sock"
    process = subprocess.Popen([sys.executable, "-c", FAKE_SERVER, str(path), str(record), str(uid)],
                               stdout=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.readline() == b"up\n", "the fake server did not start"
    return process, record


root_only = pytest.mark.skipif(os.geteuid() != 0, reason="making files of another user needs root")


@root_only
@pytest.mark.parametrize("owner, mode", [(OTHER_UID, 0o700), ("self", 0o755)], ids=["other-user", "open-mode"])
def test_nothing_goes_to_a_server_directory_that_is_not_ours(env: dict[str, str], project: Path, tmp_path: Path,
                                                            owner: object, mode: int) -> None:
    directory = server_dir(env)
    directory.mkdir(parents=True, mode=mode)
    directory.chmod(mode)
    server, record = fake_server(env, tmp_path, os.getuid())
    try:
        if owner != "self":
            os.chown(directory, OTHER_UID, OTHER_UID)
        run = cslint(env, project, "check", "--server", "--project-context", "helpers.py")
    finally:
        server.kill()
        server.wait()
    assert_local_report(run)
    assert "not using the server" in run.stderr, run.stderr
    assert record.read_bytes() == b""


def test_directory_check_with_a_mocked_stat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where a directory cannot be given away, the owner check still runs (os.lstat mocked)."""
    from cslint.server import client

    directory = tmp_path / "cslint-0"
    directory.mkdir(mode=0o700)
    assert directory_problem(str(directory)) is None
    real = os.lstat

    def foreign(path: object, *args: object, **kwargs: object) -> os.stat_result:
        found = list(real(path, *args, **kwargs))  # type: ignore[arg-type]
        found[stat.ST_UID] = os.getuid() + 1
        return os.stat_result(found)

    monkeypatch.setattr(client.os, "lstat", foreign)
    assert "owned by another user" in (directory_problem(str(directory)) or "")
    monkeypatch.undo()
    link = tmp_path / "link"
    link.symlink_to(directory)
    assert "not a directory" in (directory_problem(str(link)) or "")


@root_only
def test_nothing_goes_to_a_server_run_by_another_user(env: dict[str, str], project: Path, tmp_path: Path) -> None:
    server_dir(env).mkdir(parents=True, mode=0o700)
    server, record = fake_server(env, tmp_path, OTHER_UID)
    try:
        run = cslint(env, project, "check", "--server", "--project-context", "helpers.py")
    finally:
        server.kill()
        server.wait()
    assert_local_report(run)
    assert "runs as another user" in run.stderr, run.stderr
    assert record.read_bytes() == b""


def test_a_stopped_server_does_not_hang_the_hook(env: dict[str, str], project: Path) -> None:
    started = start_server(env, project)
    os.kill(int(started["pid"]), signal.SIGSTOP)
    try:
        begun = time.monotonic()
        run = cslint(env, project, "check", "--server", "--project-context", "helpers.py", timeout=90)
        assert time.monotonic() - begun < 60
    finally:
        os.kill(int(started["pid"]), signal.SIGCONT)
    assert_local_report(run)


def test_a_client_that_trickles_its_request_does_not_hold_the_server(env: dict[str, str], project: Path) -> None:
    start_server(env, project)
    path = server_dir(env) / f"{code_fingerprint()}.sock"
    stop = threading.Event()

    def trickle() -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(str(path))
            for byte in b"00000100" + b" " * 100:
                if stop.wait(1.0):
                    return
                try:
                    connection.send(bytes([byte]))
                except OSError:
                    return

    slow = threading.Thread(target=trickle)
    slow.start()
    try:
        time.sleep(0.5)
        run = cslint(env, project, "check", "--server", "--project-context", "helpers.py", timeout=90)
    finally:
        stop.set()
        slow.join()
    assert_local_report(run)
    assert status(env, project)["served"] == "1"  # served, once the trickling client was dropped


def test_the_served_run_takes_the_client_umask_and_limits(env: dict[str, str], project: Path) -> None:
    start_server(env, project)  # started by a client with the usual umask

    def private() -> None:
        os.umask(0o077)

    run = cslint(env, project, "check", "--server", "--project-context", "helpers.py", preexec_fn=private)
    assert_local_report(run)
    cache = project / ".cslint_cache"
    deadline = time.monotonic() + 30
    while not list(cache.glob("v*.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    assert [stat.S_IMODE(p.stat().st_mode) for p in cache.glob("v*.json")] == [0o600]

    def small_files() -> None:  # the cache file is larger: a run with this limit writes none
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, resource.getrlimit(resource.RLIMIT_FSIZE)[1]))

    other = project.parent / "other"
    other.mkdir()
    for name in ("pyproject.toml", "helpers.py", "model.py"):
        (other / name).write_text((project / name).read_text())
    limited = cslint(env, other, "check", "--server", "--project-context", "helpers.py", preexec_fn=small_files)
    assert_local_report(limited)
    time.sleep(3)
    assert status(env, project)["served"] == "2"
    assert not list((other / ".cslint_cache").glob("v*.json"))


# Loaded at start-up by every Python of the test's environment, so also by the server and its forked child:
# the run waits just before it would write its fixes, until the test lets it go (deterministic, however
# fast the machine).
HOLD_BEFORE_WRITES = """\
import os, time
from pathlib import Path

hold = os.environ.get("CSLINT_TEST_HOLD")
if hold:
    import cslint.engine.fix_writing

    write_fixes = cslint.engine.fix_writing.write_fixes

    def held(*args, **kwargs):
        Path(hold, "reached").write_text(str(os.getpid()))
        while not Path(hold, "release").exists():
            time.sleep(0.02)
        return write_fixes(*args, **kwargs)

    cslint.engine.fix_writing.write_fixes = held
"""


def test_ctrl_c_on_a_served_fix_cancels_it_before_any_write(env: dict[str, str], project: Path,
                                                             tmp_path: Path) -> None:
    hooks, hold = tmp_path / "hooks", tmp_path / "hold"
    hooks.mkdir()
    hold.mkdir()
    (hooks / "sitecustomize.py").write_text(HOLD_BEFORE_WRITES)
    env = {**env, "PYTHONPATH": str(hooks), "CSLINT_TEST_HOLD": str(hold)}
    start_server(env, project)
    before = {p: p.read_bytes() for p in project.iterdir() if p.is_file()}
    client = subprocess.Popen([*CSLINT, "check", "--server", "--fix", "--no-cache", "model.py", "helpers.py"],
                              cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              preexec_fn=as_on_a_terminal)
    deadline = time.monotonic() + 60
    while not (hold / "reached").exists():  # the analysis is done and the fixes are about to be written
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.05)
    assert status(env, project)["served"] == "1", "the run was not served"
    client.send_signal(signal.SIGINT)
    out, err = client.communicate(timeout=60)
    (hold / "release").write_text("")
    assert client.returncode == 130, out + err  # interrupted, not finished
    assert "Traceback" not in err and "interrupted" in err
    deadline = time.monotonic() + 120
    while running(env, project):  # the child has ended
        assert time.monotonic() < deadline
        time.sleep(0.2)
    assert {p: p.read_bytes() for p in project.iterdir() if p.is_file()} == before
    # without the interrupt the same run writes its fixes: the test above could have seen a write
    (hold / "reached").unlink()
    done = cslint(env, project, "check", "--server", "--fix", "--no-cache", "model.py", "helpers.py")
    assert "Fixed" in done.stdout + done.stderr and done.returncode in (0, 1), done.stdout + done.stderr
    assert {p: p.read_bytes() for p in project.iterdir() if p.is_file()} != before


def test_interrupt_during_the_writes_lets_them_finish(tmp_path: Path) -> None:
    """Ctrl-C once the fixed files are being written: every file is written, then the run ends as
    interrupted (130), never with some files fixed and others not."""
    hooks, hold = tmp_path / "hooks", tmp_path / "hold"
    hooks.mkdir()
    hold.mkdir()
    (hooks / "sitecustomize.py").write_text(HOLD_IN_THE_WRITES)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for i in range(3):
        (project / f"model_{i}.py").write_text(TENSOR_BRANCH)
    env = {**os.environ, "PYTHONPATH": str(hooks), "CSLINT_TEST_HOLD": str(hold), "CSLINT_NO_SERVER": "1"}
    client = subprocess.Popen([*CSLINT, "check", "--fix", "--no-cache", "."], cwd=project, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=as_on_a_terminal)
    deadline = time.monotonic() + 60
    while not (hold / "reached").exists():  # the first file is written, the others not yet
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.05)
    client.send_signal(signal.SIGINT)
    time.sleep(0.5)
    (hold / "release").write_text("")
    out, err = client.communicate(timeout=60)
    assert client.returncode == 130, out + err
    assert "Traceback" not in err and "interrupted" in err
    assert all(FIXED_LINE in (project / f"model_{i}.py").read_text() for i in range(3))


HOLD_IN_THE_WRITES = """\
import os, time
from pathlib import Path

hold = os.environ.get("CSLINT_TEST_HOLD")
if hold:
    import cslint.core.sources

    write = cslint.core.sources.write_atomically

    def held(source, *args, **kwargs):
        done = write(source, *args, **kwargs)
        if not Path(hold, "reached").exists():
            Path(hold, "reached").write_text(str(source.path))
            while not Path(hold, "release").exists():
                time.sleep(0.02)
        return done

    cslint.core.sources.write_atomically = held
"""


def running(env: dict[str, str], cwd: Path) -> int:
    from cslint.server.client import ask

    previous = os.environ.get("CSLINT_SERVER_DIR")
    os.environ["CSLINT_SERVER_DIR"] = env["CSLINT_SERVER_DIR"]
    deadline = time.monotonic() + 60
    try:
        # a server that is reaping a cancelled child on a loaded machine may take more than one ask's
        # 10 s to answer; one that never answers still fails the test
        answer = ask({"kind": "status"}, timeout=10)
        while answer is None and time.monotonic() < deadline:
            answer = ask({"kind": "status"}, timeout=10)
    finally:
        if previous is None:
            del os.environ["CSLINT_SERVER_DIR"]
        else:
            os.environ["CSLINT_SERVER_DIR"] = previous
    assert answer is not None
    return int(answer["running"])
