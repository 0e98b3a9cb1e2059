"""--fix never loses an edit, never rewrites a read-only file, never leaves temporary files; output
never hands the terminal raw control characters from the analysed repository."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cslint.core.sources import ReadError, read_source, write_atomically
from tests.samples import FIXED_LINE, TENSOR_BRANCH as BAD


def cslint(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CSLINT_NO_SERVER": "1"}
    proc = subprocess.run([sys.executable, "-m", "cslint", "check", "--no-cache", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, env=env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def test_edit_that_keeps_the_mtime_is_not_overwritten(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    source = read_source(path)
    source.text = BAD.replace("y = x * 2", FIXED_LINE.strip())
    edited = tmp_path / "edited.py"  # the user's edit, copied in with `cp -p`: same size class, same mtime
    edited.write_text(BAD.replace("x * 2", "x * 3"))
    os.utime(edited, ns=(source.mtime_ns, source.mtime_ns))
    subprocess.run(["cp", "-p", str(edited), str(path)], check=True)
    assert path.stat().st_mtime_ns == source.mtime_ns
    with pytest.raises(ReadError, match="changed on disk"):
        write_atomically(source)
    assert path.read_text() == BAD.replace("x * 2", "x * 3")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edited.py", "m.py"]


def test_read_only_file_is_reported_and_left_alone(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    path.chmod(0o444)
    proc = cslint("--fix", str(path))
    assert proc.returncode == 2
    assert f"cslint: error: {path}: cannot write fix: read-only file; fix not written" in proc.stderr
    assert path.read_text() == BAD
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


def test_fix_writes_through_a_temporary_file_and_keeps_the_mode(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    path.chmod(0o640)
    proc = cslint("--fix", str(path))
    assert proc.returncode == 0, proc.stderr
    assert FIXED_LINE in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["m.py"]


def test_temporary_files_of_a_killed_run_are_removed_by_the_next(tmp_path):
    (tmp_path / "m.py").write_text(BAD)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process id that no longer runs: the writer was killed with -9
    stale = tmp_path / f".m.py.{dead.pid}.k2j4_x.cslint-tmp"
    stale.write_text(BAD[:40])
    old = tmp_path / f".m.py.{os.getpid()}.abc123.cslint-tmp"  # a live process id, but an hour old
    old.write_text(BAD[:40])
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    live = tmp_path / f".m.py.{os.getpid()}.zz9.cslint-tmp"  # another run writing right now
    live.write_text(BAD[:40])
    users = tmp_path / "notes.cslint-tmp"  # not of cslint's naming: never touched
    users.write_text("mine")
    proc = cslint("--output-format", "concise", str(tmp_path))
    assert proc.returncode == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([live.name, "m.py", "notes.cslint-tmp"])


def test_cr_only_file_keeps_its_final_newline(tmp_path):
    path = tmp_path / "m.py"
    path.write_bytes(BAD.replace("\n", "\r").encode())
    proc = cslint("--fix", str(path))
    assert proc.returncode == 0, proc.stderr
    data = path.read_bytes()
    assert data.endswith(b"        return y\r")
    assert FIXED_LINE.encode() + b"\r" in data and b"\n" not in data


@pytest.mark.parametrize("form", ["text", "concise", "grouped", "github"])
def test_control_characters_never_reach_the_terminal(tmp_path, form):
    # a file name with a newline would forge a report line; an escape sequence in source would act
    directory = tmp_path / "evil\nfake.py:1:1: WSC101 all good"
    directory.mkdir()
    source = BAD.replace("if x.max() > 0:", "if x.max() > 0:  # \x1b]0;owned\x07\x1b[2J\u202e")
    (directory / "m\x1b[31m.py").write_text(source)
    proc = cslint("--output-format", form, "--show-chain", str(tmp_path))
    assert proc.returncode == 1
    assert "\x1b" not in proc.stdout + proc.stderr and "\x07" not in proc.stdout and "\u202e" not in proc.stdout
    forged = [line for line in proc.stdout.splitlines() if line.startswith("fake.py")]
    assert not forged, proc.stdout
    newline = "%0A" if form == "github" else "\\n"  # GitHub's own escape in workflow commands
    assert f"evil{newline}fake.py" in proc.stdout and "m\\x1b[31m.py" in proc.stdout
    if form == "text":
        assert "\\x1b]0;owned\\x07\\x1b[2J\\u202e" in proc.stdout


def test_fix_never_writes_through_a_link_to_a_file_outside(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim.py"
    victim.write_text(BAD)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[tool.cslint]\n")
    (repo / "link.py").symlink_to(victim)
    proc = cslint("--fix", ".", cwd=repo)
    assert proc.returncode == 2
    assert ("cslint: error: link.py: cannot write fix: a symbolic link to a file outside the paths checked; "
            "fix not written") in proc.stderr
    assert victim.read_text() == BAD


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """A repository holding `m.py` and `link.py -> m.py`: both in scope."""
    (tmp_path / "pyproject.toml").write_text("[tool.cslint]\n")
    (tmp_path / "m.py").write_text(BAD)
    (tmp_path / "link.py").symlink_to("m.py")
    return tmp_path


@pytest.mark.parametrize("named", [["."], ["m.py", "link.py"], ["link.py", "m.py"]])
def test_a_link_and_its_target_are_both_reported(linked: Path, named: list[str]) -> None:
    """As ruff reports every path it discovers: the finding under the link's name and under the target's
    (before, the walk kept one name per real file: only `link.py`)."""
    proc = cslint("--output-format", "concise", *named, cwd=linked)
    assert proc.returncode == 1
    found = [line.split(":")[0] for line in proc.stdout.splitlines() if ": WSC" in line]
    assert sorted(found) == ["link.py", "m.py"]
    assert "in 2 files checked" in proc.stdout
    shown = cslint("--show-files", ".", cwd=linked)
    assert shown.stdout.splitlines() == [str(linked / "link.py"), str(linked / "m.py")]


@pytest.mark.parametrize("named", [["."], ["link.py", "m.py"]])
def test_fix_writes_a_linked_file_once_and_keeps_the_link(linked: Path, named: list[str]) -> None:
    proc = cslint("--fix", "--output-format", "concise", *named, cwd=linked)
    assert proc.returncode == 0, proc.stderr
    assert (linked / "link.py").is_symlink() and os.readlink(linked / "link.py") == "m.py"
    assert FIXED_LINE.strip() in (linked / "m.py").read_text()
    assert (linked / "m.py").read_text().count(FIXED_LINE.strip()) == 1
    assert "cannot write" not in proc.stderr
    assert sorted(p.name for p in linked.iterdir()) == ["link.py", "m.py", "pyproject.toml"]



def test_fix_of_a_link_and_its_target_in_one_run_writes_the_file_once(linked: Path) -> None:
    """Both names changed in one run (as an analysis that fixes each reported path would give them): the
    file is written once, and the second name is neither an error nor a second write."""
    from cslint.engine.fix_writing import write_fixes
    from cslint.core.run_result import RunResult

    sources = [read_source(linked / name) for name in ("link.py", "m.py")]
    for source in sources:
        source.text = BAD.replace("        if x.max() > 0:\n            y = x * 2\n        else:\n            y = x\n",
                                  FIXED_LINE + "\n")
    result = RunResult(changed_files=sources)
    write_fixes(result, lambda *_: RunResult(), [], False, [linked])
    assert result.errors == []
    assert (linked / "m.py").read_text() == sources[0].text and (linked / "link.py").is_symlink()
