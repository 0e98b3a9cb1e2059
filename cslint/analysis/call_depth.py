"""Answers worked out by following calls to a bounded depth, kept so that none depends on which came first.

Library summaries (libraries.py) and per-call answers of small helpers (call_returns.py) follow the calls
a function makes down to a depth limit, and stop at recursion. The same question asked at the top of a
chain goes deeper than when it is asked at the end of a long one, so reusing any answer kept from before
gave the deeper answer only where that question had happened to be asked at the top first: a finding's
message ("and 7 more like it", "and 11 more") changed with the files in scope and the order in which
groups ran, and with what earlier runs had stored. Each answer records how deep its calls went and which
questions it asked; it is reused only where working it out again would go as deep and meet none of the
questions being worked out above it, that is, where working it out again gives the same answer.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Reach:
    """How an answer was worked out: the longest chain of answers under it (itself included), and the
    questions it asked (itself included)."""

    height: int = 1
    asked: frozenset[Hashable] = frozenset()


@dataclass
class _Frame:
    key: Hashable
    height: int = 1
    asked: set[Hashable] = field(default_factory=set)
    cut: bool = False  # it met the depth limit or recursion: its answer holds for this chain of calls only


class CallChain:
    """The questions being worked out, innermost last."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._frames: list[_Frame] = []

    @property
    def keys(self) -> list[Hashable]:
        return [f.key for f in self._frames]

    def reusable(self, reach: Reach | None) -> bool:
        """Whether an answer worked out before, as `reach` says, is what working it out here would give."""
        return reach is not None and len(self._frames) + reach.height <= self.limit and \
            not any(f.key in reach.asked for f in self._frames)

    def reuse(self, reach: Reach) -> None:
        """An answer worked out before is used here: it counts as asked by the one being worked out."""
        if self._frames:
            top = self._frames[-1]
            top.height = max(top.height, reach.height + 1)
            top.asked |= reach.asked

    def reuse_cut(self) -> None:
        """An answer kept for this very chain, cut short when it was worked out: so is every answer above."""
        for frame in self._frames:
            frame.cut = True

    def refused(self, key: Hashable) -> bool:
        """Recursion, or the depth limit: no answer, and every answer being worked out holds only for this
        chain of calls."""
        if len(self._frames) >= self.limit or any(f.key == key for f in self._frames):
            self.reuse_cut()
            return True
        return False

    @contextlib.contextmanager
    def working_out(self, key: Hashable) -> Iterator[_Frame]:
        """`key` is worked out inside the block; the frame says, after it, whether the answer was cut short
        (`cut`) and how it was reached (`reach(frame)`)."""
        frame = _Frame(key, asked={key})
        self._frames.append(frame)
        try:
            yield frame
        finally:
            self._frames.pop()
        self.reuse(reach(frame))


def reach(frame: _Frame) -> Reach:
    return Reach(frame.height, frozenset(frame.asked))
