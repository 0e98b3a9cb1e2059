"""Python's tree of an edited buffer whose statements keep the line numbers of the text they were parsed from.

An edit that adds or removes lines moves every top-level statement after it. Renumbering their nodes
(`ast.increment_lineno`) walks every node of them, much of the cost of parsing the whole text again, and
the nodes are shared with the tree before the edit, which may still be read. So the tree reparse.py
makes of an edited text is a `Shifted` module: `shifts[i]` is how many lines `body[i]`, and every node
in it, has moved since it was parsed; a line number read from a node of it is that statement's shift
plus the node's `lineno`. Whatever reads line numbers of such a tree (the index's spans, the analysis
budget's statements, the editor's `def` positions) asks `line_shifts`; a plain `ast.Module` has none.
"""

from __future__ import annotations

import ast
import copy


class Shifted(ast.Module):
    shifts: list[int]


def shifted_module(body: list[ast.stmt], shifts: list[int]) -> ast.Module:
    tree = Shifted(body=body, type_ignores=[])
    tree.shifts = shifts
    return tree


def line_shifts(tree: ast.Module) -> list[int]:
    """How many lines each top-level statement of `tree` moved since its nodes were numbered."""
    shifts = getattr(tree, "shifts", None)
    return shifts if shifts is not None else [0] * len(tree.body)


def renumbered(tree: ast.Module) -> ast.Module:
    """A plain tree equal to `ast.parse` of the text `tree` stands for (its moved statements copied and
    renumbered): for the rare reader that needs every node's line."""
    shifts = getattr(tree, "shifts", None)
    if shifts is None:
        return tree
    body = []
    for stmt, shift in zip(tree.body, shifts):
        if shift:
            stmt = ast.increment_lineno(copy.deepcopy(stmt), shift)
        body.append(stmt)
    return ast.Module(body=body, type_ignores=list(tree.type_ignores))
