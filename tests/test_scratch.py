"""Scratch directories of killed runs are removed by the next run; nothing else in the temporary directory
is (cslint/support/scratch.py). The kill -9 of a real `--fix --verify` is in tests/runtime/test_verify.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from cslint.support.scratch import MARKER, UNMARKED_STALE_SECONDS, _start_time, remove_stale, scratch_directory


def _marked(directory: Path, name: str, marker: object) -> Path:
    path = directory / name
    path.mkdir()
    (path / MARKER).write_text(json.dumps(marker))
    (path / "copy.py").write_text("x = 1\n")
    return path


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_only_scratch_whose_creator_is_gone_is_removed(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    me, started = os.getpid(), _start_time(os.getpid())
    gone = _marked(tmp_path, "cslint-verify-aaaaaaaa", {"pid": int(dead.stdout), "started": 1})
    reused = _marked(tmp_path, "cslint-runtime-bbbbbbbb", {"pid": me, "started": (started or 0) + 1})
    live = _marked(tmp_path, "cslint-verify-cccccccc", {"pid": me, "started": started})
    unmarked_old = tmp_path / "cslint-indexes-dddddddd"
    unmarked_old.mkdir()
    _age(unmarked_old, UNMARKED_STALE_SECONDS + 60)
    unmarked_new = tmp_path / "cslint-indexes-eeeeeeee"
    unmarked_new.mkdir()
    fifo_marker = tmp_path / "cslint-verify-ffffffff"  # a marker that is a FIFO is not read (nor waited on)
    fifo_marker.mkdir()
    os.mkfifo(fifo_marker / MARKER)
    foreign = _marked(tmp_path, "cslint-verify-other", {"pid": int(dead.stdout)})  # not mkdtemp's naming
    elsewhere = _marked(tmp_path, "elsewhere", {"pid": int(dead.stdout)})
    link = tmp_path / "cslint-verify-gggggggg"
    link.symlink_to(elsewhere, target_is_directory=True)
    removed = remove_stale(str(tmp_path))
    assert sorted(removed) == sorted([gone.name, unmarked_old.name] + ([reused.name] if started else []))
    assert live.is_dir() and unmarked_new.is_dir() and fifo_marker.is_dir() and foreign.is_dir()
    assert link.is_symlink() and (elsewhere / "copy.py").exists()


def test_scratch_is_removed_on_an_exception(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    try:
        with scratch_directory("cslint-verify-") as path:
            assert json.loads((Path(path) / MARKER).read_text())["pid"] == os.getpid()
            raise ValueError("a bug")
    except ValueError:
        pass
    assert list(tmp_path.iterdir()) == []
