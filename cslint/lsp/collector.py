"""Garbage collection in the long-lived language server.

The server keeps the indexes and parsed functions of a whole project between analyses (overlay.
WarmIndexes): hundreds of MB of objects. Python's full collections walk all of them, a few hundred ms
each on a large package, and fall inside an edit's analysis now and then (the slowest edits of the
benchmark). So once the project's cache is up to date, and then after every `TIDY_EVERY` analyses,
the server collects what is garbage and freezes the rest (`gc.freeze`): collections then walk only
what was made since. What is frozen and becomes garbage later is unfrozen and collected at the next
tidy, so the server's memory does not grow with the edits.
"""

from __future__ import annotations

import gc

TIDY_EVERY = 50


class Collector:
    def __init__(self, every: int = TIDY_EVERY) -> None:
        self.every = every
        self.analyses = 0

    def analysed(self) -> bool:
        """Count an analysis; whether it is time to tidy."""
        self.analyses += 1
        return self.analyses % self.every == 0

    @staticmethod
    def tidy() -> None:
        gc.unfreeze()
        gc.collect()
        gc.freeze()
