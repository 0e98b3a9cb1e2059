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


HELPER = "import torch\n\n\ndef count_positive(x):\n    return int((x > 0).sum())\n"
MODEL = ("import torch\nfrom torch import nn\n\nfrom mylib.helpers import count_positive\n\n\n"
         "class Net(nn.Module):\n    def forward(self, x):\n        return x * count_positive(x)\n")


def test_an_editable_install_has_no_version(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its code changes while its version does not: nothing read from it may be kept by version."""
    site = _venv(tmp_path)
    _install(site, "mylib", OLD)
    (site / "mylib-1.0.dist-info" / "direct_url.json").write_text(
        '{"url": "file:///src/mylib", "dir_info": {"editable": true}}', encoding="utf-8")
    _install(site, "other", OLD + 1)
    environment = library_env.Environment([str(site)])
    assert environment.distribution("mylib") == ("mylib", "")
    assert environment.distribution("other") == ("other", "1.0")


def _source(tmp_path: Path) -> Path:
    """A library's source directory on the path (as an editable install or a .pth file puts it there)."""
    src = tmp_path / "src"
    (src / "mylib").mkdir(parents=True)
    (src / "mylib" / "__init__.py").write_text("", encoding="utf-8")
    (src / "mylib" / "helpers.py").write_text(HELPER, encoding="utf-8")
    for path in (src / "mylib" / "__init__.py", src / "mylib" / "helpers.py"):
        os.utime(path, (OLD, OLD))
    return src


def test_a_source_directory_on_the_path_is_part_of_the_key(tmp_path: Path) -> None:
    src = _source(tmp_path)
    before = library_env.Environment([str(src)]).digest_text()
    (src / "mylib" / "helpers.py").write_text(HELPER.replace("int(", "float("), encoding="utf-8")
    assert library_env.Environment([str(src)]).digest_text() != before
    inside = library_env.Environment([str(src)]).digest_text(project_root=str(tmp_path))
    (src / "mylib" / "helpers.py").write_text(HELPER, encoding="utf-8")
    assert library_env.Environment([str(src)]).digest_text(project_root=str(tmp_path)) == inside  # the project's own


def test_a_cached_report_follows_an_edit_of_a_library_on_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from cslint.cli.main import main

    src = _source(tmp_path / "elsewhere")
    monkeypatch.syspath_prepend(str(src))
    monkeypatch.setattr(library_env, "_ENVIRONMENTS", {})
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
    (project / "model.py").write_text(MODEL, encoding="utf-8")
    os.utime(project / "model.py", (OLD, OLD))
    monkeypatch.chdir(project)

    def report(*args: str) -> str:
        main(["check", ".", "--output-format", "concise", *args])
        return capsys.readouterr().out

    first = report()
    assert "in `count_positive` (helpers.py:" in first, first
    (src / "mylib" / "helpers.py").write_text(HELPER.replace("int((x > 0).sum())", "(x > 0).sum()"),
                                              encoding="utf-8")
    os.utime(src / "mylib" / "helpers.py", (OLD + 60, OLD + 60))
    fresh = report("--no-cache")
    assert "in `count_positive`" not in fresh
    assert report() == fresh


def test_either_keeps_sure_only_what_both_functions_do() -> None:
    """A call running one of two library functions, which one not known: a kind of effect both have is sure
    (each place named), the rest possible; running both (forward, then backward) does everything."""
    from cslint.analysis.kinds import TENSOR
    from cslint.analysis.library_env import BRANCH, MASK_STORE, Effect, Summary, both, either

    branch_a = Effect(BRANCH, "if x.max() > 0", ("lib.a",), "lib.py", 3)
    branch_b = Effect(BRANCH, "if y.any()", ("lib.b",), "lib.py", 9)
    store_b = Effect(MASK_STORE, "y[m] = 0", ("lib.b",), "lib.py", 10)
    one, other = Summary(TENSOR, (branch_a,)), Summary(TENSOR, (branch_b, store_b))
    chosen = either(one, other)
    assert chosen.effects == (branch_a, branch_b) and chosen.possible == (store_b,)
    assert either(chosen, Summary(TENSOR)).effects == () and set(either(chosen, Summary(TENSOR)).possible) == \
        {branch_a, branch_b, store_b}
    assert both(one, other).effects == (branch_a, branch_b, store_b) and both(one, other).possible == ()


def test_a_stored_summary_keeps_what_it_possibly_does(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from cslint.analysis.call_depth import Reach
    from cslint.analysis.kinds import TENSOR
    from cslint.analysis.library_env import BRANCH, Effect, Summary
    from cslint.store.library_cache import _summary, _summary_json

    effect = Effect(BRANCH, "if x.max() > 0", ("lib.a",), "lib.py", 3)
    summary = Summary(TENSOR, (), ("lib=1.0",), Reach(1, frozenset()), (effect,))
    assert _summary(_summary_json(summary)).possible == (effect,)
