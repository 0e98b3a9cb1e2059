"""What a few libcst expressions say on their own: the path a name, an attribute or a string-keyed item
names (`self.count`, `state["step"]`), the text of a string literal."""

from __future__ import annotations

import libcst as cst


def path_key(node: cst.BaseExpression) -> str | None:
    """`self.count` -> "self.count", `state["step"]` -> "state['step']"; None for other expressions."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = path_key(node.value)
        return f"{base}.{node.attr.value}" if base else None
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index) and isinstance(index.value, cst.SimpleString):
            base = path_key(node.value)
            return f"{base}[{index.value.value}]" if base else None
    return None


def string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        text = node.value
        for quote in ('"""', "'''", '"', "'"):
            if text.endswith(quote):
                start = text.find(quote)
                return text[start + len(quote): -len(quote)]
    return None
