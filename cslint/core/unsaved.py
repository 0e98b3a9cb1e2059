"""Text that stands in for files while one analysis runs: standard input, an editor's unsaved buffers.

Every read of a file's text (`sources.read_source`, the incremental survey) asks `unsaved_text` first; the
rest of the project is read from disk as usual (engine/overlay.py lints such texts in their project).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

_buffers: ContextVar[Mapping[str, str] | None] = ContextVar("cslint_unsaved_buffers", default=None)


def buffer_key(path: Path) -> str:
    return os.path.abspath(path)


def unsaved_text(path: Path) -> str | None:
    """The text standing in for `path` in the current analysis, if any."""
    buffers = _buffers.get()
    return buffers.get(buffer_key(path)) if buffers else None


def overlaid() -> bool:
    """Whether some file's text comes from an overlay in the current analysis."""
    return bool(_buffers.get())


@contextmanager
def unsaved_buffers(texts: Mapping[Path, str]) -> Iterator[None]:
    token = _buffers.set({buffer_key(path): text for path, text in texts.items()})
    try:
        yield
    finally:
        _buffers.reset(token)
