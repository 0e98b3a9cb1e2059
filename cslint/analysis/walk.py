"""A fast pre-order walk over a libcst tree, for dispatching rules.

libcst's visitor calls several hooks per node and per attribute and costs ~17x more than reading the
dataclass fields directly. Whitespace, parentheses and punctuation fields are never walked: no rule
visits them (rules read operators from their parent node).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import libcst as cst

_NOT_WALKED = frozenset({
    "lpar", "rpar", "comma", "semicolon", "header", "footer", "leading_lines", "lines_after_decorators",
    "equal", "colon", "dot", "star", "default_indent", "default_newline", "operator", "indent", "newline",
    "trailing_whitespace", "asynchronous", "arrow", "walrus", "prefix", "quote", "start", "end",
})
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(node_type: type) -> tuple[str, ...]:
    fields = _CHILD_FIELDS.get(node_type)
    if fields is None:
        fields = tuple(f.name for f in dataclasses.fields(node_type)
                       if f.name not in _NOT_WALKED and not f.name.startswith("whitespace"))
        _CHILD_FIELDS[node_type] = fields
    return fields


def iter_nodes(root: cst.CSTNode, prune: tuple[type, ...] = ()) -> Iterator[cst.CSTNode]:
    """`root` and its descendants, parents before children, in source order; below a node whose type is
    in `prune` nothing is yielded (the node itself is)."""
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        yield node
        if prune and type(node) in prune:
            continue
        children: list[cst.CSTNode] = []
        for name in _child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                children.append(value)
            elif type(value) in (list, tuple):
                children.extend(item for item in value if isinstance(item, cst.CSTNode))
        stack.extend(reversed(children))
