"""Colour in the human-readable reports, decided as ruff decides it (its `colored` crate): on when
standard output is a terminal; `FORCE_COLOR` (non-empty) forces it on, over everything; else
`CLICOLOR_FORCE` (set, not `0`) forces it on; else `NO_COLOR` (set) or `CLICOLOR=0` turns it off.

Only cslint's own parts of a line are styled (path, code, the `[*]` marker, labels); the text taken from
the linted file is escaped first (output/escape.py), so a file can never emit its own escape sequences.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

RESET = "\x1b[0m"
CODES = {"bold": "1", "red": "31", "green": "32", "cyan": "36"}


def colour_wanted(stream: object, environ: Mapping[str, str] = os.environ) -> bool:
    if environ.get("FORCE_COLOR"):
        return True
    force = environ.get("CLICOLOR_FORCE")
    if force is not None and force != "0":
        return True
    if "NO_COLOR" in environ or environ.get("CLICOLOR") == "0":
        return False
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False


class Style:
    """Wraps text in ANSI styles when enabled, else returns it unchanged."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not text:
            return text
        return f"\x1b[{';'.join(CODES[s] for s in styles)}m{text}{RESET}"


PLAIN = Style(False)
