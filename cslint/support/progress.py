"""What a long run is doing, on standard error: the phase, files done out of the total, seconds so far.

On a terminal, one line rewritten in place, shown only once a run has taken a second (a quick run
prints nothing) and wiped when the run ends, so the report starts on a clean line. With `--progress`,
plain lines every few seconds, for CI logs. Nothing otherwise (`-q`, or standard error not a terminal).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

SHOW_AFTER = 1.0  # seconds before a terminal line appears
TERMINAL_EVERY = 0.1
LINES_EVERY = 5.0


class Progress:
    def __init__(self, stream: TextIO | None = None, mode: str | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """`mode`: "terminal", "lines" or None (nothing is written)."""
        self.stream = stream
        self.mode = mode if stream is not None else None
        self.clock = clock
        self.started = clock()
        self.name = ""
        self.done = 0
        self.total = 0
        self._last = float("-inf")
        self._shown = False
        self._lock = threading.Lock()

    @classmethod
    def off(cls) -> Progress:
        return cls()

    def phase(self, name: str, total: int = 0) -> None:
        with self._lock:
            self.name, self.done, self.total = name, 0, total
            self._show(force=self.mode == "lines")

    def advance(self, n: int = 1) -> None:
        with self._lock:
            self.done += n
            self._show()

    def finish(self) -> None:
        with self._lock:
            if self.mode == "terminal" and self._shown:
                self._write("\r\x1b[K")
            self._shown = False

    def text(self) -> str:
        counted = f" {self.done:,}/{self.total:,} files" if self.total else ""
        return f"cslint: {self.name}{counted}, {self.clock() - self.started:.0f} s"

    def _show(self, force: bool = False) -> None:
        if self.mode is None:
            return
        now = self.clock()
        if self.mode == "terminal":
            if now - self.started < SHOW_AFTER or now - self._last < TERMINAL_EVERY:
                return
            self._write(f"\r{self.text()}\x1b[K")
        else:
            if not force and now - self._last < LINES_EVERY:
                return
            self._write(self.text() + "\n")
        self._last = now
        self._shown = True

    def _write(self, text: str) -> None:
        assert self.stream is not None
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr is no reason to stop the run
            self.mode = None
