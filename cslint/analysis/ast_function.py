"""A function parsed alone with Python's `ast`, from its text: several times faster than libcst, for questions
that read a function cslint has not parsed yet (what it returns, what its local names are bound to)."""

from __future__ import annotations

import ast

import libcst as cst

from cslint.analysis.index import FunctionInfo


def ast_function(func: FunctionInfo) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """`func` parsed alone (a method inside a `class _:` line, as index.py parses it); None if its text does not
    parse as that function."""
    span = func.span
    if span is not None:  # an `ast`-indexed file: the function's text, as in the file (a method indented)
        text = func.module.source[span.start:span.end]
        wrapped = func.cls is not None
    else:  # a file indexed from its libcst tree: the function's code, at no indentation
        text = cst.Module([]).code_for_node(func.node)
        wrapped = False
    try:
        stmt = ast.parse("class _:\n" + text if wrapped else text).body[0]
    except (SyntaxError, ValueError, RecursionError, MemoryError, IndexError):
        return None
    node = stmt.body[0] if wrapped and isinstance(stmt, ast.ClassDef) else stmt
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == func.name else None
