"""Open documents edited without copying them line by line.

pygls applies an incremental change by splitting the whole text into lines and writing them all out
again: on a huge document (one over `max-file-size`, say) every keystroke then costs a line object per
line and a pass of Python over all of them. Here a change is applied by finding the offsets of the two
lines it touches, counting line ends with `str.count`, and joining the text before the change, the
new text and the text after it once. Positions are converted by pygls' codec exactly as before, so the
resulting text is the one pygls would make. A text holding any line separator but `\\n` (a CR, so
CRLF text too, or the others `str.splitlines` splits at) is left to pygls.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from itertools import islice
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

_OTHER_SEPARATORS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_SEPARATORS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_LINE = re.compile(f"[^{_SEPARATORS}]*(?:\r\n|[{_SEPARATORS}])|[^{_SEPARATORS}]+\\Z")
_BLOCK = 1 << 20


def leading_lines(text: str, count: int) -> list[str]:
    """The first `count` lines of `text` as `text.splitlines(keepends=True)` has them, without splitting
    the rest."""
    return [match.group(0) for match in islice(_LINE.finditer(text), max(count, 0))]


class _Lines(Sequence[str]):
    """The lines of a text whose only line ends are `\\n` (after CRs were ruled out), found on demand."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.count = text.count("\n") + (1 if text and not text.endswith("\n") else 0)

    def __len__(self) -> int:
        return self.count

    def start(self, index: int) -> int:
        """The offset line `index` starts at: `index` newlines counted a block at a time, then found."""
        text, offset, remaining = self.text, 0, index
        while remaining:
            block = text.count("\n", offset, offset + _BLOCK)
            if block >= remaining or offset + _BLOCK >= len(text):
                break
            remaining -= block
            offset += _BLOCK
        for _ in range(remaining):
            offset = text.index("\n", offset) + 1
        return offset

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            raise TypeError("lines are found one at a time")
        index = index + self.count if index < 0 else index
        if not 0 <= index < self.count:
            raise IndexError(index)
        start = self.start(index)
        end = self.text.find("\n", start)
        return self.text[start:] if end < 0 else self.text[start:end + 1]

    def __iter__(self) -> Iterator[str]:
        return iter(self.text.splitlines(keepends=True))


class LeanTextDocument(TextDocument):
    def _apply_incremental_change(self, change: types.TextDocumentContentChangePartial) -> None:
        source = self.source
        if not source or any(separator in source for separator in _OTHER_SEPARATORS):
            super()._apply_incremental_change(change)
            return
        lines = _Lines(source)
        rng = self._position_codec.range_from_client_units(lines, change.range)
        if (rng.end.line, rng.end.character) < (rng.start.line, rng.start.character):
            super()._apply_incremental_change(change)  # a backward range: as pygls makes of it
            return
        start = _offset(lines, rng.start.line, rng.start.character)
        end = _offset(lines, rng.end.line, rng.end.character)
        self._source = "".join((source[:start], change.text, source[end:]))


def _offset(lines: _Lines, line: int, character: int) -> int:
    """The offset of a server position, as pygls' own loop places it (a column past the line's end is
    its end, newline included)."""
    start = lines.start(line)
    return start + min(character, len(lines[line]))


def lean_documents(workspace: Workspace) -> None:
    """Make the workspace's text documents (those opened from now on) `LeanTextDocument`s."""
    def create(doc_uri: str, source: str | None = None, version: int | None = None,
               language_id: str | None = None) -> TextDocument:
        return LeanTextDocument(doc_uri, source=source, version=version, language_id=language_id,
                                sync_kind=workspace._sync_kind, position_codec=workspace.position_codec)

    workspace._create_text_document = create  # type: ignore[method-assign]
