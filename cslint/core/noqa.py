"""`# noqa` and `# noqa: WSC101, WSC2` comments, read from the tokens of the lines that have them."""

from __future__ import annotations

import io
import re
import tokenize

# Codes are letters then digits (as in ruff): words after them (`# noqa: E501  keep short`) are a reason.
NOQA = re.compile(r"#\s*noqa(?P<colon>:\s*(?P<codes>[A-Za-z]+[0-9]+(?:[\s,]+[A-Za-z]+[0-9]+)*)?)?",
                  re.IGNORECASE)
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
        if match.group("colon") and not codes:
            continue  # a directive with a colon and no code (only a reason) suppresses nothing, as in ruff
        found[token.start[0]] = ALL if not codes else frozenset(
            c.upper() for c in re.split(r"[\s,]+", codes) if c)
    return found


def is_suppressed(code: str, line: int, table: dict[int, frozenset[str]]) -> bool:
    codes = table.get(line)
    if codes is None:
        return False
    return codes is ALL or any(code.startswith(c) for c in codes)
