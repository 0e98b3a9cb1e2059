"""What each file imports is remembered between runs (cslint/store/import_memo.py), so choosing the target does not
read the whole project each time; the answer must stay the one a run that reads every file gives."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from cslint.engine import target_inference
from cslint.store.cache import CACHE_DIR_NAME, MARKER, MARKER_NAME
from cslint.cli.main import main
from cslint.store.import_memo import ImportMemo, memo_file_name
from cslint.engine.target_inference import infer_target

MODEL = ("import torch\nfrom torch import nn\n\n\n"
         "class Net(nn.Module):\n    def forward(self, x):\n        return x * 2\n")
OLD = time.time() - 3600  # older than the clock tick an edit could hide in


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
    for name in ("model.py", "train.py", "data.py"):
        path = tmp_path / name
        path.write_text(MODEL, encoding="utf-8")
        os.utime(path, (OLD, OLD))
    return tmp_path


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files whose text the target inference read."""
    read: list[Path] = []
    real = target_inference.file_imports

    def counting(path: Path, max_size: int):
        read.append(path)
        return real(path, max_size)

    monkeypatch.setattr(target_inference, "file_imports", counting)
    return read


def _files(root: Path) -> list[Path]:
    return sorted(root.glob("*.py"))


def test_unchanged_files_are_not_read_again(project: Path, scans: list[Path]) -> None:
    cache = project / CACHE_DIR_NAME
    first = infer_target(_files(project), memo=ImportMemo(cache).load())
    assert len(scans) == 3
    scans.clear()
    again = infer_target(_files(project), memo=ImportMemo(cache).load())
    assert scans == [] and again == first


def test_an_edited_file_is_read_again_and_changes_the_target(project: Path, scans: list[Path]) -> None:
    cache = project / CACHE_DIR_NAME
    assert infer_target(_files(project), memo=ImportMemo(cache).load()).target == "wsc"
    (project / "train.py").write_text("import torch_xla.core.xla_model as xm\n" + MODEL, encoding="utf-8")
    scans.clear()
    choice = infer_target(_files(project), memo=ImportMemo(cache).load())
    assert scans == [project / "train.py"]
    assert choice.target == "xla" and "train.py" in choice.reason


def test_a_recent_file_is_read_again_even_with_its_recorded_size_and_time(project: Path, scans: list[Path]) -> None:
    """An edit within the same clock tick keeps size and mtime: a file modified just now is not trusted."""
    cache = project / CACHE_DIR_NAME
    train = project / "train.py"
    now = time.time()
    os.utime(train, (now, now))
    infer_target(_files(project), memo=ImportMemo(cache).load())
    stat = train.stat()
    train.write_text(MODEL.replace("import torch\n", "import samba\n", 1), encoding="utf-8")
    os.utime(train, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert train.stat().st_size == stat.st_size
    scans.clear()
    assert infer_target(_files(project), memo=ImportMemo(cache).load()).target == "rdu"
    assert scans == [train]


def test_a_damaged_memo_is_read_as_none(project: Path, scans: list[Path]) -> None:
    cache = project / CACHE_DIR_NAME
    infer_target(_files(project), memo=ImportMemo(cache).load())
    for damage in ("{not json", json.dumps({"format": 1, "files": {"x": 3}}), json.dumps([1, 2])):
        (cache / memo_file_name()).write_text(damage, encoding="utf-8")
        scans.clear()
        assert infer_target(_files(project), memo=ImportMemo(cache).load()).target == "wsc"
        assert len(scans) == 3


def test_a_memo_in_a_directory_that_is_not_cslints_is_not_believed(project: Path, scans: list[Path]) -> None:
    """A repository cannot ship a memo that says a file imports what it does not: a directory cslint did not
    create (no marker, other files) is not read, as the cache is not."""
    cache = project / CACHE_DIR_NAME
    cache.mkdir()
    (cache / "notes.txt").write_text("someone else's\n", encoding="utf-8")
    stat = (project / "model.py").stat()
    planted = {"format": 1, "files": {str(project / "model.py"): [stat.st_mtime_ns, stat.st_size,
                                                                    ["torch_xla"], False]}}
    (cache / memo_file_name()).write_text(json.dumps(planted), encoding="utf-8")
    assert infer_target(_files(project), memo=ImportMemo(cache).load()).target == "wsc"
    assert len(scans) == 3


def test_check_keeps_the_memo_in_the_cache_directory_and_no_cache_keeps_none(project: Path, capsys,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CSLINT_CACHE_DIR")
    cache = project / CACHE_DIR_NAME
    assert main(["check", str(project), "--no-cache", "--exit-zero", "-q"]) == 0
    assert not cache.exists()
    assert main(["check", str(project), "--exit-zero", "-q"]) == 0
    assert (cache / MARKER_NAME).read_text(encoding="utf-8") == MARKER
    remembered = json.loads((cache / memo_file_name()).read_text(encoding="utf-8"))["files"]
    assert sorted(remembered) == [str(p) for p in _files(project)]
    assert main(["clean", "--cache-dir", str(cache)]) == 0
    assert not cache.exists()


def test_a_cached_run_infers_what_an_uncached_one_does_after_an_edit(project: Path, capsys) -> None:
    """The edit that adds the platform import changes the target (and so the report's wording) at once."""
    main(["check", str(project), "--show-settings"])
    assert "target = 'wsc'" in capsys.readouterr().out
    (project / "train.py").write_text("import torch\n\nstep = torch.compile(lambda x: x, fullgraph=True)\n",
                                      encoding="utf-8")
    main(["check", str(project), "--show-settings"])
    cached = capsys.readouterr().out
    main(["check", str(project), "--show-settings", "--no-cache"])
    assert cached == capsys.readouterr().out
    assert "target = 'compile'" in cached


def test_a_memo_read_ahead_by_the_server_is_used_until_the_file_is_replaced(project: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from cslint.store import import_memo, memo_file

    cache = project / CACHE_DIR_NAME
    infer_target(_files(project), memo=ImportMemo(cache).load())
    import_memo.preload(cache)
    monkeypatch.setattr(memo_file.json, "load", lambda handle: pytest.fail("read from disk"))
    assert len(ImportMemo(cache).load()._entries) == 3
    monkeypatch.undo()
    (project / "extra.py").write_text(MODEL, encoding="utf-8")
    infer_target(_files(project), memo=ImportMemo(cache).load())  # writes a new memo file
    assert len(ImportMemo(cache).load()._entries) == 4
