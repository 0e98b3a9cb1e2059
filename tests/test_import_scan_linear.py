"""The import scan's running time on hostile shapes (#34: a file within max-file-size finishes within the
hostile-input bar)."""

from __future__ import annotations

import time

import pytest

from cslint.analysis.import_scan import scan_imports


def test_comments_after_an_unclosed_bracket_do_not_make_the_scan_exponential():
    # each comment line multiplied the old regex's backtracking by its length: this input took hours
    text = "from a import (b\n" + "# xxxxxxxx\n" * 12
    started = time.perf_counter()
    found = scan_imports(text, "m", False)
    assert time.perf_counter() - started < 5
    assert found == ["a", "a.b"]


def test_a_comment_inside_closed_brackets_still_ends_at_its_line():
    text = "from .e import (f,  # a ) in a comment\n    # another ) here\n    g)\n"
    assert scan_imports(text, "pkg.mod", False) == ["pkg.e", "pkg.e.f", "pkg.e.g"]


def _timed(text: str, module: str = "m") -> tuple[list[str], float]:
    started = time.perf_counter()
    found = scan_imports(text, module, False)
    return found, time.perf_counter() - started


def test_many_statements_on_one_line_do_not_make_the_scan_quadratic():
    # each start read to the end of the line: 48 KB took 36.7 s, 1 MB would take hours
    found, seconds = _timed("x; import a " * 90_000)  # 1 MB, and not Python: nothing it imports matters
    assert seconds < 5 and found == []
    found, seconds = _timed("x = 1; import a.b; from .c import (d, e); " * 25_000, "pkg.m")  # 1 MB of Python
    assert seconds < 10 and found == ["a.b", "pkg.c", "pkg.c.d", "pkg.c.e"]


def test_many_unclosed_brackets_do_not_make_the_scan_quadratic():
    # each unclosed bracket read to the end of the file: 4,000 lines took 28.5 s
    found, seconds = _timed("from a import (\n" * 60_000)
    assert seconds < 5 and found == []


def test_ordinary_files_are_scanned_not_parsed(monkeypatch):
    from cslint.analysis import import_scan

    monkeypatch.setattr(import_scan, "_parsed_imports", lambda *args: pytest.fail("parsed"))
    text = "import os\nfrom .layers import (Attention,  # the block\n    MLP)\n\n\ndef f():\n    import math; return 1\n"
    assert scan_imports(text * 200, "pkg.model", False) == ["math", "os", "pkg.layers", "pkg.layers.Attention",
                                                            "pkg.layers.MLP"]
