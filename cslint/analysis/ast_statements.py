"""What indexing from Python's `ast` (index.py: `index_module_from_ast`) reads of a file's statements: the
imports, the dicts of functions a name is bound to, the module-level assignments that may bind an object,
and the module-level calls that may make a function a root (`torch.compile(step)`)."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator

from cslint.analysis.function_tables import Table, ast_table
from cslint.analysis.import_scan import ast_dotted_name, resolve_relative
from cslint.analysis.imports import ImportTable
from cslint.core.targets import trace_wrappers, wrapper_names


def object_assignments(body: list[ast.stmt]) -> list[tuple[ast.Assign | ast.AnnAssign, bool]]:
    """The statements holding the assignments that can bind a module-level object (`model = GPT(config)`,
    `m = model`, `_rfft = _new_rfft`), and those that rebind such a name to something else, at top level and
    in `if`/`else` and `try`/`except` blocks (not one-line `if`s): in the order they run, each with whether it
    is an alternative to what runs before it (an `else` branch, an `except` handler: bindings.py)."""
    found: list[tuple[ast.Assign | ast.AnnAssign, bool]] = []

    def scan(statements: list[ast.stmt], alternative: bool) -> None:
        for stmt in statements:
            if isinstance(stmt, ast.Assign) or isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                found.append((stmt, alternative))
            elif isinstance(stmt, ast.If) and stmt.body and stmt.body[0].lineno > stmt.lineno:
                scan(stmt.body, alternative)
                scan(stmt.orelse, True)
            elif isinstance(stmt, ast.Try):
                scan(stmt.body, alternative)
                for handler in stmt.handlers:
                    scan(handler.body, True)
                scan(stmt.orelse, alternative)

    scan(body, False)

    def targets(stmt: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
        return stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]

    binding = {t.id for a, _ in found if isinstance(a.value, (ast.Call, ast.Name, ast.Attribute))
               for t in targets(a) if isinstance(t, ast.Name)}
    return [(a, alternative) for a, alternative in found if isinstance(a.value, (ast.Call, ast.Name, ast.Attribute))
            or any(isinstance(t, ast.Name) and t.id in binding for t in targets(a))]


def note_ast_function_table(stmt: ast.stmt, tables: dict[str, Table]) -> None:
    """`_note_function_tables` for an `ast` statement."""
    if isinstance(stmt, ast.Assign):
        targets, value = stmt.targets, stmt.value
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets, value = [stmt.target], stmt.value
    else:
        return
    table = ast_table(value)
    for target in targets:
        if isinstance(target, ast.Name):
            if table is not None:
                tables[target.id] = table
            else:
                tables.pop(target.id, None)


def ast_base(node: ast.expr) -> str | None:
    return ast_dotted_name(node.value if isinstance(node, ast.Subscript) else node)


def collect_ast_imports(body: list[ast.stmt], table: ImportTable,
                        may_import: Callable[[ast.stmt], bool] | None = None) -> None:
    """`_collect_imports` over ast statements, visiting blocks in the same order (body, orelse,
    finalbody, handlers, cases) so that a name imported twice ends up bound the same way. With
    `may_import`, only into the statements it lets through (the others hold no import: a function
    without one is most of a file's statements)."""
    for stmt in body:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname is not None:
                    table.names[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    table.names[head] = head
        elif isinstance(stmt, ast.ImportFrom):
            module = stmt.module or ""
            if stmt.level:
                module = resolve_relative(table.package, stmt.level, module)
            if any(alias.name == "*" for alias in stmt.names):
                if module and module not in table.stars:
                    table.stars.append(module)
                continue
            for alias in stmt.names:
                table.names[alias.asname or alias.name] = f"{module}.{alias.name}" if module else alias.name
        elif may_import is None or may_import(stmt):
            for attr in ("body", "orelse", "finalbody"):
                block = getattr(stmt, attr, None)
                if isinstance(block, list):
                    collect_ast_imports(block, table, may_import)
            for handler in getattr(stmt, "handlers", ()):
                collect_ast_imports(handler.body, table, may_import)
            for case in getattr(stmt, "cases", ()):
                collect_ast_imports(case.body, table, may_import)


def module_level_calls(nodes: list[ast.stmt]) -> Iterator[ast.Call]:
    """The calls in module-level statements, outside the functions and classes they define."""
    stack: list[ast.AST] = list(nodes)
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in _HOLD_NO_CALLS:
            continue
        if isinstance(node, ast.Call):
            yield node
        stack.extend(ast.iter_child_nodes(node))


# nodes with no call of the module's own in them (definitions' bodies are their own), and leaves
_HOLD_NO_CALLS = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom,
                            ast.Constant, ast.Name, ast.Load, ast.Store, ast.Del, ast.alias, ast.Pass})


def calls_trace_wrapper(stmt: ast.stmt, imports: ImportTable) -> bool:
    """Whether a module-level statement calls what its imports make a trace wrapper (`torch.compile`, as
    `ImportTable.resolve` reads the call's name)."""
    for call in module_level_calls([stmt]):
        dotted = ast_dotted_name(call.func)
        if dotted is not None and dotted.partition(".")[0] in imports.names and \
                imports.qualify(dotted) in trace_wrappers():
            return True
    return False


def has_toplevel_root_call(tree: ast.Module) -> bool:
    """Whether a call outside functions and classes could be `torch.compile(fn)`-like: named as a target's
    wrapper is (`targets.wrapper_names`), or not named at all."""
    names = wrapper_names()
    for call in module_level_calls(tree.body):
        dotted = ast_dotted_name(call.func)
        if dotted is None or dotted.rsplit(".", 1)[-1] in names:
            return True
    return False
