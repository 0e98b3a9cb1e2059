"""Reachability over a directed graph given as a mapping of edges."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def reachable(start: Iterable[str], edges: Mapping[str, Iterable[str]]) -> set[str]:
    """`start` and every node reached from it along `edges`."""
    seen = set(start)
    stack = list(seen)
    while stack:
        for nxt in edges.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen
