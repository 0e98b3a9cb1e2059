"""Resolve names to qualified names from a module's own import statements.

libcst's QualifiedNameProvider answers the same question for every node of every file and is the slowest
part of a libcst linter; one pass over the import statements gives what rules need: `T.where` with
`import torch as T` is `torch.where`, `F.relu` is `torch.nn.functional.relu`.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.import_scan import resolve_relative


def dotted_name(node: cst.BaseExpression) -> str | None:
    """`a.b.c` as a string, or None for anything that is not a plain name or attribute chain."""
    # not isinstance: libcst's node classes are ABCs, and this runs millions of times
    if type(node) is cst.Name:
        return node.value
    if type(node) is cst.Attribute:
        base = dotted_name(node.value)
        return f"{base}.{node.attr.value}" if base is not None else None
    return None


def _module_name(node: cst.BaseExpression | None) -> str:
    return dotted_name(node) or "" if node is not None else ""


class ImportTable:
    """Local name -> qualified name, for every import in the module and every top-level definition."""

    def __init__(self, module_name: str, package: str) -> None:
        self.module_name = module_name
        self.package = package
        self.names: dict[str, str] = {}
        self.stars: list[str] = []  # the modules of its `from m import *`, in order (a package's re-exports)

    def add_import(self, node: cst.Import | cst.ImportFrom) -> None:
        if isinstance(node, cst.Import):
            for alias in node.names:
                full = _module_name(alias.name)
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    self.names[alias.asname.name.value] = full
                else:
                    # `import torch.nn` binds `torch`
                    head = full.split(".")[0]
                    self.names[head] = head
            return
        level = len(node.relative)
        module = _module_name(node.module)
        if level:
            module = resolve_relative(self.package, level, module)
        if isinstance(node.names, cst.ImportStar):
            if module and module not in self.stars:
                self.stars.append(module)
            return
        for alias in node.names:
            imported = _module_name(alias.name)
            local = imported
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            self.names[local] = f"{module}.{imported}" if module else imported

    def add_definition(self, name: str) -> None:
        self.names.setdefault(name, f"{self.module_name}.{name}" if self.module_name else name)

    def qualify(self, dotted: str) -> str:
        head, _, rest = dotted.partition(".")
        base = self.names.get(head)
        if base is None:
            return dotted
        return f"{base}.{rest}" if rest else base

    def resolve(self, node: cst.BaseExpression) -> str | None:
        """The qualified name of a name/attribute expression, as far as imports tell."""
        dotted = dotted_name(node)
        if dotted is None:
            return None
        head = dotted.split(".")[0]
        if head not in self.names:
            return None
        return self.qualify(dotted)

    def local_alias(self, qualified: str) -> str | None:
        """The local name bound to `qualified` (e.g. `T` for torch), if the module imports it."""
        for local, full in self.names.items():
            if full == qualified:
                return local
        return None


def module_level_alias(tree: cst.Module, module: str) -> str | None:
    """The name a top-level `import module [as alias]` binds (imports inside functions do not count)."""
    for stmt in tree.body:
        if type(stmt) is not cst.SimpleStatementLine:
            continue
        for small in stmt.body:
            if type(small) is not cst.Import:
                continue
            for alias in small.names:
                if dotted_name(alias.name) != module:
                    continue
                if alias.asname is None:
                    return module
                if isinstance(alias.asname.name, cst.Name):
                    return alias.asname.name.value
    return None
