"""`cslint check --server`: the background server gives the same report and exit code as a run in the
client's own process, sees every edit, keeps the cache, survives bad requests, and stays out of CI.

Each test starts its own server in a temporary directory (CSLINT_SERVER_DIR) and stops it afterwards.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cslint.server.address import code_fingerprint
from tests.test_precommit import HELPER, MODEL

pytestmark = pytest.mark.skipif(not hasattr(socket, "AF_UNIX") or not hasattr(os, "fork"),
                                reason="the server needs Unix sockets and fork")

FIXED_HELPER = HELPER.replace("""    if logits.abs().max() > limit:
        logits = logits * 0.5
    else:
        logits = logits
""", """    logits = torch.where(logits.abs().max() > limit, logits * 0.5, logits)
""")


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "CSLINT_NO_SERVER", "CSLINT_CACHE_DIR")}
    env.update(CSLINT_SERVER_DIR=str(tmp_path / "run"), CSLINT_SERVER_IDLE="120")
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


def cslint(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cslint", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def status(env: dict[str, str], cwd: Path) -> dict[str, str]:
    """The server's status line as fields, or {} when none is up."""
    out = cslint(env, cwd, "server", "status")
    if out.returncode != 0:
        return {}
    fields = dict(part.split(" ", 1) for part in out.stdout.removeprefix("cslint server: ").split(", "))
    return {"pid": fields["pid"], "served": fields["served"].split()[0]}


def start_server(env: dict[str, str], cwd: Path) -> dict[str, str]:
    """The first `--server` run checks in its own process and starts the server; wait until it answers."""
    first = cslint(env, cwd, "check", "--server", "--no-cache", "model.py")
    assert first.returncode in (0, 1), first.stderr
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = status(env, cwd)
        if found:
            return found
        time.sleep(0.2)
    pytest.fail("the server did not start")


def test_served_run_gives_the_same_report_and_exit_code(env: dict[str, str], project: Path) -> None:
    here = cslint({**env, "CSLINT_NO_SERVER": "1"}, project, "check", "--project-context", "--no-cache",
                  "helpers.py")
    assert here.returncode == 1 and "helpers.py:5:8: WSC101" in here.stdout
    start_server(env, project)

    served = cslint(env, project, "check", "--server", "--project-context", "--no-cache", "helpers.py")
    assert (served.returncode, served.stdout, served.stderr) == (here.returncode, here.stdout, here.stderr)
    assert status(env, project)["served"] == "1"


def test_served_runs_see_every_edit(env: dict[str, str], project: Path) -> None:
    start_server(env, project)
    before = cslint(env, project, "check", "--server", "--project-context", "helpers.py")
    assert before.returncode == 1 and "WSC101" in before.stdout

    (project / "helpers.py").write_text(FIXED_HELPER)
    after = cslint(env, project, "check", "--server", "--project-context", "helpers.py")
    assert after.returncode == 0 and "WSC101" not in after.stdout, after.stdout + after.stderr

    # the caller changes: cap() is no longer traced, so its old branch is fine again
    (project / "helpers.py").write_text(HELPER)
    (project / "model.py").write_text(MODEL.replace("return cap(self.proj(x), 30.0)", "return self.proj(x)"))
    untraced = cslint(env, project, "check", "--server", "--project-context", "helpers.py")
    assert untraced.returncode == 0, untraced.stdout + untraced.stderr
    assert status(env, project)["served"] == "3"


