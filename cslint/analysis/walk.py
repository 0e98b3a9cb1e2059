"""A fast pre-order walk over a libcst tree, for dispatching rules.

libcst's visitor calls several hooks per node and per attribute and costs many times more than reading
the dataclass fields directly. Whitespace, parentheses and punctuation fields are never walked: no rule
visits them (rules read operators from their parent node).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator, Sequence
from itertools import islice, repeat

import libcst as cst

_NOT_WALKED = frozenset({
    "lpar", "rpar", "comma", "semicolon", "header", "footer", "leading_lines", "lines_after_decorators",
    "equal", "colon", "dot", "star", "default_indent", "default_newline", "operator", "indent", "newline",
    "trailing_whitespace", "asynchronous", "arrow", "walrus", "prefix", "quote", "start", "end",
})
class _Plans(dict):  # type: ignore[type-arg]
    """type -> the fields a walk reads, in source order, each with whether it is a sequence. Fields
    typed `str` (a name's or a number's text) never hold a node and are not read; a field typed as a
    sequence holds nodes only; any other field may hold a node, None or a sentinel."""

    def __missing__(self, node_type: type) -> tuple[tuple[str, bool], ...]:
        self[node_type] = plan = tuple(
            (f.name, typing.get_origin(f.type) is Sequence) for f in dataclasses.fields(node_type)
            if f.name not in _NOT_WALKED and not f.name.startswith("whitespace") and f.type is not str)
        return plan


_PLANS = _Plans()


class _NodeTypes(dict):  # type: ignore[type-arg]
    """type -> whether it is a CSTNode: `isinstance` against libcst's abstract base class goes through
    ABCMeta, several times slower than a dictionary look-up, and a walk asks it for every field."""

    def __missing__(self, kind: type) -> bool:
        self[kind] = found = issubclass(kind, cst.CSTNode)
        return found


_IS_NODE = _NodeTypes()


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    children: list[cst.CSTNode] = []
    is_node = _IS_NODE
    for name, many in _PLANS[type(node)]:
        value = getattr(node, name)
        if many:
            children.extend(value)
            continue
        kind = type(value)
        if kind is list or kind is tuple:  # a field that is a sequence or a node (`from m import *`)
            children.extend(item for item in value if is_node[type(item)])
        elif is_node[kind]:
            children.append(value)
    return children


child_nodes = _children  # a node's children, in source order


def iter_nodes(root: cst.CSTNode, prune: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
    """`root` and its descendants, parents before children, in source order; below a node whose type is
    in `prune` nothing is yielded (the node itself is)."""
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        yield node
        if prune and type(node) in prune:
            continue
        stack.extend(reversed(_children(node)))


def iter_with_parents(root: cst.CSTNode, prune: tuple[type, ...] = ()
                      ) -> Iterator[tuple[cst.CSTNode, cst.CSTNode | None]]:
    """Like `iter_nodes`, each node with its parent (None for `root`)."""
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(root, None)]
    while stack:
        node, parent = stack.pop()
        yield node, parent
        if prune and type(node) in prune:
            continue
        children = _children(node)
        if children:
            children.reverse()
            stack.extend(zip(children, repeat(node)))


class FlatTree:
    """A subtree's nodes in pre-order, each with the index just past its own subtree: walked once, then
    any part of it can be walked again, with any pruning, by reading a list instead of asking every node
    for its children (the rules of a traced function scan its body several times)."""

    __slots__ = ("nodes", "ends", "_index", "_types")

    def __init__(self, root: cst.CSTNode) -> None:
        nodes: list[cst.CSTNode] = []
        ends: list[int] = []
        stack: list[cst.CSTNode | int] = [root]  # an int: the subtree started at that index ends here
        while stack:
            item = stack.pop()
            if type(item) is int:
                ends[item] = len(nodes)
                continue
            index = len(nodes)
            nodes.append(item)  # type: ignore[arg-type]
            children = _children(item)  # type: ignore[arg-type]
            if children:
                ends.append(0)
                stack.append(index)
                children.reverse()
                stack.extend(children)
            else:
                ends.append(index + 1)
        self.nodes = nodes
        self.ends = ends
        self._index: dict[int, int] | None = None  # most walks start at the root: built when a part is walked
        self._types: set[type] | None = None  # the node types in the tree, built when a walk prunes

    def walk(self, root: cst.CSTNode | None = None, prune: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
        """What `iter_nodes(root, prune)` yields, in the same order (`root` defaults to the tree's own and
        need not be in this tree)."""
        nodes = self.nodes
        start = 0 if root is None else self.position(root)
        if start is None:
            return iter_nodes(root, prune)  # type: ignore[arg-type]
        stop = self.ends[start]
        if prune:
            if self._types is None:
                self._types = set(map(type, nodes))
            if not self._types.isdisjoint(prune):
                return self._pruned(start, stop, prune)
        return iter(nodes) if start == 0 else islice(nodes, start, stop)  # nothing to prune: read the list

    def position(self, node: cst.CSTNode) -> int | None:
        """The node's index in `nodes` (None if it is not in this tree); its subtree ends at `ends[index]`."""
        if node is self.nodes[0]:
            return 0
        if self._index is None:
            self._index = {id(n): i for i, n in enumerate(self.nodes)}
        return self._index.get(id(node))

    def _pruned(self, start: int, stop: int, prune: tuple[type, ...]) -> Iterator[cst.CSTNode]:
        nodes, ends = self.nodes, self.ends
        i = start
        while i < stop:
            node = nodes[i]
            yield node
            i = ends[i] if type(node) in prune else i + 1


