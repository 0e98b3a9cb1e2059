"""Which rule code a runtime event belongs to, read from the user's source at the event's position.

The backends know *what* happened (a value was forced, a copy to the CPU, a value-dependent shape); the
source around the executing bytecode instruction says *how* the user wrote it, which is what the static
rule codes distinguish (`if t:` is WSC101, `t.item()` is WSC201, `float(t)` is WSC203, ...).
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass
from functools import lru_cache

# What forced a value, by the call that did it.
_TO_PYTHON_METHODS = {"item": "WSC201", "tolist": "WSC201", "numpy": "WSC201", "cpu": "WSC202", "to": "WSC202"}
_CONVERSIONS = {"float": "WSC203", "int": "WSC203", "bool": "WSC203", "complex": "WSC203",
                "min": "WSC205", "max": "WSC205", "abs": "WSC205", "round": "WSC205", "sum": "WSC205",
                "str": "WSC206", "repr": "WSC206", "format": "WSC206", "range": "WSC107", "len": "WSC107"}
_LOG_METHODS = {"debug", "info", "warning", "warn", "error", "critical", "exception", "log"}
_SCALAR_KEYWORDS = {"alpha", "value", "beta", "min", "max", "p", "exponent", "other"}

KIND_DEFAULTS = {
    "scalar": ("WSC203", "a tensor's value is read on the host while tracing"),
    "cpu_copy": ("WSC202", "a tensor is copied to the CPU while tracing"),
    "numpy": ("WSC201", "`.numpy()` reads a tensor's value on the host while tracing"),
    "dynamic_shape": ("WSC501", "output shape depends on tensor values"),
    "boolean_index": ("WSC502", "a tensor indexed with a boolean mask: the output shape depends on tensor values"),
    "boolean_store": ("WSC502", "a tensor written through a boolean mask (`x[mask] = v`): which positions are "
                      "written depends on tensor values"),
    "dtype": ("WSC601", "a float64/complex tensor is created; the device supports float32 and one 16-bit type"),
}


@dataclass(frozen=True)
class Classified:
    code: str
    what: str  # how the user wrote it, for the message


@dataclass(frozen=True)
class _Index:
    """One region of a file, indexed for the lookups that run per traced event."""
    parents: dict[int, ast.AST]
    at_span: dict[tuple[int, int, int, int], ast.AST]  # the innermost expression or statement with that span
    on_line: dict[int, list[ast.AST]]  # the nodes starting on a line, in ast.walk order (outermost first)


_NOTHING = _Index({}, {}, {})


class _Source:
    """A parsed file, indexed one function (or other top-level statement) at a time: a model file or
    torch's optimizer.py has hundreds of them and a step's events fall in a few, and indexing every node of
    every file an event touched was a fifth of the lazy backend's time on a small step."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.regions: dict[int, _Index] = {}

    def at(self, line: int) -> _Index:
        region = _region(self.tree, line)
        if region is None:
            return _NOTHING
        index = self.regions.get(id(region))
        if index is None:
            index = self.regions[id(region)] = _index(region)
        return index


def _region(tree: ast.Module, line: int) -> ast.stmt | None:
    """The top-level statement holding `line`, or the method when it is in a class."""
    body: list[ast.stmt] = tree.body
    found: ast.stmt | None = None
    while True:
        for stmt in body:
            decorators = getattr(stmt, "decorator_list", ())
            first = min([stmt.lineno, *(d.lineno for d in decorators)])
            if first <= line <= (stmt.end_lineno or stmt.lineno):
                found = stmt
                break
        else:
            return found
        if not isinstance(found, ast.ClassDef):
            return found
        body = found.body


def _index(region: ast.stmt) -> _Index:
    index = _Index({}, {}, {})
    for node in ast.walk(region):  # breadth-first: a later node with the same span is an inner one
        for child in ast.iter_child_nodes(node):
            index.parents[id(child)] = node
        if isinstance(node, (ast.expr, ast.stmt)):
            index.at_span[(node.lineno, node.end_lineno or node.lineno, node.col_offset,
                           node.end_col_offset or 0)] = node
        if hasattr(node, "lineno"):
            index.on_line.setdefault(node.lineno, []).append(node)
    return index


def _parsed(path: str) -> _Source | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return _parsed_version(path, stat.st_mtime_ns, stat.st_size)  # a fixed file is re-read


@lru_cache(maxsize=64)
def _parsed_version(path: str, mtime_ns: int, size: int) -> _Source | None:
    try:
        with open(path, encoding="utf-8") as handle:
            return _Source(ast.parse(handle.read()))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _call_code(call: ast.Call) -> Classified | None:
    func = call.func
    if (isinstance(func, ast.Attribute) and func.attr in _LOG_METHODS) or (isinstance(func, ast.Name)
                                                                       and func.id == "print"):
        return Classified("WSC701", "a print/log call formats a tensor")
    if any(k.arg == "error_if_nonfinite" for k in call.keywords):
        return Classified("WSC803", "`error_if_nonfinite=True` reads the gradient norm in Python to raise")
    if isinstance(func, ast.Attribute):
        if func.attr in _TO_PYTHON_METHODS:
            return Classified(_TO_PYTHON_METHODS[func.attr], f"`.{func.attr}()`")
        if isinstance(func.value, ast.Name) and func.value.id == "math":
            return Classified("WSC204", f"`math.{func.attr}()` on a tensor")
        if func.attr == "format":
            return Classified("WSC206", "a tensor formatted into a string")
        if any(k.arg in _SCALAR_KEYWORDS for k in call.keywords):
            names = ", ".join(f"{k.arg}=" for k in call.keywords if k.arg in _SCALAR_KEYWORDS)
            return Classified("WSC401", f"a tensor passed as a Python number ({names}) to `.{func.attr}()`")
    if isinstance(func, ast.Name):
        if func.id in _CONVERSIONS:
            return Classified(_CONVERSIONS[func.id], f"`{func.id}()` on a tensor")
        if any(k.arg in _SCALAR_KEYWORDS for k in call.keywords):
            return Classified("WSC401", f"a tensor passed as a Python number to `{func.id}()`")
    return None


