"""Python's tree of an edited buffer from its tree before the edit: only the top-level statements the edit
touched are parsed again.

An editor's analysis indexes the edited buffer with Python's parser on every keystroke; on a 40 kB model
file that parse is a fifth of the edit's cost, though a keystroke changes one statement. Top-level
statements are parsed independently of one another: each starts a logical line at column 0, and one
that parses alone ends with no open bracket, string or continuation. So the new tree is the old one's
statements before the first changed line and after the last (unchanged text), with the lines between
parsed on their own. When the edit changed the number of lines and statements follow it, their line
numbers would have to be shifted, which costs as much as a parse: then, and for texts with lone
carriage returns (which Python and we count differently) or a parser-changing `__future__` import,
there is no answer and the caller parses the whole text. Nodes are shared with the old tree and never
changed (the old tree may still be read, e.g. by a hover).
"""

from __future__ import annotations

import ast

from cslint.sources import for_parser


def reparse(old_text: str, old_tree: ast.Module, new_text: str) -> ast.Module | None:
    """`ast.parse(new_text)`, from `old_tree` (`ast.parse(old_text)`); None when it cannot be told cheaply
    (or the changed statements do not parse: the caller's own parse then says why)."""
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
    before, after = [], []
    for stmt in old_tree.body:
        if (stmt.end_lineno or stmt.lineno) < first_changed:
            before.append(stmt)
        elif _start(stmt) > last_changed:
            after.append(stmt)
    if after and shift:
        return None
    if before and old_lines[(before[-1].end_lineno or before[-1].lineno) - 1].rstrip("\n").endswith("\\"):
        return None
    from_line = (before[-1].end_lineno or before[-1].lineno) if before else 0  # lines of the new text after it
    to_line = _start(after[0]) - 1 + shift if after else len(new_lines)
    try:
        middle = ast.parse(for_parser("".join(new_lines[from_line:to_line])))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    if from_line:
        ast.increment_lineno(middle, from_line)
    return ast.Module(body=[*before, *middle.body, *after], type_ignores=[])


def _start(stmt: ast.stmt) -> int:
    return min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
