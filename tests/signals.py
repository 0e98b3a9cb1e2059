"""Signal dispositions for a child process a test signals."""

from __future__ import annotations

import signal


def as_on_a_terminal() -> None:
    """In the child before it starts (a `preexec_fn`): Ctrl-C, SIGTERM and SIGHUP as on a terminal. A test
    run started as a background job ignores SIGINT (the shell does that), and one under `nohup` ignores
    SIGHUP; children inherit both, and cslint rightly leaves an ignored signal ignored."""
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, signal.SIG_DFL)
