"""cslint writes and deletes only its own files, in a cache directory it created and owns.

A repository can ship `.cslint_cache` as a symbolic link to a directory outside it, and `--cache-dir` /
`CSLINT_CACHE_DIR` can name a directory that holds other files: `cslint check` must not write there and
`cslint clean` must not empty it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

BAD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return x
"""
OTHER_UID = 12345


def cslint(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean_env = {k: v for k, v in os.environ.items() if k not in ("CSLINT_CACHE_DIR",)}
    return subprocess.run([sys.executable, "-m", "cslint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env={**clean_env, **env})


def snapshot(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (root / "model.py").write_text(BAD)
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory of the user's own files, outside the repository."""
    somewhere = tmp_path / "somewhere"
    somewhere.mkdir()
    (somewhere / "notes.txt").write_text("my notes\n")
    (somewhere / "v0.1.0-aaaaaaaaaaaaaaaaaaaaaaaa.json").write_text("not cslint's, only named like it\n")
    (somewhere / "keep").mkdir()
    (somewhere / "keep" / "data.bin").write_bytes(b"\0" * 10)
    return somewhere


def assert_reported(run: subprocess.CompletedProcess[str]) -> None:
    assert run.returncode == 1 and "model.py:7:12: WSC101" in run.stdout, run.stdout + run.stderr
    assert "Traceback" not in run.stderr


def test_a_symlinked_cache_directory_is_neither_written_nor_emptied(repo: Path, outside: Path) -> None:
    (repo / ".cslint_cache").symlink_to(os.path.relpath(outside, repo))
    before = snapshot(outside)
    run = cslint(repo, "check", ".")
    assert_reported(run)
    warnings = [line for line in run.stderr.splitlines() if "cache" in line]
    assert len(warnings) == 1 and "symbolic link" in warnings[0], run.stderr
    assert snapshot(outside) == before

    cleaned = cslint(repo, "clean")
    assert cleaned.returncode == 2 and "symbolic link" in cleaned.stderr, cleaned.stderr
    assert "Traceback" not in cleaned.stderr
    assert snapshot(outside) == before and (repo / ".cslint_cache").is_symlink()


@pytest.mark.parametrize("how", ["option", "environment"])
def test_a_directory_of_other_files_is_not_used_or_emptied(repo: Path, outside: Path, how: str) -> None:
    before = snapshot(outside)
    args, env = (["--cache-dir", str(outside)], {}) if how == "option" else ([], {"CSLINT_CACHE_DIR": str(outside)})
    run = cslint(repo, "check", *args, ".", **env)
    assert_reported(run)
    assert "not using the cache" in run.stderr and "other files" in run.stderr, run.stderr
    assert snapshot(outside) == before

    cleaned = cslint(repo, "clean", *args, **env)
    assert cleaned.returncode == 2 and "other files" in cleaned.stderr, cleaned.stderr
    assert snapshot(outside) == before


def test_clean_removes_only_cslint_files(repo: Path) -> None:
    first = cslint(repo, "check", ".")
    assert_reported(first)
    cache = repo / ".cslint_cache"
    assert any(cache.glob("v*.json"))
    (cache / "mine.txt").write_text("put here by the user\n")
    cleaned = cslint(repo, "clean")
    assert cleaned.returncode == 0 and "Removed 3 cache files " in cleaned.stderr, cleaned.stderr  # report, both memos
    assert sorted(p.name for p in cache.iterdir()) == [".gitignore", "mine.txt"]  # still cslint's directory

    (cache / "mine.txt").unlink()
    assert_reported(cslint(repo, "check", "."))
    assert cslint(repo, "clean").returncode == 0
    assert not cache.exists()  # nothing but cslint's files: the directory goes too


def test_a_new_cache_directory_is_created_and_used(repo: Path, tmp_path: Path) -> None:
    directory = tmp_path / "fresh" / "cache"
    first = cslint(repo, "check", "--cache-dir", str(directory), "--profile", ".")
    assert_reported(first)
    assert "warning" not in first.stderr, first.stderr
    second = cslint(repo, "check", "--cache-dir", str(directory), "--profile", ".")
    assert_reported(second)
    assert "reports reused from the cache: 1" in second.stderr, second.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_cache_directory_owned_by_another_user_is_not_used(repo: Path) -> None:
    assert_reported(cslint(repo, "check", "."))
    cache = repo / ".cslint_cache"
    for path in (cache, *cache.iterdir()):
        os.chown(path, OTHER_UID, OTHER_UID)
    before = snapshot(cache)
    (repo / "model.py").write_text(BAD + "\n\nclass Other(nn.Module):\n    def forward(self, x):\n        return x\n")
    run = cslint(repo, "check", ".")
    assert_reported(run)
    assert "not using the cache" in run.stderr and "owned by another user" in run.stderr, run.stderr
    assert snapshot(cache) == before
    cleaned = cslint(repo, "clean")
    assert cleaned.returncode == 2 and "owned by another user" in cleaned.stderr, cleaned.stderr
    assert snapshot(cache) == before


def test_owner_check_with_a_mocked_stat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the tests cannot give a directory away, the ownership check still runs (os.fstat mocked)."""
    from cslint import cache as cache_module

    directory = tmp_path / "cache"
    directory.mkdir()
    real_fstat = os.fstat

    def foreign(fd: int) -> os.stat_result:
        found = list(real_fstat(fd))
        found[4] = os.getuid() + 1  # st_uid
        return os.stat_result(found)

    monkeypatch.setattr(cache_module.os, "fstat", foreign)
    with pytest.raises(cache_module.CacheDirectoryError, match="owned by another user"):
        cache_module.clean(directory)
