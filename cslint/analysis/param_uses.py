"""What a function's own body says about a parameter that has no annotation: a container or a flag.

A tensor has no `.items()`, is never indexed by a string and holds no string keys, so
`batch["input_ids"]`, `"labels" in inputs`, `kwargs.get("x")` and `cache or {}` say the parameter is a
container. A parameter that is only ever tested (`if output_attentions:`, `not use_cache`) or compared
with strings (`layer_type == "full"`) is a flag. Parameters named like tensors (`mask`, `hidden_states`)
are never taken for flags: `if mask:` on a real mask is the bug the rules are for.
"""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass

import libcst as cst

from cslint.analysis.index import FunctionInfo
from cslint.analysis.walk import iter_with_parents

CONTAINER_METHODS = frozenset({"items", "keys", "get", "setdefault", "append", "extend", "update", "pop"})
TENSOR_LIKE_WORDS = ("mask", "tensor", "state", "ids", "embed", "logit", "input", "pixel", "label", "value",
                     "feat", "hidden", "weight", "bias", "grad")
_STRINGS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString)
_CONTAINER_LITERALS = (cst.Dict, cst.List, cst.Tuple, cst.Set, cst.DictComp, cst.ListComp)


@dataclass(frozen=True)
class ParamUses:
    containers: frozenset[str]
    flags: frozenset[str]


_CACHE: weakref.WeakKeyDictionary[FunctionInfo, ParamUses] = weakref.WeakKeyDictionary()
# By the function's text, which is all the scan reads: an editor's analyses index the edited file anew
# on every keystroke, and its unchanged functions are not scanned again. The latest texts, up to:
TEXT_BYTES = 2_000_000
_BY_TEXT: dict[str, ParamUses] = {}
_by_text_bytes = 0
_lock = threading.Lock()


def param_uses(func: FunctionInfo) -> ParamUses:
    cached = _CACHE.get(func)
    if cached is None:
        span = func.span
        text = func.module.source[span.start:span.end] if span is not None else None
        with _lock:
            cached = _BY_TEXT.get(text) if text is not None else None
        if cached is None:
            cached = _scan(func.node)
            if text is not None:
                _remember(text, cached)
        _CACHE[func] = cached
    return cached


def _remember(text: str, uses: ParamUses) -> None:
    global _by_text_bytes
    with _lock:
        if text in _BY_TEXT or len(text) > TEXT_BYTES:
            return
        _BY_TEXT[text] = uses
        _by_text_bytes += len(text)
        while _by_text_bytes > TEXT_BYTES:  # oldest first (dicts keep insertion order)
            oldest = next(iter(_BY_TEXT))
            del _BY_TEXT[oldest]
            _by_text_bytes -= len(oldest)


def _is_string(node: cst.CSTNode) -> bool:
    if isinstance(node, _STRINGS):
        return True
    return isinstance(node, (cst.Tuple, cst.List, cst.Set)) and bool(node.elements) and all(
        isinstance(e.value, _STRINGS) for e in node.elements)


def _container_literal(node: cst.BaseExpression) -> bool:
    if isinstance(node, _CONTAINER_LITERALS):
        return True
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in ("dict", "list")


def _use(name: cst.Name, parent: cst.CSTNode | None, grand: cst.CSTNode | None) -> str:
    """How one load of a parameter uses it: "container", "flag", "neutral" (says nothing) or "value"."""
    if isinstance(parent, cst.Attribute) and parent.value is name:
        if parent.attr.value in CONTAINER_METHODS and isinstance(grand, cst.Call) and grand.func is parent:
            return "container"
        return "value"
    if isinstance(parent, cst.Subscript) and parent.value is name:
        index = parent.slice[0].slice if len(parent.slice) == 1 else None
        return "container" if isinstance(index, cst.Index) and isinstance(index.value, _STRINGS) else "value"
    if isinstance(parent, cst.BooleanOperation) and parent.left is name and isinstance(parent.operator, cst.Or) \
            and _container_literal(parent.right):
        return "container"
    if isinstance(parent, cst.ComparisonTarget) and isinstance(grand, cst.Comparison):
        operator = parent.operator
        if isinstance(operator, (cst.In, cst.NotIn)) and _is_string(grand.left):
            return "container"
        return "flag" if _is_string(grand.left) else "neutral" if isinstance(operator, (cst.Is, cst.IsNot)) \
            else "value"
    if isinstance(parent, cst.Comparison) and parent.left is name:
        targets = parent.comparisons
        if all(isinstance(t.operator, (cst.Is, cst.IsNot)) for t in targets):
            return "neutral"
        return "flag" if all(_is_string(t.comparator) for t in targets) else "value"
    if isinstance(parent, (cst.If, cst.While, cst.IfExp)) and parent.test is name:
        return "flag"
    if isinstance(parent, cst.IfExp):  # `use_cache if use_cache is not None else default`: passed through
        return "neutral"
    if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Not):
        return "flag"
    if isinstance(parent, cst.BooleanOperation):
        return "flag" if isinstance(grand, (cst.If, cst.While, cst.IfExp, cst.UnaryOperation, cst.BooleanOperation)) \
            else "value"
    return "value"


def _scan(node: cst.FunctionDef) -> ParamUses:
    p = node.params
    names = {param.name.value for param in (*p.posonly_params, *p.params, *p.kwonly_params)}
    if isinstance(p.star_kwarg, cst.Param):
        names.add(p.star_kwarg.name.value)
    uses: dict[str, set[str]] = {name: set() for name in names}
    parents: dict[int, cst.CSTNode | None] = {}
    for child, parent in iter_with_parents(node.body, prune=(cst.FunctionDef, cst.Lambda, cst.ClassDef)):
        parents[id(child)] = parent
        if type(child) is cst.Name and child.value in uses and parent is not None:
            if isinstance(parent, (cst.Param, cst.AssignTarget)) or (
                    isinstance(parent, cst.Attribute) and parent.attr is child):
                continue
            uses[child.value].add(_use(child, parent, parents.get(id(parent))))
    containers = frozenset(n for n, u in uses.items() if "container" in u)
    flags = frozenset(n for n, u in uses.items() if "flag" in u and u <= {"flag", "neutral"}
                      and not _tensor_like(n))
    return ParamUses(containers, flags)


def _tensor_like(name: str) -> bool:
    return any(word.startswith(TENSOR_LIKE_WORDS) or word in ("x", "y", "z", "t")
               for word in name.lower().split("_"))
