"""Whether a value read back from JSON has the shape a field expects, before it is trusted.

A kind is `int`, `str`, `None`, `[str]` (a list of strings), `[str]*N` (of length N), `[dict]`, a name the
caller gives a test for (`extra`), or several of these joined by `|`; a trailing `?` lets the field be
absent (`ABSENT`: pass `data.get(name, ABSENT)`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

ABSENT = object()


def matches(value: Any, kind: str, extra: Mapping[str, Callable[[Any], bool]] | None = None) -> bool:
    if value is ABSENT:
        return kind.endswith("?")
    kind = kind.rstrip("?")
    if "|" in kind:
        return any(matches(value, k, extra) for k in kind.split("|"))
    if kind == "None":
        return value is None
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "[site]":  # [path, line, code], each
        return isinstance(value, list) and all(
            isinstance(v, list) and len(v) == 3 and matches(v[0], "str") and matches(v[1], "int")
            and matches(v[2], "str") for v in value)
    if kind == "[dict]":
        return isinstance(value, list) and all(isinstance(v, dict) for v in value)
    if kind.startswith("[str]"):
        length = int(kind[6:]) if kind.startswith("[str]*") else None
        return isinstance(value, list) and all(isinstance(v, str) for v in value) and \
            (length is None or len(value) == length)
    if extra is not None and kind in extra:
        return extra[kind](value)
    raise AssertionError(kind)