def test_served_fix_writes_the_same_file(env: dict[str, str], project: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(project, copy)
    here = cslint({**env, "CSLINT_NO_SERVER": "1"}, copy, "check", "--fix", "--project-context", "helpers.py")
    start_server(env, project)
    served = cslint(env, project, "check", "--server", "--fix", "--project-context", "helpers.py")
    assert (served.returncode, served.stdout) == (here.returncode, here.stdout)
    assert (project / "helpers.py").read_text() == (copy / "helpers.py").read_text() == FIXED_HELPER


def test_cache_is_written_after_the_reply_and_read_ahead(env: dict[str, str], project: Path) -> None:
    start_server(env, project)
    cache = project / ".cslint_cache"
    first = cslint(env, project, "check", "--server", "--project-context", "helpers.py")
    assert first.returncode == 1
    deadline = time.monotonic() + 30
    while not list(cache.glob("v*.json")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(cache.glob("v*.json")), "the served run wrote no cache"

    profiles = []
    for _ in range(50):  # the server reads the cache ahead once the child has told it which file it used
        again = cslint(env, project, "check", "--server", "--project-context", "helpers.py", "--profile")
        assert again.returncode == 1 and "helpers.py:5:8: WSC101" in again.stdout
        profiles.append(again.stderr)
        if "cache read ahead by the server: 1" in again.stderr:
            break
        time.sleep(0.1)
    assert "cache read ahead by the server: 1" in profiles[-1], profiles[-1]
    assert "reports reused from the cache: 1" in profiles[-1]


def test_errors_come_back_as_from_a_local_run(env: dict[str, str], project: Path) -> None:
    start_server(env, project)
    usage = cslint(env, project, "check", "--server", "--jobs", "0", "helpers.py")
    assert usage.returncode == 2 and "cslint: error: argument -j/--jobs" in usage.stderr
    missing = cslint(env, project, "check", "--server", "nowhere.py")
    local = cslint({**env, "CSLINT_NO_SERVER": "1"}, project, "check", "nowhere.py")
    assert (missing.returncode, missing.stderr) == (local.returncode, local.stderr) and missing.returncode == 2
    assert "Traceback" not in missing.stderr + usage.stderr
    assert status(env, project)["served"] == "2"


def test_broken_requests_do_not_stop_the_server(env: dict[str, str], project: Path) -> None:
    started = start_server(env, project)
    address = Path(env["CSLINT_SERVER_DIR"]) / f"cslint-{os.getuid()}" / f"{code_fingerprint()}.sock"
    for junk in (b"", b"garbage!", b"00000005{}", b"00000002[]", b'00000017{"kind": "check"}'):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.connect(str(address))
            connection.sendall(junk)
    served = cslint(env, project, "check", "--server", "--project-context", "helpers.py")
    assert served.returncode == 1 and "WSC101" in served.stdout
    assert status(env, project) == {"pid": started["pid"], "served": "1"}


def test_a_killed_server_is_replaced(env: dict[str, str], project: Path) -> None:
    started = start_server(env, project)
    os.kill(int(started["pid"]), signal.SIGKILL)  # leaves its socket file behind
    deadline = time.monotonic() + 30
    while status(env, project) and time.monotonic() < deadline:
        time.sleep(0.1)
    replaced = start_server(env, project)
    assert replaced["pid"] != started["pid"]
    served = cslint(env, project, "check", "--server", "--project-context", "helpers.py")
    assert served.returncode == 1 and "WSC101" in served.stdout


def test_stop(env: dict[str, str], project: Path) -> None:
    start_server(env, project)
    stopped = cslint(env, project, "server", "stop")
    assert stopped.returncode == 0 and "stopped the server" in stopped.stderr
    assert status(env, project) == {}
    assert not list((Path(env["CSLINT_SERVER_DIR"]) / f"cslint-{os.getuid()}").glob("*.sock"))


@pytest.mark.parametrize("variable", ["CI", "CSLINT_NO_SERVER"])
def test_no_server_in_ci_or_when_turned_off(env: dict[str, str], project: Path, variable: str) -> None:
    off = {**env, variable: "1"}
    run = cslint(off, project, "check", "--server", "--project-context", "helpers.py")
    assert run.returncode == 1 and "helpers.py:5:8: WSC101" in run.stdout
    time.sleep(1)  # a server started in the background would have created its directory by now
    assert not (Path(env["CSLINT_SERVER_DIR"]) / f"cslint-{os.getuid()}").exists()


def test_fingerprint_follows_the_code(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "rules.py").write_text("A = 1\n")
    before = code_fingerprint(str(package))
    assert code_fingerprint(str(package)) == before
    (package / "rules.py").write_text("A = 22\n")
    assert code_fingerprint(str(package)) != before


@pytest.mark.parametrize("served", [False, True])
def test_a_deleted_working_directory_is_one_line_and_exit_2(env: dict[str, str], project: Path, tmp_path: Path,
                                                            served: bool) -> None:
    """Run from a directory deleted under it (a shell left in a removed checkout), with and without a
    server up: one line and the documented exit code, never a traceback."""
    if served:
        start_server(env, project)
    gone = tmp_path / "gone"
    gone.mkdir()
    run = subprocess.run(["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "$0" -m cslint check --server',
                          sys.executable], env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 2, run.stderr
    assert run.stderr == ("cslint: error: the current directory no longer exists (deleted?): run cslint from an "
                          "existing directory\n")
