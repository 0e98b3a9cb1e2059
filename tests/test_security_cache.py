"""cslint writes and deletes only its own files, in a cache directory it created and owns, and believes
only the cache files it sealed for this user.

A repository can ship `.cslint_cache` as a symbolic link to a directory outside it, and `--cache-dir` /
`CSLINT_CACHE_DIR` can name a directory that holds other files: `cslint check` must not write there and
`cslint clean` must not empty it. A repository can also ship a real `.cslint_cache` (force-added, then
cloned) whose entries say a dirty file is clean, or whose files are links to `/dev/zero` or FIFOs: its
answers must not be believed, and reading it must not hang or exhaust memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bounded import run_bounded

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
    from cslint.store import cache as cache_module

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


# A repository can ship a cache: `git add -f .cslint_cache` and a clone has it, as a real directory owned by
# the user who cloned, holding cslint's marker. It is believed only if this user's cslint sealed it.

def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=a", "-c", "user.email=a@example.com", "-c", "init.defaultBranch=main",
                    *args], cwd=cwd, check=True, capture_output=True, timeout=60)


PEAK_LIMIT_MB = 400  # a run on these few lines takes some 60 MB


def bounded_cslint(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`cslint` with a deadline and a memory cap: a run that hangs, or that reads without end (its peak
    resident memory, from wait4), fails the test. The cap keeps such a run from taking the machine."""
    clean_env = {k: v for k, v in os.environ.items() if k not in ("CSLINT_CACHE_DIR",)}
    bounded = run_bounded([sys.executable, "-m", "cslint", *args], cwd,
                          {**clean_env, "CSLINT_NO_SERVER": "1", **env})
    assert bounded.peak_mb < PEAK_LIMIT_MB, f"peak {bounded.peak_mb:.0f} MB: {bounded.result.stderr[-500:]}"
    return bounded.result


def zero_findings(cache: Path) -> int:
    """Say "no findings" in every entry of the results cache; how many entries said otherwise."""
    import json

    zeroed = 0
    for path in cache.glob("v*.json"):
        data = json.loads(path.read_text())
        for entry in data.get("files", {}).values():
            zeroed += bool(entry.get("diagnostics"))
            entry["diagnostics"] = []
        path.write_text(json.dumps(data))
    return zeroed


