"""Which ops the lazy backend ran on the CPU while one op was dispatched, from the backend's own counters.

`torch._lazy.metrics` counts every op the backend has no lowering for, run on the CPU, as `aten::<op>` (the
ops it lowered count as `lazy::<op>`). Such an op first copies its lazy inputs to the host through the
backend's `_to_copy`, one counter: the `aten::` counters, all of which must be listed to find a new one,
are read only after an op that moved it.
"""

from __future__ import annotations

import torch._lazy.metrics as metrics

_COPIES = "lazy::_to_copy"


def _copies() -> int:
    return metrics.counter_value(_COPIES) or 0


def _host_counts() -> dict[str, int]:
    return {name: metrics.counter_value(name) or 0 for name in metrics.counter_names() if name.startswith("aten::")}


class HostRuns:
    """Call `before()` ahead of an op and `after(copies)` with what it returned once the op has run."""

    def __init__(self) -> None:
        self.counts = _host_counts()
        self.copies = _copies()

    def before(self) -> int:
        copies = _copies()
        if copies != self.copies:  # something ran between the ops watched: count from what it left
            self.counts = _host_counts()
        return copies

    def after(self, copies: int) -> list[str]:
        """The ops run on the CPU since `before()` returned `copies`, as `aten::<op>` (`aten::_assert_async.msg`)."""
        self.copies = _copies()
        if self.copies == copies:
            return []
        now = _host_counts()
        ran = [name for name, count in now.items() if count > self.counts.get(name, 0)]
        self.counts = now
        return ran
