"""Reachability and connected components of small graphs of file and function names."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

T = TypeVar("T", bound=Hashable)


def reachable(start: Iterable[T], successors: Callable[[T], Iterable[T]]) -> set[T]:
    """`start` and every node reached from it through `successors`."""
    seen = set(start)
    stack = list(seen)
    while stack:
        for nxt in successors(stack.pop()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def connected(nodes: Iterable[T], links: Iterable[tuple[T, T]]) -> list[set[T]]:
    """The connected components of the undirected graph of `nodes` and `links` (both ends in `nodes`)."""
    parent = {node: node for node in nodes}

    def find(node: T) -> T:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for a, b in links:
        parent[find(a)] = find(b)
    components: dict[T, set[T]] = {}
    for node in parent:
        components.setdefault(find(node), set()).add(node)
    return list(components.values())