@pytest.mark.parametrize("seal", ["as edited", "sealed with another key"])
def test_a_cache_shipped_in_a_clone_cannot_make_a_dirty_file_pass(tmp_path: Path, seal: str) -> None:
    source = tmp_path / "repo"
    source.mkdir()
    (source / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    (source / "model.py").write_text(BAD)
    attacker_key = tmp_path / "attacker" / "cache-key"
    assert_reported(bounded_cslint(source, "check", ".", CSLINT_KEY_FILE=str(attacker_key)))
    cache = source / ".cslint_cache"
    assert zero_findings(cache) == 1
    if seal == "sealed with another key":  # the attacker seals with their own key: still not this user's
        from cslint.store import sealed, user_key

        os.environ["CSLINT_KEY_FILE"], saved = str(attacker_key), os.environ["CSLINT_KEY_FILE"]
        try:
            for path in cache.glob("v*.json"):
                path.write_bytes(sealed.seal(path.name, path.read_text().replace('"mac":', '"was":', 1)) or b"")
        finally:
            os.environ["CSLINT_KEY_FILE"] = saved
        assert user_key.key() != attacker_key.read_bytes()
        # a cache the attacker's own cslint believes: only the key tells it from one this user made
        assert "All checks passed" in bounded_cslint(source, "check", ".", CSLINT_KEY_FILE=str(attacker_key)).stdout
    git(source, "init", "-q")
    git(source, "add", "-A")
    git(source, "add", "-f", ".cslint_cache")
    git(source, "commit", "-q", "-m", "a cache that says model.py is clean")

    pushed = tmp_path / "pushed"
    source.rename(pushed)  # the victim's clone at the same path, so the cache's absolute keys match
    git(tmp_path, "clone", "-q", str(pushed), str(source))
    assert (source / ".cslint_cache" / ".gitignore").exists() and any((source / ".cslint_cache").glob("v*.json"))
    run = bounded_cslint(source, "check", ".")
    assert_reported(run)
    assert "All checks passed" not in run.stdout
    assert "warning" not in run.stderr, run.stderr
    again = bounded_cslint(source, "check", ".", "--profile")  # the clone's own cache, now this user's
    assert_reported(again)
    assert "reports reused from the cache: 1" in again.stderr, again.stderr


def _results_cache(cache: Path) -> Path:
    (found,) = (p for p in cache.glob("v*.json") if "-lib-" not in p.name)
    return found


def _fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def _link_to_dev_zero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def _link_to_fifo(path: Path) -> None:
    fifo = path.parent.parent / f"{path.name}.pipe"
    os.mkfifo(fifo)
    path.unlink()
    path.symlink_to(fifo)


@pytest.mark.parametrize("replace", [_link_to_dev_zero, _fifo, _link_to_fifo],
                         ids=["links to /dev/zero", "FIFOs", "links to FIFOs"])
def test_cache_files_that_are_devices_fifos_or_links_are_misses(repo: Path, replace) -> None:
    """The results cache and both memos, each replaced: the run ends promptly, in little memory."""
    assert_reported(bounded_cslint(repo, "check", "."))
    cache = repo / ".cslint_cache"
    for path in [_results_cache(cache), *(next(cache.glob(f"v*-{memo}")) for memo in ("imports.memo", "tree.memo"))]:
        replace(path)
    run = bounded_cslint(repo, "check", ".")
    assert_reported(run)
    assert "warning" not in run.stderr, run.stderr


def test_a_fifo_marker_does_not_hang_the_run(repo: Path) -> None:
    assert_reported(bounded_cslint(repo, "check", "."))
    marker = repo / ".cslint_cache" / ".gitignore"
    _fifo(marker)
    run = bounded_cslint(repo, "check", ".")
    assert_reported(run)
    assert "not using the cache" in run.stderr, run.stderr


# The key that seals the cache is this user's, kept outside the repository; what is found in its place
# that this user's cslint did not make is never used as the key.

def _planted_link(path: Path) -> bytes:
    known = path.parent / "attacker-key"
    known.write_bytes(b"k" * 32)
    known.chmod(0o600)
    path.symlink_to(known)
    return known.read_bytes()


def _readable_by_all(path: Path) -> bytes:
    path.write_bytes(b"r" * 32)
    path.chmod(0o644)
    return path.read_bytes()


def _short(path: Path) -> bytes:
    path.write_bytes(b"s" * 8)
    path.chmod(0o600)
    return path.read_bytes()


def _fifo_key(path: Path) -> bytes:
    os.mkfifo(path, 0o600)
    return b""


@pytest.mark.parametrize("plant", [_planted_link, _readable_by_all, _short, _fifo_key],
                         ids=["link", "readable by all", "short", "FIFO"])
def test_a_key_file_that_is_not_private_is_replaced(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plant) -> None:
    from cslint.store import user_key

    path = tmp_path / "home" / "cache-key"
    path.parent.mkdir()
    planted = plant(path)
    monkeypatch.setenv("CSLINT_KEY_FILE", str(path))
    key = user_key.key()
    assert key is not None and len(key) == user_key.KEY_BYTES and key != planted
    found = path.lstat()
    assert path.is_file() and not path.is_symlink() and found.st_mode & 0o777 == 0o600
    assert path.read_bytes() == key
    if plant is _planted_link:
        assert (tmp_path / "home" / "attacker-key").read_bytes() == planted  # the link's target untouched
    left = {"cache-key", "attacker-key"} if plant is _planted_link else {"cache-key"}
    assert {p.name for p in path.parent.iterdir()} == left  # no temporary file left behind


def test_without_a_key_the_run_has_no_cache_and_says_so(repo: Path, tmp_path: Path) -> None:
    blocked = tmp_path / "not-a-directory"
    blocked.write_text("")
    run = bounded_cslint(repo, "check", ".", CSLINT_KEY_FILE=str(blocked / "cache-key"))
    assert_reported(run)
    warnings = [line for line in run.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "not using the cache: cannot keep its key" in warnings[0], run.stderr
    assert not list((repo / ".cslint_cache").glob("v*"))  # nothing written that could not be believed
