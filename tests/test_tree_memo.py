"""A walk of the project and the module names of its files are remembered between runs (cslint/store/tree_memo.py)
while the directories they depended on are unchanged; the answer must stay the one a run that walks and
names everything gives."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from cslint.engine import discovery

from cslint.store import memo_file
from cslint.store.cache import CACHE_DIR_NAME
from cslint.cli.main import main
from cslint.core.config import Settings
from cslint.engine.discovery import collect_files
from cslint.store.tree_memo import TreeMemo, name_project

HELPER = "import torch\n\n\ndef soft_cap(x):\n    if x.max() > 1:\n        return x / x.max()\n    return x\n"
MODEL = ("import torch\nfrom torch import nn\n\nfrom pkg.layers import soft_cap\n\n\n"
         "class Net(nn.Module):\n    def forward(self, x):\n        return soft_cap(x)\n")
OLD = time.time() - 3600  # older than the clock tick a change could hide in


def _settle(root: Path, when: float = OLD) -> None:
    """Every file and directory of the project last changed long ago (each call: a different time)."""
    for directory, _, files in os.walk(root):
        for name in files:
            os.utime(os.path.join(directory, name), (when, when))
        os.utime(directory, (when, when))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (tmp_path / "pkg" / "layers.py").write_text(HELPER, encoding="utf-8")
    (tmp_path / "pkg" / "model.py").write_text(MODEL, encoding="utf-8")
    (tmp_path / CACHE_DIR_NAME).mkdir()  # its making changes the project's listing: as after a first run
    _settle(tmp_path)
    return tmp_path


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directories walked (listed) by discovery."""
    listed: list[str] = []
    real = discovery._walk

    def counting(top: str, *args, **kwargs):
        listed.append(top)
        return real(top, *args, **kwargs)

    monkeypatch.setattr(discovery, "_walk", counting)
    return listed


def _collect(project: Path) -> list[Path]:
    memo = TreeMemo(project / CACHE_DIR_NAME).load()
    found = collect_files([project], Settings(project_root=project), [], memo)
    memo.save()
    return found


def _report(project: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["check", *args, "--output-format", "concise"])
    return code, capsys.readouterr().out


def test_an_unchanged_tree_is_not_walked_again(project: Path, walks: list[str]) -> None:
    first = _collect(project)
    assert walks == [str(project)]
    walks.clear()
    assert _collect(project) == first and walks == []


def test_a_new_file_is_found(project: Path, walks: list[str]) -> None:
    _collect(project)
    (project / "pkg" / "extra.py").write_text(HELPER, encoding="utf-8")
    assert project / "pkg" / "extra.py" in _collect(project)  # the directory's time is recent: walked again
    _settle(project, OLD + 60)
    walks.clear()
    assert project / "pkg" / "extra.py" in _collect(project) and walks == [str(project)]  # a time not recorded
    (project / "pkg" / "extra.py").unlink()
    _settle(project, OLD + 120)
    assert project / "pkg" / "extra.py" not in _collect(project)


def test_a_recent_listing_is_not_trusted(project: Path, walks: list[str]) -> None:
    now = time.time()
    os.utime(project / "pkg", (now, now))
    _collect(project)
    walks.clear()
    _collect(project)  # pkg/ may change again within the same clock tick: walked again
    assert walks == [str(project)]


def test_a_walk_that_met_a_link_is_not_remembered(project: Path, walks: list[str]) -> None:
    (project / "pkg" / "alias.py").symlink_to(project / "pkg" / "layers.py")
    _settle(project)
    _collect(project)
    walks.clear()
    _collect(project)
    assert walks == [str(project)]


