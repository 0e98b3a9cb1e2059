"""The installed libraries a long-lived process (the hook server, whose children inherit them, or the language
server) holds are made afresh once a distribution was installed or removed (cslint/analysis/library_env.py)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cslint.analysis import library_env

OLD = time.time() - 3600


def _venv(root: Path) -> Path:
    site = root / "venv" / "lib" / "python3.11" / "site-packages"
    site.mkdir(parents=True)
    (root / "venv" / "bin").mkdir()
    (root / "venv" / "bin" / "python").write_text("", encoding="utf-8")
    os.utime(site, (OLD, OLD))
    return site


def _install(site: Path, name: str, when: float) -> None:
    (site / f"{name}-1.0.dist-info").mkdir()
    (site / name).mkdir()
    os.utime(site, (when, when))


def test_an_environment_is_kept_until_a_distribution_is_installed(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(library_env, "_ENVIRONMENTS", {})
    site = _venv(tmp_path)
    python = str(tmp_path / "venv" / "bin" / "python")
    first = library_env.environment_for(python)
    assert first.distribution("extra") is None
    assert library_env.environment_for(python) is first
    _install(site, "extra", OLD + 60)
    again = library_env.environment_for(python)
    assert again is not first and again.distribution("extra") == ("extra", "1.0")
    assert library_env.environment_for(python) is again


def test_a_listing_changed_just_now_is_not_rested_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(library_env, "_ENVIRONMENTS", {})
    site = _venv(tmp_path)
    python = str(tmp_path / "venv" / "bin" / "python")
    _install(site, "extra", time.time())
    first = library_env.environment_for(python)
    assert library_env.environment_for(python) is not first  # a second install may hide in the same tick