def _context_code(node: ast.AST, parents: dict[int, ast.AST]) -> Classified | None:
    """Walk outwards from the forced expression to the construct that needed its truth value."""
    child = node
    while True:
        if isinstance(child, ast.BoolOp) or (isinstance(child, ast.UnaryOp) and isinstance(child.op, ast.Not)):
            parent = parents.get(id(child))
            if not (isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and parent.test is child):
                return Classified("WSC105", "`and`/`or`/`not` on a tensor")
        if isinstance(child, (ast.JoinedStr, ast.FormattedValue)):
            return Classified("WSC206", "a tensor formatted into a string")
        parent = parents.get(id(child))
        if parent is None:
            return None
        # 3.11 gives a conditional jump the span of its whole statement
        if isinstance(child, ast.While):
            return Classified("WSC102", "`while` on a tensor condition")
        if isinstance(child, ast.If):
            return Classified("WSC101", "`if` on a tensor condition")
        if isinstance(child, ast.Assert):
            return Classified("WSC104", "`assert` on a tensor")
        if isinstance(parent, ast.If) and parent.test is child:
            return Classified("WSC101", "`if` on a tensor condition")
        if isinstance(parent, ast.While) and parent.test is child:
            return Classified("WSC102", "`while` on a tensor condition")
        if isinstance(parent, ast.IfExp) and parent.test is child:
            return Classified("WSC103", "a conditional expression on a tensor condition")
        if isinstance(parent, ast.Assert) and parent.test is child:
            return Classified("WSC104", "`assert` on a tensor")
        if isinstance(parent, ast.comprehension) and child in parent.ifs:
            return Classified("WSC106", "a comprehension filter on a tensor")
        if isinstance(parent, ast.For) and parent.iter is child:
            return Classified("WSC107", "a loop whose trip count comes from a tensor")
        if isinstance(child, ast.stmt):
            return None
        child = parent


def classify(kind: str, path: str, span: tuple[int, int, int, int] | None) -> Classified:
    default = Classified(*KIND_DEFAULTS[kind])
    if kind in ("dynamic_shape", "boolean_index", "boolean_store", "dtype"):
        return default
    parsed = _parsed(path)
    if parsed is None or span is None:
        return default
    index = parsed.at(span[0])
    parents = index.parents
    node = index.at_span.get(span)
    if node is None:
        return default
    parent = parents.get(id(node))
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "range":
        return Classified("WSC107", "a loop whose trip count comes from a tensor")  # range(int(n))
    if kind == "scalar" and isinstance(node, ast.Subscript):  # `experts[i]` with `i` a 0-dim tensor
        return Classified("WSC207", "a tensor used as an index (Python needs an int)")
    if isinstance(node, ast.Call):
        found = _call_code(node)
        if found is not None:
            return found
    return _context_code(node, parents) or default


def classify_line(path: str, line: int) -> Classified | None:
    """For backends that only know the line (dynamo): the first construct on it that forces a value."""
    parsed = _parsed(path)
    if parsed is None:
        return None
    statements = [n for n in parsed.at(line).on_line.get(line, ()) if isinstance(n, ast.stmt)]
    if not statements:
        return None
    stmt = statements[-1]
    if isinstance(stmt, ast.While):
        return Classified("WSC102", "`while` on a tensor condition")
    if isinstance(stmt, ast.If):
        return Classified("WSC101", "`if` on a tensor condition")
    if isinstance(stmt, ast.Assert):
        return Classified("WSC104", "`assert` on a tensor")
    for node in ast.walk(stmt):
        if isinstance(node, ast.IfExp):
            return Classified("WSC103", "a conditional expression on a tensor condition")
        if isinstance(node, ast.Call) and (found := _call_code(node)) is not None:
            return found
    return None


def called_name(path: str, line: int) -> str | None:
    """What an expression statement on `line` calls: `loss.backward()` -> "backward", `print(x)` -> "print"."""
    parsed = _parsed(path)
    if parsed is None:
        return None
    for node in parsed.at(line).on_line.get(line, ()):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return None


def classify_guard_line(path: str, line: int) -> Classified:
    """A failed dynamo guard: mutation of Python state on that line (WSC702), else a value feeding the graph."""
    parsed = _parsed(path)
    if parsed is not None:
        for node in parsed.at(line).on_line.get(line, ()):
            if isinstance(node, (ast.Assign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, (ast.Attribute, ast.Subscript)) for t in targets):
                    return Classified("WSC702", "Python state mutated in the traced step")
            if isinstance(node, ast.Global):
                return Classified("WSC702", "a global mutated in the traced step")
    return Classified("WSC703", "a Python value that changes per step feeds the graph")


def state_created_in_step(optimizer: str, keys: list[str], preinitialize: bool = False) -> str:
    """WSC301's message, for the optimizer check and for a traced step alike."""
    names = ", ".join(f"`{k}`" for k in keys)
    if preinitialize:
        return f"`{optimizer}.preinitialize()` does not create state {names}; `step()` creates it"
    return (f"optimizer state {names} of `{optimizer}` is created inside `step()`; it must exist before the "
            "first step: create it in `preinitialize()`")