def test_module_names_follow_a_new_init_file(project: Path) -> None:
    """Names rest on which directories hold an __init__.py: one that appears is seen, even when a setting
    keeps it out of the files checked."""
    (project / "pkg" / "__init__.py").unlink()
    _settle(project)
    paths = sorted((project / "pkg").glob("*.py"))
    keys = [str(p) for p in paths]
    memo = TreeMemo(project / CACHE_DIR_NAME)
    before = memo.names(paths, keys, set(), [project])
    assert before[0][project / "pkg" / "layers.py"] == ("layers", False)
    (project / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    after = memo.names(paths, keys, set(), [project])
    assert after[0][project / "pkg" / "layers.py"] == ("pkg.layers", False)
    assert after == name_project(paths, set(), [project])[:2]


def test_unchanged_names_are_remembered(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cslint.store import tree_memo

    paths = sorted((project / "pkg").glob("*.py"))
    keys = [str(p) for p in paths]
    memo = TreeMemo(project / CACHE_DIR_NAME)
    first = memo.names(paths, keys, set(), [project])
    memo.save()
    monkeypatch.setattr(tree_memo, "name_project", lambda *a: pytest.fail("named again"))
    assert TreeMemo(project / CACHE_DIR_NAME).load().names(paths, keys, set(), [project]) == first


def test_cached_runs_agree_with_no_cache_as_the_tree_changes(project: Path, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch, walks: list[str]) -> None:
    """Files added, moved between directories, namespace packages made regular and back, imports edited in
    place: after each change (and the tree settled), cached runs of the project and of one file in it
    report what a run without the cache does, also when the walk and the names are remembered."""
    monkeypatch.chdir(project)
    model = project / "pkg" / "model.py"
    changes = [  # a change, and whether it changes a directory's listing
        (lambda: (project / "pkg" / "__init__.py").unlink(), True),  # a namespace package: pkg.layers by alias
        (lambda: (project / "pkg" / "sub").mkdir(), True),
        (lambda: (project / "pkg" / "layers.py").rename(project / "pkg" / "sub" / "layers.py"), True),
        (lambda: model.write_text(MODEL.replace("pkg.layers", "pkg.sub.layers"), encoding="utf-8"), False),
        (lambda: (project / "pkg" / "__init__.py").write_text("", encoding="utf-8"), True),
        (lambda: model.write_text(MODEL.replace("pkg.layers", "nowhere"), encoding="utf-8"), False),
        (lambda: (project / "pkg" / "sub" / "layers.py").rename(project / "pkg" / "layers.py"), True),
        (lambda: model.write_text(MODEL, encoding="utf-8"), False),
    ]
    assert _report(project, capsys, ".")[0] == 1
    remembered = 0
    for step, (change, listing) in enumerate(changes, start=1):
        change()
        when = OLD + 60 * step
        for path in project.rglob("*.py"):
            os.utime(path, (when, when))
        if listing:
            _settle(project, when)
        for args in ((".",), (str(model),)):
            expected = _report(project, capsys, *args, "--no-cache")
            walks.clear()
            assert _report(project, capsys, *args) == expected, (step, args)
            remembered += not walks
            assert _report(project, capsys, *args) == expected, (step, args)  # the walk and names remembered
    assert remembered >= 6  # the in-place edits, and the second kind of run after each change


def test_a_damaged_memo_is_ignored(project: Path, capsys: pytest.CaptureFixture[str],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    expected = _report(project, capsys, ".")
    memo = Path(os.environ["CSLINT_CACHE_DIR"]) / TreeMemo(project).name  # the tests' cache (conftest.py)
    assert memo.exists()
    memo.write_text('{"format": 1, "walks": {"x": 1}', encoding="utf-8")
    assert _report(project, capsys, ".") == expected
    memo.write_text('{"format": 1, "walks": {"x": {"listings": {}}}, "namings": []}', encoding="utf-8")
    assert _report(project, capsys, ".") == expected


def test_a_memo_read_ahead_by_the_server_is_used_until_the_file_is_replaced(project: Path, walks: list[str],
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from cslint.store import tree_memo

    first = _collect(project)
    tree_memo.preload(project / CACHE_DIR_NAME)
    monkeypatch.setattr(memo_file.sealed.bounded_json, "loads", lambda data: pytest.fail("read from disk"))
    walks.clear()
    assert _collect(project) == first and walks == []
    monkeypatch.undo()
    (project / "pkg" / "extra.py").write_text(HELPER, encoding="utf-8")
    assert project / "pkg" / "extra.py" in _collect(project)  # writes a new memo file
    _settle(project, OLD + 60)
    assert project / "pkg" / "extra.py" in _collect(project)
