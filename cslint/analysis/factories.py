"""Functions that make and return an instance of one of the project's classes on every path (factories).

    def make_distribution(space, use_sde=False):
        if isinstance(space, Box):
            cls = StateDependent if use_sde else DiagGaussian
            return cls(dim(space))
        elif isinstance(space, Discrete):
            return Categorical(space.n)
        raise NotImplementedError(space)

A constructor that stores `make_distribution(space)` holds an instance of one of those classes, whatever the
arguments: what the function returns is read from its `return` statements alone, so a factory nobody traces
(called only from `__init__`) still says what its result is. Read with `ast` from the function's text.
"""

from __future__ import annotations

import ast
import weakref

from cslint.analysis.ast_function import ast_function
from cslint.analysis.import_scan import ast_dotted_name
from cslint.analysis.index import ClassInfo, FunctionInfo
from cslint.analysis.project import Project

_MADE: weakref.WeakKeyDictionary[FunctionInfo, tuple[str, ...]] = weakref.WeakKeyDictionary()


def factory_classes(project: Project, func: FunctionInfo) -> tuple[ClassInfo, ...]:
    """The classes of the project whose instance `func` returns, one of them on every path that returns; ()
    when a `return` gives anything else (or nothing), or the function's text cannot be read."""
    names = _MADE.get(func)
    if names is None:
        names = _MADE[func] = tuple(c.qualname for c in _read(project, func))
    found = [project.lookup_class(name) for name in names]
    return tuple(c for c in found if c is not None)


def local_classes(project: Project, func: FunctionInfo) -> dict[str, tuple[ClassInfo, ...]]:
    """The local names of `func` bound only to classes of the project (`cls = A if flag else B`): what calling one
    builds."""
    names = _LOCALS.get(func)
    if names is None:
        node = _parse(func)
        bound = _local_bindings(project, func, node) if node is not None else {}
        names = _LOCALS[func] = {name: tuple(c.qualname for c in classes) for name, classes in bound.items() if classes}
    found = {name: tuple(c for c in map(project.lookup_class, qualnames) if c is not None)
             for name, qualnames in names.items()}
    return {name: classes for name, classes in found.items() if classes}


_LOCALS: weakref.WeakKeyDictionary[FunctionInfo, dict[str, tuple[str, ...]]] = weakref.WeakKeyDictionary()


def _read(project: Project, func: FunctionInfo) -> list[ClassInfo]:
    node = _parse(func)
    if node is None:
        return []
    returns = [part for part in _own_nodes(node) if isinstance(part, ast.Return)]
    bound = _local_bindings(project, func, node)
    made: list[ClassInfo] = []
    for ret in returns:
        value = ret.value
        if not isinstance(value, ast.Call):
            return []
        callee = value.func
        if isinstance(callee, ast.Name) and callee.id in bound:
            classes = bound[callee.id]
        else:
            classes = _classes(project, func, callee)
        if not classes:
            return []
        made.extend(c for c in classes if c not in made)
    return made


def _parse(func: FunctionInfo) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The function's `ast`, when its text may hold a `return` or a binding."""
    span = func.span
    if span is not None and "return" not in func.module.source[span.start:span.end] and \
            "=" not in func.module.source[span.start:span.end]:
        return None
    return ast_function(func)


def _local_bindings(project: Project, func: FunctionInfo,
                    node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, list[ClassInfo] | None]:
    """Local name -> the classes it is bound to (None: bound to something else too)."""
    bound: dict[str, list[ClassInfo] | None] = {}
    for part in _own_nodes(node):
        if isinstance(part, ast.Assign) and len(part.targets) == 1 and isinstance(part.targets[0], ast.Name):
            name = part.targets[0].id
            classes = _classes(project, func, part.value)
            before = bound.get(name, [])
            bound[name] = None if classes is None or before is None else [*before, *classes]
        elif isinstance(part, (ast.AugAssign, ast.AnnAssign, ast.For)) and isinstance(part.target, ast.Name):
            bound[part.target.id] = None
    return bound


def _classes(project: Project, func: FunctionInfo, value: ast.expr) -> list[ClassInfo] | None:
    """The classes `value` names (`Cls`, `mod.Cls`, `A if flag else B`); None when it names anything else."""
    if isinstance(value, ast.IfExp):
        body, orelse = _classes(project, func, value.body), _classes(project, func, value.orelse)
        return None if body is None or orelse is None else body + orelse
    dotted = ast_dotted_name(value) if isinstance(value, (ast.Name, ast.Attribute)) else None
    if dotted is None:
        return None
    module = func.module
    found = module.classes.get(dotted) or project.lookup_class(module.imports.qualify(dotted))
    return [found] if found is not None else None


def _own_nodes(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.AST]:
    """The nodes of the function's body, not those of functions, lambdas or classes defined in it."""
    found: list[ast.AST] = []
    stack: list[ast.AST] = list(node.body)
    while stack:
        part = stack.pop()
        found.append(part)
        if isinstance(part, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(part))
    return found
