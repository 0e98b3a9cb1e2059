"""JSON from files a repository supplies (notebooks, cache files), parsed only when its nesting is bounded.

Python's json module recurses once per nested array or object: a notebook of 100,000 `[` ends in a
RecursionError, which no caller expects from a parse. So the text's nesting is measured first, brackets
inside strings left out, and JSON nested deeper than MAX_DEPTH is refused (`TooDeep`, a ValueError as
any other invalid JSON) without being parsed. Real JSON is nested a few levels (a notebook's outputs
with a plot in them, a dozen or two).
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

MAX_DEPTH = 500  # far below the interpreter's default recursion limit of 1,000, whichever thread parses
# A string, to its closing quote or, unterminated, to the end (the parser reports that one). A character
# is either plain or a backslash with what follows, so the repetition stops only at a quote, the end or a
# final backslash, each of which the tail accepts: no match backtracks, and the scan is linear however the
# quotes and backslashes are arranged (without the atomic groups Python 3.10 lacks).
_STRING = re.compile(r'"(?:[^"\\]|\\[\s\S])*(?:"|\\?\Z)')
_BRACKETS = re.compile(r"[][{}]")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class TooDeep(ValueError):
    """The JSON nests arrays and objects deeper than MAX_DEPTH."""

    def __init__(self, depth: int, limit: int) -> None:
        super().__init__(f"JSON nested {depth:,} levels deep, more than the {limit:,} cslint reads")
        self.depth, self.limit = depth, limit


def nesting_depth(text: str) -> int:
    """How deep the text's arrays and objects nest (brackets inside strings do not count)."""
    if text.count("[") + text.count("{") == 0:
        return 0
    brackets = _BRACKETS.findall(_STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def loads(text: str, max_depth: int = MAX_DEPTH) -> Any:
    """`json.loads(text)`, refusing (TooDeep) JSON nested deeper than `max_depth` before parsing it."""
    if text.count("[") + text.count("{") > max_depth:
        depth = nesting_depth(text)
        if depth > max_depth:
            raise TooDeep(depth, max_depth)
    return json.loads(text)
