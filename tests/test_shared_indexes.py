"""A densely connected project (a shared core every model imports) is read and indexed once per run,
not once per group whose analysis loads it, and the report is the same as analysing it all at once."""

from __future__ import annotations

import contextlib
import gc
import json
import os
from collections import Counter
from pathlib import Path

import pytest

from cslint.engine import incremental, runner
from cslint.analysis.index_store import IndexStore
from cslint.cli.main import main
from tests.conftest import profile_count, profiled_check

CORE = {
    "core/__init__.py": "",
    "core/config.py": "class Config:\n    hidden = 8\n    eps = 1e-5\n",
    "core/ops.py": """\
import torch

from core.config import Config


def rms(x, eps):
    if x.norm() > eps:
        return x / x.norm()
    return x


def width():
    return Config.hidden
""",
    "core/registry.py": "from core.ops import rms, width\n\nKNOWN = {'rms': rms, 'width': width}\n",
    "core/broken.py": "def half(:\n    pass\n",  # a syntax error in a file most files import
}

MODEL = """\
import torch
from torch import nn

from core import broken
from core.config import Config
from core.ops import rms
from core.registry import KNOWN


class Model{i}(nn.Module):
    def forward(self, x):
        y = rms(x, Config.eps)
        if {tensor_test}:
            return y
        return y * {i}
"""


