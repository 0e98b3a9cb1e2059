"""The import scan's running time on hostile shapes (#34: a file within max-file-size finishes within the
hostile-input bar)."""

from __future__ import annotations

import time

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
