"""Tables of functions written as literals: `ROUTINES = {"sinkhorn": {"dense": sinkhorn_dense, ...}, ...}`,
`HOOKS = [first, second]`, `(scale,)`, a dict's values given as `partial(f, name="energy")`, nested to any depth.

A table is kept as its entries: the keys that lead to a function (a dict's literal keys, a list's or
tuple's positions) and the function's dotted name as written. Calling `TABLE[k1][k2](...)` reaches the
functions whose keys match: every one under a key that is not a literal (a join), exactly one where every
key is. Read from libcst's tree and from Python's `ast` alike (index.py indexes files both ways).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence

import libcst as cst

from cslint.analysis.import_scan import ast_dotted_name
from cslint.analysis.imports import dotted_name

Key = object  # a literal key (str, int, ...), or ANY
ANY: Key = ...  # a key that is not a literal: written as a name or an expression, or a subscript's unknown index
TableEntry = tuple[tuple[Key, ...], str]
Table = tuple[TableEntry, ...]

_PARTIALS = frozenset({"partial", "functools.partial"})


def cst_table(value: cst.BaseExpression) -> Table | None:
    """The entries of a dict, list or tuple literal whose every leaf is a function's name (or a `partial` of
    one given only keywords); None for any other value."""
    entries: list[TableEntry] = []
    return tuple(entries) if _cst_entries(value, (), entries) and entries else None


def _cst_entries(value: cst.BaseExpression, path: tuple[Key, ...], into: list[TableEntry]) -> bool:
    if isinstance(value, cst.Dict):
        for element in value.elements:
            if not isinstance(element, cst.DictElement) or \
                    not _cst_entries(element.value, (*path, cst_key(element.key)), into):
                return False
        return bool(value.elements)
    if isinstance(value, (cst.List, cst.Tuple)):
        for i, item in enumerate(value.elements):
            if not isinstance(item, cst.Element) or not _cst_entries(item.value, (*path, i), into):
                return False
        return bool(value.elements)
    if not path:
        return False
    name = dotted_name(value)
    if name is None and isinstance(value, cst.Call) and dotted_name(value.func) in _PARTIALS and value.args \
            and value.args[0].keyword is None and not value.args[0].star \
            and all(a.keyword is not None for a in value.args[1:]):
        name = dotted_name(value.args[0].value)  # `partial(f, name="energy")`: f, called with its keywords
    if name is None:
        return False
    into.append((path, name))
    return True


def cst_key(node: cst.BaseExpression) -> Key:
    """A subscript's or dict's key: the literal's value, else ANY."""
    if isinstance(node, (cst.SimpleString, cst.Integer)):
        try:
            return node.evaluated_value
        except (ValueError, SyntaxError):
            return ANY
    return ANY


def ast_table(value: ast.expr) -> Table | None:
    """`cst_table` for a node of Python's `ast`."""
    entries: list[TableEntry] = []
    return tuple(entries) if _ast_entries(value, (), entries) and entries else None


def _ast_entries(value: ast.expr, path: tuple[Key, ...], into: list[TableEntry]) -> bool:
    if isinstance(value, ast.Dict):
        for key, item in zip(value.keys, value.values):
            if key is None or not _ast_entries(item, (*path, _ast_key(key)), into):
                return False  # `{**other}`
        return bool(value.values)
    if isinstance(value, (ast.List, ast.Tuple)):
        for i, item in enumerate(value.elts):
            if isinstance(item, ast.Starred) or not _ast_entries(item, (*path, i), into):
                return False
        return bool(value.elts)
    if not path:
        return False
    name = ast_dotted_name(value)
    if name is None and isinstance(value, ast.Call) and ast_dotted_name(value.func) in _PARTIALS \
            and len(value.args) == 1 and not isinstance(value.args[0], ast.Starred) \
            and all(k.arg is not None for k in value.keywords):
        name = ast_dotted_name(value.args[0])
    if name is None:
        return False
    into.append((path, name))
    return True


def _ast_key(node: ast.expr) -> Key:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int)) and not isinstance(node.value, bool):
        return node.value
    return ANY


def selected(table: Table, keys: Sequence[Key]) -> Table:
    """The entries `table[k1][k2]...` may give, their keys after these: where a key is ANY (on either side)
    every entry at that level matches."""
    depth = len(keys)
    return tuple((path[depth:], name) for path, name in table
                 if len(path) >= depth and all(k is ANY or p is ANY or p == k for p, k in zip(path, keys)))


def names(table: Table) -> tuple[str, ...]:
    return tuple(name for _, name in table)
