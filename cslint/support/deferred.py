"""Work the user does not wait for, such as writing the cache: done at once in a normal run; in a server
child (`cslint check --server`), done after the report and the exit code have reached the client."""

from __future__ import annotations

from collections.abc import Callable

_pending: list[Callable[[], object]] | None = None


def defer(work: Callable[[], object]) -> None:
    if _pending is None:
        work()
    else:
        _pending.append(work)


def start_deferring() -> None:
    global _pending
    _pending = []


def run_deferred() -> None:
    global _pending
    pending, _pending = _pending or [], None
    for work in pending:
        work()
