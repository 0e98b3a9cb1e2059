"""Fewer passes of Python's cycle collector while a tree is analysed.

An analysis keeps hundreds of thousands of objects alive (every file's index, the trees in the budget)
while parsing allocates millions more. With CPython's default thresholds (700, 10, 10) a collection
starts every 700 allocations and a full one, walking every live object, every hundred of those: on a
large project that was a large share of a cold run. The thresholds below keep the findings and the
peak memory the same: trees and analyses are freed by reference counting, not by the collector, and
short-lived cycles such as a rule's local visitor class still die young.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

THRESHOLDS = (100_000, 50, 1_000)


@contextmanager
def fewer_collections() -> Iterator[None]:
    previous = gc.get_threshold()
    gc.set_threshold(*THRESHOLDS)
    try:
        yield
    finally:
        gc.set_threshold(*previous)
