"""Ctrl-C while cslint writes a set of fixed files takes effect once they are all written.

An interrupt during the analysis cancels the run before any write (KeyboardInterrupt, exit 130). Once the
writes have started they finish first (each file is replaced atomically; the whole set takes milliseconds),
so an interrupted `--fix` never leaves a project with some files fixed and the rest not; the interrupt is
raised right after. The served child is interrupted the same way when its client hangs up.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

HELD = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def interrupts_held() -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():  # only the main thread handles signals
        yield
        return
    arrived: list[int] = []
    previous = {}
    for number in HELD:
        handler = signal.getsignal(number)
        if handler is None or handler == signal.SIG_IGN:
            continue
        previous[number] = signal.signal(number, lambda received, _frame: arrived.append(received))
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    if arrived:
        raise KeyboardInterrupt
