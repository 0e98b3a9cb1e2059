"""A diagnostic is kept in the cache as itself: what a run reads back is what it stored, every field."""

from __future__ import annotations

from pathlib import Path

import pytest

from cslint.core.graph_break_ids import GraphBreak
from cslint.core.report import Diagnostic, FixSummary
from cslint.store import cache
from cslint.store.cache import Cache, Entry

EVERY_FIELD = Diagnostic(
    Path("/project/train.py"), 12, 9, 13, 4, "WSC101", "tensor-dependent `if`: the step is split in two",
    FixSummary("unsafe", "Replace with `torch.where`"), ["train.step", "model.Net.forward (override of Base.forward)"],
    "passed to torch.compile", "        if x.sum() > 0:", 3,
    GraphBreak("GB0170", "Data-dependent branching", "the branch depends on a tensor's value", "use torch.cond"),
    ["`x` is the batch", "graph break: 1 per step"])


def _entry(diagnostics: list[Diagnostic]) -> Entry:
    return Entry(hash="h", mtime_ns=1, size=2, module="train", imports=["torch"], diagnostics=diagnostics)


def test_a_diagnostic_is_read_back_from_the_cache_file_as_it_was_stored(tmp_path):
    key = str(EVERY_FIELD.path)
    bare = Diagnostic(EVERY_FIELD.path, 1, 1, 1, 2, "WSC001", "syntax error: invalid syntax")
    stored = Cache(tmp_path / ".cslint_cache", "k")
    stored.entries[key] = _entry([EVERY_FIELD, bare])
    stored.save()

    read = Cache(tmp_path / ".cslint_cache", "k").load()

    assert read.entries[key].diagnostics == [EVERY_FIELD, bare]


def test_a_diagnostic_round_trips_through_its_json():
    assert Diagnostic.from_json(EVERY_FIELD.path, EVERY_FIELD.as_json()) == EVERY_FIELD


def test_a_diagnostic_cannot_be_changed_in_place():
    with pytest.raises(AttributeError):
        EVERY_FIELD.line = 1  # type: ignore[misc]


# an entry as cslint wrote it before diagnostics kept their cell and graph break (cache FORMAT 2)
OLD_ENTRY = {"hash": "h", "mtime_ns": 1, "size": 2, "module": "train", "imports": ["torch"], "reach": [], "deps": "",
             "diagnostics": [{"line": 12, "column": 9, "end_line": 13, "end_column": 4, "code": "WSC101",
                              "message": "tensor-dependent `if`", "fix": ["unsafe", "Replace with `torch.where`"],
                              "chain": ["train.step"], "reason": "passed to torch.compile",
                              "source_line": "        if x.sum() > 0:", "notes": []}],
             "hints": None}


def test_an_entry_in_the_old_format_is_a_miss_even_in_a_file_of_the_new_one():
    entries, _ = cache._parse({"format": cache.FORMAT, "version": "x", "files": {"/project/train.py": OLD_ENTRY}})
    assert entries == {}


def test_a_file_in_the_old_format_is_a_miss():
    current = _entry([EVERY_FIELD]).as_json()
    entries, _ = cache._parse({"format": 2, "version": "x", "files": {"/project/train.py": current}})
    assert entries == {}
