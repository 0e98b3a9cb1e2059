"""Module-level assignments summarised for what they may bind (`model = GPT(config)`,
`compiled = torch.compile(model)`, `net = model.to(device)`), from either parser's tree.

Telling which module-level names hold a tracked object (step_functions.module_objects) needs only a
value's shape: a name, or a call with its callee's dotted name, the receiver of a method call and the
first argument. An `ast`-indexed file keeps this summary from indexing, so libcst never parses a file's
module-level statements (a model registry's `MAPPING = OrderedDict([...])` of hundreds of lines) for it.

A value is None (nothing cslint follows), `("name", id)`, `("attribute", dotted)` (`torch.float64`), or
`("call", dotted, method, receiver, first, dtype)`: `dotted` the callee as `a.b.c` (None if it is not one),
`method` and `receiver` the attribute called and the value it is called on (None unless the callee is an
attribute), `first` a 1-tuple with the first argument's value as written (keyword or starred included), empty
without arguments, `dtype` the value of its `dtype=` keyword (None without one). An assignment in an `else`
branch or an `except` handler binds `("or", value)`: the name may hold that or what it held before
(`if new_fft is None: _rfft = _old_rfft` / `else: _rfft = _new_rfft`).
"""

from __future__ import annotations

import ast
from typing import Any

import libcst as cst

from cslint.analysis.import_scan import ast_dotted_name
from cslint.analysis.imports import dotted_name

Value = Any  # None | tuple, as above
Binding = tuple[tuple[str, ...], Value]  # the plain names an assignment binds, and its value


def cst_value(expr: cst.BaseExpression) -> Value:
    if type(expr) is cst.Name:
        return ("name", expr.value)
    if type(expr) is cst.Attribute:
        dotted = dotted_name(expr)
        return ("attribute", dotted) if dotted is not None else None
    if type(expr) is not cst.Call:
        return None
    func = expr.func
    method = func.attr.value if type(func) is cst.Attribute else None
    receiver = cst_value(func.value) if type(func) is cst.Attribute else None
    first = (cst_value(expr.args[0].value),) if expr.args else ()
    dtype = next((cst_value(a.value) for a in expr.args if a.keyword is not None and a.keyword.value == "dtype"), None)
    return ("call", dotted_name(func), method, receiver, first, dtype)


def ast_value(expr: ast.expr) -> Value:
    if isinstance(expr, ast.Name):
        return ("name", expr.id)
    if isinstance(expr, ast.Attribute):
        dotted = ast_dotted_name(expr)
        return ("attribute", dotted) if dotted is not None else None
    if not isinstance(expr, ast.Call):
        return None
    func = expr.func
    method = func.attr if isinstance(func, ast.Attribute) else None
    receiver = ast_value(func.value) if isinstance(func, ast.Attribute) else None
    # libcst keeps positional and keyword arguments in one list, in source order (`f(k=1, *rest)`)
    args: list[ast.expr | ast.keyword] = [*expr.args, *expr.keywords]
    first_arg = min(args, key=lambda a: (a.lineno, a.col_offset)) if args else None
    first = () if first_arg is None else \
        (ast_value(first_arg.value if isinstance(first_arg, (ast.Starred, ast.keyword)) else first_arg),)
    dtype = next((ast_value(k.value) for k in expr.keywords if k.arg == "dtype"), None)
    return ("call", ast_dotted_name(func), method, receiver, first, dtype)


def cst_bindings(statements: list[tuple[cst.Assign | cst.AnnAssign, bool]]) -> list[Binding]:
    """The summaries of libcst assignments (those with a value), in order, each with whether it is an
    alternative to what ran before it."""
    found = []
    for stmt, alternative in statements:
        assert stmt.value is not None
        targets = [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
        value = cst_value(stmt.value)
        found.append((tuple(t.value for t in targets if type(t) is cst.Name),
                      ("or", value) if alternative and value is not None else value))
    return found


def ast_bindings(statements: list[tuple[ast.Assign | ast.AnnAssign, bool]]) -> list[Binding]:
    """`cst_bindings` for `ast` assignments."""
    found = []
    for stmt, alternative in statements:
        assert stmt.value is not None
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        value = ast_value(stmt.value)
        found.append((tuple(t.id for t in targets if isinstance(t, ast.Name)),
                      ("or", value) if alternative and value is not None else value))
    return found

