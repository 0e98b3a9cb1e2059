"""Garbage collection in the long-lived language server.

The server keeps the indexes and parsed functions of a whole project between analyses (overlay.
WarmIndexes): hundreds of MB of objects. Python's full collections walk all of them, a noticeable pause
each on a large package, and fall inside an edit's analysis now and then (the slowest edits). So once
the project's cache is up to date, and then after every `TIDY_EVERY` analyses, the server collects what
is garbage and freezes the rest (`gc.freeze`): collections then walk only what was made since. What is
frozen and becomes garbage later is unfrozen and collected at the next tidy, so the server's memory does
not grow with the edits. A tidy takes as long as a full collection, so one that is due waits until no
analysis has run for `TIDY_WHEN_IDLE` seconds (the user stopped typing): an edit's answer does not wait
for it while edits come, unless `TIDY_EVERY` more analyses came without such a pause. That overdue tidy is a
young one (`catch_up`): it collects and freezes only what was made since the last freeze, a fraction of a
full collection's walk, so typing without a pause does not stall an edit on the whole project's objects.
Every `FULL_EVERY`-th overdue tidy is full, so what was frozen and died since is still collected when the
edits never pause.

Opening a file makes its indexes, kept for every edit after; left young, the next collection of the old
generation (Python's own, at its thresholds) walks them, and that is the file's first edit. So an open's
analysis ends with a tidy before its diagnostics go out (`after_open`): young, or the full one if one is
due; an open has a larger budget than an edit.
"""

from __future__ import annotations

import gc

TIDY_EVERY = 50
TIDY_WHEN_IDLE = 1.0  # seconds
FULL_EVERY = 10  # overdue tidies, one in this many full


class Collector:
    def __init__(self, every: int = TIDY_EVERY, idle: float = TIDY_WHEN_IDLE, full_every: int = FULL_EVERY) -> None:
        self.every = every
        self.idle = idle
        self.full_every = full_every
        self.young = 0  # overdue tidies since the last full one
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

    def tidy(self) -> None:
        """A full tidy: everything, frozen or not, walked once."""
        self.young = 0
        gc.unfreeze()
        gc.collect()
        gc.freeze()

    def after_open(self) -> None:
        if self.due:
            self.due = False
            self.tidy()
        else:
            gc.collect()
            gc.freeze()

    def catch_up(self) -> None:
        """The tidy done when one is overdue: young, but full every `full_every`-th time."""
        self.young += 1
        if self.young >= self.full_every:
            self.tidy()
        else:
            gc.collect()
            gc.freeze()
