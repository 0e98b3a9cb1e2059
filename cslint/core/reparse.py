"""Python's tree of an edited buffer from its tree before the edit: only the top-level statements the edit
touched are parsed again.

An editor's analysis indexes the edited buffer with Python's parser on every keystroke; on a large model
file that parse is a large part of the edit's cost, though a keystroke changes one statement. Top-level
statements are parsed independently of one another: each starts a logical line at column 0, and one
that parses alone ends with no open bracket, string or continuation. So the new tree is the old one's
statements before the first changed line and after the last (unchanged text), with the lines between
parsed on their own. When the edit changed the number of lines, the statements after it keep their
nodes and line numbers, and the tree says how far each moved (line_shifts.py: renumbering them would
cost much of a parse); the statements parsed again are numbered from the start of their lines, and moved
by that many. For texts with lone carriage returns (which Python and we count differently) or a
parser-changing `__future__` import there is no answer and the caller parses the whole text. Nodes are
shared with the old tree and never changed (the old tree may still be read, e.g. by a hover).
"""

from __future__ import annotations

import ast

from cslint.support.line_shifts import line_shifts, shifted_module
from cslint.core.sources import for_parser


def reparse(old_text: str, old_tree: ast.Module, new_text: str) -> ast.Module | None:
    """`ast.parse(new_text)` but for the line shifts of its statements (line_shifts.py), from `old_tree`
    (the same of `old_text`); None when it cannot be told cheaply (or the changed statements do not
    parse: the caller's own parse then says why)."""
    if "\r" in old_text or "\r" in new_text or "barry_as_FLUFL" in new_text:
        return None
    old_lines, new_lines = old_text.splitlines(keepends=True), new_text.splitlines(keepends=True)
    shorter = min(len(old_lines), len(new_lines))
    same_start = 0
    while same_start < shorter and old_lines[same_start] == new_lines[same_start]:
        same_start += 1
    same_end = 0
    while same_end < shorter - same_start and old_lines[-1 - same_end] == new_lines[-1 - same_end]:
        same_end += 1
    first_changed, last_changed = same_start + 1, len(old_lines) - same_end  # 1-based, in the old text
    shift = len(new_lines) - len(old_lines)
    before: list[tuple[ast.stmt, int]] = []  # statements with how far they had moved (line_shifts.py)
    after: list[tuple[ast.stmt, int]] = []
    for stmt, moved in zip(old_tree.body, line_shifts(old_tree)):
        if _end(stmt) + moved < first_changed:
            before.append((stmt, moved))
        elif _start(stmt) + moved > last_changed:
            after.append((stmt, moved))
    from_line = _end(before[-1][0]) + before[-1][1] if before else 0  # lines of the new text after it
    if before and old_lines[from_line - 1].rstrip("\n").endswith("\\"):
        return None
    to_line = _start(after[0][0]) + after[0][1] - 1 + shift if after else len(new_lines)
    try:
        middle = ast.parse(for_parser("".join(new_lines[from_line:to_line])))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return shifted_module([*(s for s, _ in before), *middle.body, *(s for s, _ in after)],
                          [*(m for _, m in before), *[from_line] * len(middle.body), *(m + shift for _, m in after)])


def _start(stmt: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(stmt, "decorator_list", [])
    return min([stmt.lineno, *(d.lineno for d in decorators)])


def _end(stmt: ast.stmt) -> int:
    return stmt.end_lineno or stmt.lineno
