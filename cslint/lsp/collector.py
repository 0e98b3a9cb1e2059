"""Garbage collection in the long-lived language server.

The server keeps the indexes and parsed functions of a whole project between analyses (overlay.
WarmIndexes): hundreds of MB of objects. Python's full collections walk all of them, a noticeable pause
each on a large package, and fall inside an edit's analysis now and then (the slowest edits). So once
the project's cache is up to date, and then after every `TIDY_EVERY` analyses, the server collects what
is garbage and freezes the rest (`gc.freeze`): collections then walk only what was made since. What is
frozen and becomes garbage later is unfrozen and collected at the next tidy, so the server's memory does
not grow with the edits. A tidy takes as long as a full collection, so one that is due waits until no
analysis has run for `TIDY_WHEN_IDLE` seconds (the user stopped typing): an edit's answer does not wait
for it while edits come, unless `TIDY_EVERY` more analyses came without such a pause (then the memory
kept wins).
"""

from __future__ import annotations

import gc

TIDY_EVERY = 50
TIDY_WHEN_IDLE = 1.0  # seconds


class Collector:
    def __init__(self, every: int = TIDY_EVERY, idle: float = TIDY_WHEN_IDLE) -> None:
        self.every = every
        self.idle = idle
        self.analyses = 0
        self.due = False  # a tidy waits for a pause
        self.due_at = 0  # the analysis it became due after
        self.last = float("-inf")  # when the last analysis ended

    def analysed(self, now: float = 0.0) -> bool:
        """Count an analysis (ended at `now`); whether a tidy is due (to be done when idle)."""
        self.analyses += 1
        self.last = now
        if self.analyses % self.every == 0 and not self.due:
            self.due, self.due_at = True, self.analyses
        return self.due

    def overdue(self) -> bool:
        """Whether a due tidy waited `every` analyses for a pause: it is done now (and no longer due)."""
        if self.due and self.analyses - self.due_at >= self.every:
            self.due = False
            return True
        return False

    def tidy_now(self, now: float, busy: bool) -> bool:
        """Whether to tidy at `now`: one is due and no analysis runs or ran for `idle` seconds."""
        if not self.due or busy or now - self.last < self.idle:
            return False
        self.due = False
        return True

    @staticmethod
    def tidy() -> None:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