def _hooks(visitor_type: type, node_type: type) -> tuple[object, object]:
    """The visitor's own visit_X / leave_X for a node type (None where it keeps libcst's no-op). Kept
    on the visitor class, not in a global table: classes defined inside functions close over the nodes
    they collect, and a global table would keep every such class, and its nodes, for good."""
    table = visitor_type.__dict__.get("_walk_hooks")
    if table is None:
        table = {}
        visitor_type._walk_hooks = table  # type: ignore[attr-defined]
    found = table.get(node_type)
    if found is None:
        name = node_type.__name__
        visit_hook = getattr(visitor_type, f"visit_{name}", None)
        leave_hook = getattr(visitor_type, f"leave_{name}", None)
        found = (visit_hook if visit_hook is not getattr(cst.CSTVisitor, f"visit_{name}", None) else None,
                 leave_hook if leave_hook is not getattr(cst.CSTVisitor, f"leave_{name}", None) else None)
        table[node_type] = found
    return found


def visit(root: cst.CSTNode, visitor: cst.CSTVisitor) -> None:
    """Run a read-only libcst visitor over `root` on the fast walk: `visit_X` (returning False skips the
    children), `leave_X` and an overridden `on_visit` are honoured; `CSTNode.visit` would rebuild every
    node it passes. The fields `iter_nodes` skips (whitespace, punctuation) are not visited."""
    generic = type(visitor).on_visit is not cst.CSTVisitor.on_visit
    stack: list[tuple[cst.CSTNode, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        visit_hook, leave_hook = _hooks(type(visitor), type(node))
        if leaving:
            leave_hook(visitor, node)  # type: ignore[operator]
            continue
        if generic:
            descend = visitor.on_visit(node)
        else:
            descend = visit_hook(visitor, node) is not False if visit_hook is not None else True  # type: ignore[operator]
        if leave_hook is not None:
            stack.append((node, True))
        if not descend:
            continue
        stack.extend((child, False) for child in reversed(_children(node)))


def bound_names(target: cst.BaseExpression) -> Iterator[cst.Name]:
    """The names an assignment or loop target binds: `a`, `a, (b, *c)`, `[a, b]`."""
    if isinstance(target, cst.Name):
        yield target
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from bound_names(element.value)
    elif isinstance(target, cst.StarredElement):
        yield from bound_names(target.value)
