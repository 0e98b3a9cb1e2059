"""Apply the fixes of one file's findings to its syntax tree.

Fixes name the original nodes they replace. Two fixes that touch the same node or nested nodes
conflict; the first one reported wins and the other waits for the next pass (the file is re-linted
after each pass, as ruff does), so every applied replacement is computed from the code it replaces.
"""

from __future__ import annotations

import libcst as cst

from cslint.rule_api.findings import Fix

Replacement = cst.CSTNode | cst.FlattenSentinel[cst.CSTNode] | cst.RemovalSentinel


class _Spans(cst.CSTVisitor):
    """Records, for every node a fix targets, which other targeted nodes lie inside it."""

    def __init__(self, targets: dict[int, int]) -> None:
        self.targets = targets  # id(node) -> fix index
        self.open: list[int] = []  # fix indices of the enclosing targets
        self.conflicts: set[tuple[int, int]] = set()

    def on_visit(self, node: cst.CSTNode) -> bool:
        index = self.targets.get(id(node))
        if index is not None:
            for outer in self.open:
                if outer != index:
                    self.conflicts.add((outer, index))
            self.open.append(index)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if id(original_node) in self.targets:
            self.open.pop()


class _Replacer(cst.CSTTransformer):
    def __init__(self, replacements: dict[int, Replacement]) -> None:
        self.replacements = replacements

    # a fix replaces a node by nodes of any type: libcst's signature promises the node's own
    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Replacement:  # type: ignore[override]
        return self.replacements.get(id(original_node), updated_node)


def _ensure_imports(tree: cst.Module, modules: set[str]) -> cst.Module:
    body = list(tree.body)
    insert_at = 0
    for i, stmt in enumerate(body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            break
        first = stmt.body[0]
        is_docstring = i == 0 and isinstance(first, cst.Expr) and isinstance(first.value, (cst.SimpleString,
                                                                                           cst.ConcatenatedString))
        is_future = isinstance(first, cst.ImportFrom) and isinstance(first.module, cst.Name) \
            and first.module.value == "__future__"
        if is_docstring or is_future:
            insert_at = i + 1
        else:
            break
    # header comments (license, shebang) live in tree.header, so they stay above the new import
    new = [_import_line(m) for m in sorted(modules)]
    return tree.with_changes(body=body[:insert_at] + new + body[insert_at:])


def _import_line(module: str) -> cst.SimpleStatementLine:
    name = cst.parse_expression(module)
    assert isinstance(name, (cst.Attribute, cst.Name)), module  # fixes name the modules they import
    return cst.SimpleStatementLine([cst.Import([cst.ImportAlias(name)])])


def apply_fixes(tree: cst.Module, fixes: list[Fix], bound_names: set[str]) -> tuple[cst.Module, list[Fix]]:
    """The tree with the non-conflicting fixes applied, and the fixes that were applied."""
    targets: dict[int, int] = {}
    same_node: set[tuple[int, int]] = set()  # two fixes replacing one node (one method both extend)
    for index, fix in enumerate(fixes):
        for node, _ in fix.replacements:
            first = targets.setdefault(id(node), index)
            if first != index:
                same_node.add((first, index))
    spans = _Spans(targets)
    tree.visit(spans)
    rejected: set[int] = set()
    for outer, inner in sorted(spans.conflicts | same_node):
        if outer not in rejected:
            rejected.add(inner)
    chosen = [fix for i, fix in enumerate(fixes) if i not in rejected]
    replacements: dict[int, Replacement] = {}
    imports: set[str] = set()
    for fix in chosen:
        for node, replacement in fix.replacements:
            replacements[id(node)] = replacement
        imports.update(m for m in fix.imports if m not in bound_names)
    new_tree = tree.visit(_Replacer(replacements))
    if imports:
        new_tree = _ensure_imports(new_tree, imports)
    return new_tree, chosen
