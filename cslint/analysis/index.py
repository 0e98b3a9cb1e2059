"""One pass over a parsed file: its imports, classes, functions and their decorators.

This is all that cross-file analysis needs to know about a file that contains no traced code, so it is
kept separate from (and much cheaper than) tensor-value inference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from cslint.analysis.imports import ImportTable, dotted_name
from cslint.sources import safe_resolve


@dataclass(eq=False)
class FunctionInfo:
    qualname: str  # pkg.mod.Class.method or pkg.mod.func
    name: str
    node: cst.FunctionDef
    module: ModuleInfo
    cls: ClassInfo | None = None
    decorators: list[str] = field(default_factory=list)  # qualified where imports tell

    @property
    def display_name(self) -> str:
        return f"{self.cls.name}.{self.name}" if self.cls else self.name

    @property
    def is_static_method(self) -> bool:
        return any(d.split(".")[-1] == "staticmethod" for d in self.decorators)


@dataclass(eq=False)
class ClassInfo:
    qualname: str
    name: str
    node: cst.ClassDef
    module: ModuleInfo
    bases: list[str] = field(default_factory=list)  # qualified names of the base expressions
    methods: dict[str, FunctionInfo] = field(default_factory=dict)


@dataclass(eq=False)
class ModuleInfo:
    name: str
    path: Path
    source: str
    tree: cst.Module
    imports: ImportTable
    is_package: bool = False
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    # call expressions at module level (`torch.compile(fn)` marks fn as a root)
    toplevel_calls: list[cst.Call] = field(default_factory=list)


def module_name_for(path: Path) -> tuple[str, bool]:
    """Dotted module name from the package directories (those with __init__.py) above the file."""
    path = safe_resolve(path)
    is_package = path.name == "__init__.py"
    parts = [] if is_package else [path.stem]
    directory = path.parent
    while (directory / "__init__.py").exists() and directory.parent != directory:
        parts.insert(0, directory.name)
        directory = directory.parent
    return ".".join(parts) or path.stem, is_package


def _decorator_name(dec: cst.Decorator, imports: ImportTable) -> str:
    expr = dec.decorator
    if isinstance(expr, cst.Call):
        expr = expr.func
    dotted = dotted_name(expr)
    if dotted is None:
        return ""
    return imports.qualify(dotted)


def _collect_imports(body: Sequence[cst.CSTNode], table: ImportTable) -> None:
    """Imports anywhere in the module (also inside functions and `if TYPE_CHECKING:`), walking
    statements only: expressions cannot contain imports, and walking them is most of a file's nodes."""
    for stmt in body:
        kind = type(stmt)
        if kind is cst.SimpleStatementLine:
            for small in stmt.body:  # type: ignore[attr-defined]
                if type(small) in (cst.Import, cst.ImportFrom):
                    table.add_import(small)
            continue
        for block in _blocks_of(stmt):
            _collect_imports(block, table)


def _blocks_of(stmt: cst.CSTNode) -> list[Sequence[cst.CSTNode]]:
    blocks = []
    for attr in ("body", "orelse", "finalbody"):
        part = getattr(stmt, attr, None)
        if part is None:
            continue
        if isinstance(part, (cst.If, cst.Else, cst.Finally)):
            part = part if isinstance(part, cst.If) else part.body
            if isinstance(part, cst.If):
                blocks.append([part])
                continue
        inner = getattr(part, "body", None)
        if isinstance(inner, (list, tuple)):
            blocks.append(inner)
    for handler in getattr(stmt, "handlers", ()):
        blocks.append(handler.body.body if isinstance(handler.body.body, (list, tuple)) else ())
    for case in getattr(stmt, "cases", ()):
        blocks.append(case.body.body if isinstance(case.body.body, (list, tuple)) else ())
    return blocks


class _ToplevelCallCollector(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: list[cst.Call] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)


def index_module(path: Path, source: str, tree: cst.Module, name: str, is_package: bool) -> ModuleInfo:
    package = name if is_package else name.rpartition(".")[0]
    imports = ImportTable(name, package)
    _collect_imports(tree.body, imports)
    info = ModuleInfo(name=name, path=path, source=source, tree=tree, imports=imports, is_package=is_package)
    for stmt in tree.body:
        if isinstance(stmt, cst.ClassDef):
            imports.add_definition(stmt.name.value)
            info.classes[stmt.name.value] = _index_class(stmt, info)
        elif isinstance(stmt, cst.FunctionDef):
            imports.add_definition(stmt.name.value)
            info.functions[stmt.name.value] = _index_function(stmt, info, None, f"{name}.{stmt.name.value}")
    if "compile" in source or "trace" in source:
        collector = _ToplevelCallCollector()
        tree.visit(collector)
        info.toplevel_calls = collector.calls
    return info


def _index_function(node: cst.FunctionDef, module: ModuleInfo, cls: ClassInfo | None, qualname: str) -> FunctionInfo:
    decorators = [_decorator_name(d, module.imports) for d in node.decorators]
    return FunctionInfo(qualname=qualname, name=node.name.value, node=node, module=module, cls=cls,
                        decorators=decorators)


def _index_class(node: cst.ClassDef, module: ModuleInfo) -> ClassInfo:
    qualname = f"{module.name}.{node.name.value}"
    bases = []
    for arg in node.bases:
        if arg.keyword is not None:
            continue
        expr = arg.value
        if isinstance(expr, cst.Subscript):  # Generic[...] style bases
            expr = expr.value
        dotted = dotted_name(expr)
        if dotted is not None:
            bases.append(module.imports.qualify(dotted))
    info = ClassInfo(qualname=qualname, name=node.name.value, node=node, module=module, bases=bases)
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef):
            info.methods[stmt.name.value] = _index_function(stmt, module, info, f"{qualname}.{stmt.name.value}")
    return info
