"""Where a project's text calls a name, and from which of its indexed functions: the callers an entry point
has in view (entry_points.py), read from the files' text so that finding them parses nothing.

A call is found by its name (`name(`, `obj.name(`), not resolved: a function and a method of another class
with the same name share their call sites. That errs towards more callers, so a function that has one in
step code stays an entry point. A name a function hands on as a value (`partial(fn)`, `fallback=fn`) is
called where the value goes, which the text does not say. A call site is in the innermost indexed function
whose span holds it, else in a class body or at module level, both of which run when the module is
imported. A file whose functions have no spans (indexed from libcst, or with lone carriage returns) cannot
say where its calls are: its call sites are in an unknown place. Only the modules given are read: when a
package is linted, a file's group (its import closure), not the files importing it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

from cslint.analysis.index import FunctionInfo, ModuleInfo

_CALL = re.compile(r"(?<![\w])(?<!def )(?<!class )([A-Za-z_]\w*)\s*\(")
# a line of a docstring's example or a comment, where a name followed by `(` is no call
_NOT_CODE = re.compile(r"\s*(?:>>>|\.\.\.|#)")
_TRIPLE_QUOTE = re.compile(r'"""|\'\'\'')

# a name handed on as a value (`partial(fn, ...)`, `fallback=fn`, `{"mean": fn}`, `return fn`): where it is
# called then is not in the text
_VALUE = re.compile(r"(?:[(,=:\[]|\breturn)[ \t]*([A-Za-z_]\w*)[ \t]*(?=[),\]}\n])")

IMPORT_TIME = "import time"  # a call site in a class body or at module level
UNKNOWN_PLACE = "unknown"  # a call site in a file whose functions have no spans


@dataclass(frozen=True)
class CallSite:
    module: ModuleInfo
    caller: FunctionInfo | str  # the function it is in, or IMPORT_TIME / UNKNOWN_PLACE


class CallNames:
    """The call sites of every name in `modules`' text."""

    def __init__(self, modules: Iterable[ModuleInfo]) -> None:
        self._sites: dict[str, list[CallSite]] = {}
        self._values: set[str] = set()
        for module in modules:
            self._index(module)

    def sites(self, name: str) -> list[CallSite]:
        return self._sites.get(name, [])

    def handed_on(self, name: str) -> bool:
        """Whether a function's code hands `name` on as a value (then it is called where the value goes)."""
        return name in self._values

    def _index(self, module: ModuleInfo) -> None:
        text = module.source
        functions = [*module.functions.values(), *(m for cls in module.classes.values() for m in cls.methods.values())]
        spans = sorted(((f.span.start, f.span.end, f) for f in functions if f.span is not None),
                       key=lambda s: s[0])
        known = len(spans) == len(functions)
        starts = [start for start, _, _ in spans]
        for match in _VALUE.finditer(text):  # in functions only: at module level, import lists look the same
            i = bisect_right(starts, match.start(1)) - 1
            if i >= 0 and match.start(1) < spans[i][1]:
                self._values.add(match.group(1))
        line_starts: list[int] | None = None
        quotes: list[int] | None = None
        for match in _CALL.finditer(text):
            at = match.start(1)
            caller: FunctionInfo | str = UNKNOWN_PLACE
            if known:
                i = bisect_right(starts, at) - 1  # indexed functions do not nest: the last that starts before it
                caller = spans[i][2] if i >= 0 and at < spans[i][1] else IMPORT_TIME
                if caller == IMPORT_TIME:
                    if line_starts is None or quotes is None:
                        line_starts = [0, *(m.end() for m in re.finditer("\n", text))]
                        quotes = [m.start() for m in _TRIPLE_QUOTE.finditer(text)]
                    line_start = line_starts[bisect_right(line_starts, at) - 1]
                    if _NOT_CODE.match(text, line_start) or bisect_right(quotes, at) % 2:
                        continue  # a comment, a docstring's text
            self._sites.setdefault(match.group(1), []).append(CallSite(module, caller))
