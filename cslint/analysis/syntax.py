"""What a few libcst expressions say on their own: the path a name, an attribute or a string-keyed item
names (`self.count`, `state["step"]`), the text of a string literal, the question a comparison with None asks."""

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


def string_key(node: cst.BaseExpression) -> str | None:
    """"phase" of `group["phase"]`, `self.state[p]["phase"]`: the string key of a subscript; None otherwise."""
    if isinstance(node, cst.Subscript) and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index):
        return string_value(node.slice[0].slice.value)
    return None


def string_value(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        text = node.value
        for quote in ('"""', "'''", '"', "'"):
            if text.endswith(quote):
                start = text.find(quote)
                return text[start + len(quote): -len(quote)]
    return None


_NONE_QUESTIONS = {cst.Is: True, cst.Equal: True, cst.IsNot: False, cst.NotEqual: False}


def is_none_literal(node: cst.BaseExpression) -> bool:
    return type(node) is cst.Name and node.value == "None"


def none_question(left: cst.BaseExpression, target: cst.ComparisonTarget) -> tuple[cst.BaseExpression, bool] | None:
    """One link of a comparison that asks whether a value is None: `x is None` / `x == None` -> (x, True),
    `x is not None` / `x != None` -> (x, False) (either side may be the None); None for any other link.
    `==` with None asks what `is` asks of a tensor too: `Tensor.__eq__(None)` is Python's False, no value read."""
    asks = _NONE_QUESTIONS.get(type(target.operator))
    if asks is None:
        return None
    if is_none_literal(target.comparator):
        return left, asks
    if is_none_literal(left):
        return target.comparator, asks
    return None


def none_test(test: cst.BaseExpression) -> tuple[cst.BaseExpression, bool] | None:
    """`x is None`, `x == None`, `x is not None`, `x != None` (a comparison of one link): (x, whether it asks
    "is None"); None for any other expression."""
    if type(test) is not cst.Comparison or len(test.comparisons) != 1:
        return None
    return none_question(test.left, test.comparisons[0])
