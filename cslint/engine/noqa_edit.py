"""`cslint check --add-noqa`: suppress every current finding with a `# noqa: CODE` on its line.

For adopting cslint on a large codebase: the existing findings are recorded in place, new code is held
to the rules. The comment goes on the line where the finding starts, which is where `# noqa` is read.
A line that cannot carry a comment there (it continues inside a multi-line string or after a backslash)
is left alone and counted as skipped; the finding stays visible.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

from cslint.core.noqa import NOQA
from cslint.core.report import SYNTAX_ERROR, Diagnostic
from cslint.core.sources import ReadError, read_source, write_atomically

LINE_END = re.compile(r"(\r\n|\r|\n)?\Z")


def commentable_lines(text: str) -> dict[int, int | None]:
    """Lines whose end is a token boundary (a trailing comment is allowed there) -> column of the
    comment already on the line, if any."""
    lines: dict[int, int | None] = {}
    try:  # newline=None: a line ends at \r too (old Mac files), as for `splitlines` and the linter
        for token in tokenize.generate_tokens(io.StringIO(text, newline=None).readline):
            if token.type == tokenize.COMMENT:
                lines[token.start[0]] = token.start[1]
            elif token.type in (tokenize.NEWLINE, tokenize.NL):
                lines.setdefault(token.start[0], None)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}
    return lines


def with_noqa(line: str, codes: Iterable[str], comment_column: int | None = None) -> str:
    """`line` with `codes` added to its `# noqa: ...` directive, or a new directive appended."""
    newline = LINE_END.search(line).group(0)  # type: ignore[union-attr]
    body = line[: len(line) - len(newline)]
    match = NOQA.search(body, comment_column) if comment_column is not None else None
    if match is not None:
        existing = match.group("codes")
        if existing is None and match.group("colon"):  # a colon and only a reason: it suppresses nothing
            rest = body[match.end():].lstrip()
            return body[: match.start()] + f"# noqa: {', '.join(sorted(set(codes)))}" + (f"  {rest}" if rest else "") \
                + newline
        if existing is None:  # a bare directive already suppresses everything
            return line
        written = [c for c in re.split(r"[\s,]+", existing) if c]
        merged = written + sorted(set(codes) - {c.upper() for c in written})
        return body[: match.start()] + f"# noqa: {', '.join(merged)}" + body[match.end():] + newline
    return f"{body.rstrip()}  # noqa: {', '.join(sorted(set(codes)))}{newline}"


def add_noqa_to_text(text: str, codes_by_line: dict[int, set[str]]) -> tuple[str, int]:
    """The new text and how many lines received a directive."""
    allowed = commentable_lines(text)
    lines = text.splitlines(keepends=True)
    added = 0
    for number, codes in codes_by_line.items():
        if number not in allowed or not 0 < number <= len(lines):
            continue
        new = with_noqa(lines[number - 1], codes, allowed[number])
        if new != lines[number - 1]:
            lines[number - 1] = new
            added += 1
    return "".join(lines), added


def add_noqa(diagnostics: list[Diagnostic], errors: list[str]) -> tuple[int, int]:
    """Edit the files in place; return (directives added, files edited). Write failures go to `errors`."""
    by_file: dict[Path, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
    for d in diagnostics:
        if d.code != SYNTAX_ERROR:
            by_file[d.path][d.line].add(d.code)
    added_total, edited = 0, 0
    for path, codes_by_line in by_file.items():
        try:
            source = read_source(path)
            source.text, added = add_noqa_to_text(source.text, codes_by_line)
            if added:
                write_atomically(source)
        except (ReadError, OSError) as exc:
            errors.append(f"{path}: cannot add noqa: {exc.strerror if isinstance(exc, OSError) else exc}")
            continue
        added_total += added
        edited += bool(added)
    return added_total, edited
