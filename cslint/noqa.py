"""`# noqa` and `# noqa: WSC101, WSC2` comments, read from the tokens of the lines that have them."""

from __future__ import annotations

import io
import re
import tokenize

NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Za-z]+[0-9]*(?:[\s,]+[A-Za-z]+[0-9]*)*))?", re.IGNORECASE)
ALL = frozenset({"*"})


def noqa_lines(source: str) -> dict[int, frozenset[str]]:
    """Line number -> suppressed codes (or prefixes); ALL for a bare `# noqa`."""
    if "noqa" not in source and "NOQA" not in source:
        return {}
    found: dict[int, frozenset[str]] = {}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return {}
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        match = NOQA.search(token.string)
        if match is None:
            continue
        codes = match.group("codes")
        found[token.start[0]] = ALL if not codes else frozenset(
            c.upper() for c in re.split(r"[\s,]+", codes) if c)
    return found


def is_suppressed(code: str, line: int, table: dict[int, frozenset[str]]) -> bool:
    codes = table.get(line)
    if codes is None:
        return False
    return codes is ALL or any(code.startswith(c) for c in codes)
