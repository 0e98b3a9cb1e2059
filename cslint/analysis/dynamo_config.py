"""The project's `torch._dynamo.config` settings that change what breaks dynamo's graph, read from the code
(never run).

Two settings make dynamo capture what it otherwise breaks the graph on (torch 2.13, `output_graph.py`):
`capture_scalar_outputs` (`t.item()`, `float(t)`: an unbacked symbolic number instead of a read) and
`capture_dynamic_output_shape_ops` (`nonzero`, `masked_select`, `unique`, `x[mask]`: a tensor of unbacked
size). `fullgraph=True` turns both on for the graph it compiles. A project sets them for every compile
by assigning them at module level (`torch._dynamo.config.capture_scalar_outputs = True`, also through
`import torch._dynamo.config as cfg` or `from torch._dynamo import config`), or for a region with
`torch._dynamo.config.patch(...)` (cslint/analysis/compile_options.py reads the decorator form). Read
with `ast` only: choosing the target reads them, and a run served from the cache never imports libcst.
`torch.compile(options=...)` does not take them: its options are Inductor's, and dynamo's names are
rejected there ("Unexpected optimization option").
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable

SCALAR_OUTPUTS = "capture_scalar_outputs"
DYNAMIC_OUTPUT_SHAPES = "capture_dynamic_output_shape_ops"
SETTINGS = (SCALAR_OUTPUTS, DYNAMIC_OUTPUT_SHAPES)
CONFIG_MODULE = "torch._dynamo.config"
PATCH = f"{CONFIG_MODULE}.patch"


# A file larger than this is not parsed for settings (they stay off: the findings are kept). A script that
# sets them is small; a large file full of statements would take Python's parser seconds before the check.
MAX_PARSED = 1_000_000
_ASSIGNMENT = re.compile(r"\b(?:capture_scalar_outputs|capture_dynamic_output_shape_ops)[ \t]*=[^=]")


def mentions_settings(text: str) -> bool:
    return "capture_" in text and _ASSIGNMENT.search(text) is not None


def assigned_settings(text: str) -> tuple[tuple[str, bool], ...]:
    """The settings the file's module-level code assigns a literal True or False, in file order (also in
    module-level `if`/`try`/`with` blocks, such as `if __name__ == "__main__":`; not in functions). A file
    Python cannot parse assigns nothing (the check reports it), nor does one over MAX_PARSED characters."""
    if len(text) > MAX_PARSED or not mentions_settings(text):
        return ()
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return ()
    aliases: dict[str, str] = {}
    found: list[tuple[str, bool]] = []
    for stmt in _module_level(tree.body):
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                if alias.asname is not None:
                    aliases[alias.asname] = alias.name
                else:
                    top = alias.name.partition(".")[0]
                    aliases[top] = top
        elif isinstance(stmt, ast.ImportFrom) and stmt.module and not stmt.level:
            for alias in stmt.names:
                aliases[alias.asname or alias.name] = f"{stmt.module}.{alias.name}"
        elif isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) \
                and isinstance(stmt.value.value, bool):
            for target in stmt.targets:
                if isinstance(target, ast.Attribute) and target.attr in SETTINGS \
                        and _qualified(target.value, aliases) == CONFIG_MODULE:
                    found.append((target.attr, stmt.value.value))
    return tuple(found)


def _module_level(body: list[ast.stmt]) -> Iterable[ast.stmt]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.If, ast.Try, ast.With)):
            for block in (stmt.body, getattr(stmt, "orelse", ()), getattr(stmt, "finalbody", ()),
                          *(h.body for h in getattr(stmt, "handlers", ()))):
                yield from _module_level(list(block))


def _qualified(node: ast.expr, aliases: dict[str, str]) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    return ".".join([aliases[node.id], *reversed(parts)])


def project_settings(assignments: Iterable[tuple[tuple[str, bool], ...]]) -> tuple[str, ...]:
    """The settings the project turns on: assigned True somewhere and False nowhere (files assigning both
    ways leave which one holds to the order they run in, which cslint does not know: the finding stays)."""
    values: dict[str, set[bool]] = {}
    for found in assignments:
        for name, value in found:
            values.setdefault(name, set()).add(value)
    return tuple(name for name in SETTINGS if values.get(name) == {True})