def _dense_project(root: Path, models: int) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'dense'\n")
    files = dict(CORE)
    for i in range(models):
        test = "y.sum() > 0" if i % 2 else "Config.hidden > 4"
        files[f"models/m{i}.py"] = MODEL.format(i=i, tensor_test=test)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> tuple[Counter[str], Counter[str]]:
    """How many times the analyses read and indexed each file (by name)."""
    reads: Counter[str] = Counter()
    indexes: Counter[str] = Counter()
    read, index = runner.read_source, runner.index_module_from_ast

    def counting_read(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        reads[Path(path).name if Path(path).parent.name != "core" else f"core/{Path(path).name}"] += 1
        return read(path, *args, **kwargs)

    def counting_index(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        indexes[Path(path).name if Path(path).parent.name != "core" else f"core/{Path(path).name}"] += 1
        return index(path, *args, **kwargs)

    monkeypatch.setattr(runner, "read_source", counting_read)
    monkeypatch.setattr(runner, "index_module_from_ast", counting_index)
    return reads, indexes


def test_a_core_every_group_imports_is_read_and_indexed_once(tmp_path, capsys, counted):
    reads, indexes = counted
    root = _dense_project(tmp_path, models=12)
    findings, err = profiled_check(capsys, root)
    assert profile_count(err, "groups") >= 12  # each model is a group of its own: the core holds no roots
    assert reads["core/ops.py"] == 1 and indexes["core/ops.py"] == 1
    assert max(reads.values()) == 1 and max(indexes.values()) == 1
    assert len(indexes) == len(CORE) - 1 + 12  # every file but the one Python cannot parse
    assert reads["core/broken.py"] == 1 and "core/broken.py" not in indexes
    assert profile_count(err, "files indexed") == len(reads)  # the broken file too: indexing is what finds it broken


def test_shared_indexes_give_the_report_of_one_analysis(tmp_path, capsys, monkeypatch):
    root = _dense_project(tmp_path, models=6)
    grouped, err = profiled_check(capsys, root)
    assert profile_count(err, "groups") >= 6
    monkeypatch.setattr(incremental.Session, "_groups", lambda self, keys: [set(keys)])
    together, err = profiled_check(capsys, root)
    assert profile_count(err, "groups") == 1
    assert grouped == together
    # the helper traced from every model, the odd models' tensor tests, and the file with a syntax error
    assert sorted({(Path(f["filename"]).name, f["code"]) for f in grouped}) == [
        ("broken.py", "WSC001"), ("m1.py", "WSC101"), ("m3.py", "WSC101"), ("m5.py", "WSC101"),
        ("ops.py", "WSC101")]


def test_workers_index_each_file_once_and_share_it(tmp_path, capsys, monkeypatch):
    root = _dense_project(tmp_path, models=8)
    serial, _ = profiled_check(capsys, root)
    monkeypatch.setattr(incremental, "MIN_PARALLEL_BYTES", 0)  # workers even for a small project
    code = main(["check", str(root), "--no-cache", "-j", "2", "--show-chain", "--output-format", "json",
                 "--profile"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert profile_count(err, "worker processes") == 2
    assert profile_count(err, "files indexed") == len(CORE) + 8  # each file once, by one of the two workers
    assert json.loads(out) == serial


def test_a_group_loads_only_the_imported_files_its_traced_code_looks_into(tmp_path, capsys, monkeypatch):
    """Each model's analysis has every file the model imports, directly or not, there to resolve names;
    loading all of them for every group made a run quadratic in a sparse project whose files import
    chains of others. A file no traced code looks names up in is loaded by its own group only."""
    lent: Counter[str] = Counter()
    index = IndexStore.index

    def counting(self, source, *args, **kwargs):  # type: ignore[no-untyped-def]
        lent[f"{source.path.parent.name}/{source.path.name}"] += 1
        return index(self, source, *args, **kwargs)

    monkeypatch.setattr(IndexStore, "index", counting)
    root = _dense_project(tmp_path, models=12)
    findings, err = profiled_check(capsys, root)
    assert profile_count(err, "groups") >= 12
    # its own group, each model's (their forward calls rms), and the one analysis of all the models
    # whose traced code meets there: 14 both before and after
    assert lent["core/ops.py"] == 14
    # imported by every model, looked into by none: its own group only (was 14)
    assert lent["core/registry.py"] == lent["core/broken.py"] == lent["core/__init__.py"] == 1
    assert ("ops.py", "WSC101") in {(Path(f["filename"]).name, f["code"]) for f in findings}


CHAIN_HELPER = """\
import torch

from core.ops import rms
{previous}


def scale_{i}(x):
    if x.mean() > {i}:
        return rms(x, 1e-5)
    return x * 0.5
"""

CHAIN_MODEL = """\
import torch
from torch import nn

from core.ops import rms
from helpers.h{i} import scale_{i}


class Chained{i}(nn.Module):
    def forward(self, x):
        return scale_{i}(rms(x, 1e-6))
"""


def _chain_project(root: Path, length: int) -> Path:
    """Each helper imports the one before it (without calling it), each model its own helper: the import
    closure of the last model is the whole chain, though its analysis looks into two files."""
    (root / "pyproject.toml").write_text("[project]\nname = 'chain'\n")
    files = dict(CORE)
    files["helpers/__init__.py"] = files["models/__init__.py"] = ""
    for i in range(length):
        previous = f"import helpers.h{i - 1}" if i else ""
        files[f"helpers/h{i}.py"] = CHAIN_HELPER.format(i=i, previous=previous)
        files[f"models/m{i}.py"] = CHAIN_MODEL.format(i=i)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_groups_on_a_chain_of_imports_give_the_report_of_one_analysis(tmp_path, capsys, monkeypatch):
    root = _chain_project(tmp_path, length=15)
    grouped, err = profiled_check(capsys, root)
    assert profile_count(err, "groups") >= 15
    monkeypatch.setattr(incremental.Session, "_groups", lambda self, keys: [set(keys)])
    together, _ = profiled_check(capsys, root)
    assert grouped == together
    found = {(Path(f["filename"]).name, f["code"]) for f in grouped}
    assert {(f"h{i}.py", "WSC101") for i in range(15)} <= found and ("ops.py", "WSC101") in found


def test_worker_calls_carry_the_groups_files_not_what_they_import(tmp_path, capsys, monkeypatch):
    """A group's worker call names its own files; what they import is found in the run's import graph,
    sent once to each worker. Listing each group's import closure in its call grew as N² on a chain."""
    root = _chain_project(tmp_path, length=15)
    serial, _ = profiled_check(capsys, root)
    sent: list[list[int]] = []
    start_pool = incremental.Session._start_pool

    @contextlib.contextmanager
    def recording(self):  # type: ignore[no-untyped-def]
        with start_pool(self) as pool:
            submit = pool.submit

            def record(fn, *args):  # type: ignore[no-untyped-def]
                if fn is incremental._check_groups:
                    sent.extend(args[3])
                return submit(fn, *args)

            pool.submit = record  # type: ignore[method-assign]
            yield pool

    monkeypatch.setattr(incremental.Session, "_start_pool", recording)
    monkeypatch.setattr(incremental, "MIN_PARALLEL_BYTES", 0)
    code = main(["check", str(root), "--no-cache", "-j", "2", "--show-chain", "--output-format", "json",
                 "--profile"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert profile_count(err, "worker processes") == 2
    assert json.loads(out) == serial
    files = len(CORE) + 2 + 2 * 15
    first_round = profile_count(err, "groups")
    assert all(isinstance(position, int) for task in sent for position in task)
    # every file in one group's call, then the groups whose traced code meets in `rms`, analysed again together
    assert sum(map(len, sent[:first_round])) == files
    assert sum(map(len, sent)) <= 2 * files


def test_a_workers_indexing_runs_with_fewer_collections(tmp_path, monkeypatch):
    """A worker's share of the indexing (Python's trees: millions of young objects) runs with the
    collector's thresholds raised, as the groups' analyses do, and puts the defaults back after."""
    from cslint.support.gc_thresholds import THRESHOLDS
    from cslint.core.config import Settings

    root = _dense_project(tmp_path, models=2)
    paths = sorted(root.rglob("*.py"))
    seen: list[tuple[int, ...]] = []
    index_files = runner.Linter.index_files

    def recording(self, *args):  # type: ignore[no-untyped-def]
        seen.append(gc.get_threshold())
        return index_files(self, *args)

    monkeypatch.setattr(runner.Linter, "index_files", recording)
    monkeypatch.setattr(incremental, "_WORKER_STORE", [])
    before = gc.get_threshold()
    names = {path: (path.stem, False) for path in paths}
    incremental._index_part(Settings(), paths, names, str(tmp_path / "part.pickle"), False)
    assert seen == [THRESHOLDS] and gc.get_threshold() == before
    assert (tmp_path / "part.pickle").exists()
    assert incremental._WORKER_STORE[0].indexed == dict.fromkeys(paths, 1)  # each file, broken.py too


def test_the_parent_saves_the_graph_and_imports_the_rules_while_the_workers_index(tmp_path, capsys, monkeypatch):
    """What the groups' workers need from the parent (the import graph saved, the rules' codes) is
    ready before the parent waits for the indexing: the workers never sit idle in between."""
    from concurrent.futures import Future

    root = _dense_project(tmp_path, models=4)
    serial, _ = profiled_check(capsys, root)
    ready_when_waited: list[tuple[bool, bool]] = []

    class Pool:  # in this process: an index part runs when its result is asked for, a group at once
        def __init__(self, session):  # type: ignore[no-untyped-def]
            self.session = session

        def submit(self, fn, *args):  # type: ignore[no-untyped-def]
            session = self.session

            class Waited(Future):  # type: ignore[type-arg]
                def result(self, timeout=None):  # type: ignore[no-untyped-def]
                    if not self.done():
                        ready_when_waited.append((os.path.exists(session._graph_file), session._rule_set.loaded))
                        self.set_result(fn(*args))
                    return super().result(timeout)

            future = Waited()
            if fn is not incremental._index_part:
                future.set_result(fn(*args))
            return future

    @contextlib.contextmanager
    def in_process(self):  # type: ignore[no-untyped-def]
        yield Pool(self)

    monkeypatch.setattr(incremental.Session, "_start_pool", in_process)
    monkeypatch.setattr(incremental, "MIN_PARALLEL_BYTES", 0)
    monkeypatch.setattr(incremental, "_WORKER_STORE", [])
    monkeypatch.setattr(incremental, "_WORKER_GRAPH", {})
    code = main(["check", str(root), "--no-cache", "-j", "2", "--show-chain", "--output-format", "json", "--profile"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert profile_count(err, "files indexed") == len(CORE) + 4
    assert ready_when_waited and all(graph and rules for graph, rules in ready_when_waited)
    assert json.loads(out) == serial


KEPT_UNTIL_TEARDOWN = """\
import os, sys, types
class Kept:
    def __del__(self, mkdir=os.mkdir, path={path!r}):
        mkdir(path)
holder = types.ModuleType("cslint_test_holder")
holder.kept = Kept()
sys.modules["cslint_test_holder"] = holder
"""


def test_workers_end_without_freeing_what_they_kept(tmp_path):
    """A worker of the pool exits at once when the pool shuts down: what it kept (the run's indexes) is
    not freed object by object at the interpreter's end, which the parent waited for."""
    from cslint.core.config import Settings

    session = incremental.Session(Settings(), [], cache=None, jobs=1)
    freed = tmp_path / "freed"
    with session._start_pool() as pool:
        pool.submit(exec, KEPT_UNTIL_TEARDOWN.format(path=str(freed))).result()
        assert pool.submit(sum, [1, 2]).result() == 3
    assert not freed.exists()
