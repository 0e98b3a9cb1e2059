"""Line and column of the nodes we report, without libcst's metadata pass over the whole file.

libcst's PositionProvider generates the code of the entire module and, through MetadataWrapper, walks
the whole tree once more; on a large modeling file that is a second or more. Findings live in traced
functions, which are top-level functions or methods of top-level classes, so we generate only the
top-level statement that holds them (with the same position rules as PositionProvider), find that
code in the file's text, and shift the lines. Anything we cannot place that way falls back to
generating the whole module.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import libcst as cst
from libcst._position import CodePosition, CodeRange
from libcst.metadata.position_provider import PositionProvidingCodegenState


class _Sink:
    """Stands in for the metadata provider the codegen state writes positions into."""

    def __init__(self) -> None:
        self._computed: dict[cst.CSTNode, CodeRange] = {}


def _generate(node: cst.CSTNode, module: cst.Module) -> tuple[str, dict[cst.CSTNode, CodeRange]]:
    sink = _Sink()
    state = PositionProvidingCodegenState(default_indent=module.default_indent,
                                          default_newline=module.default_newline, provider=sink)  # type: ignore[arg-type]
    node._codegen(state)
    return "".join(state.tokens), sink._computed


def whole_module_positions(module: cst.Module) -> dict[cst.CSTNode, CodeRange]:
    return _generate(module, module)[1]


def _statement_positions(statement: cst.CSTNode, module: cst.Module,
                         text: str) -> dict[cst.CSTNode, CodeRange] | None:
    code, computed = _generate(statement, module)
    start = text.find(code)
    if not code or start < 0 or (start > 0 and text[start - 1] != "\n") or text.find(code, start + 1) >= 0:
        return None  # not found, or found twice: the line offset would be a guess
    offset = text.count("\n", 0, start)
    return {node: CodeRange(CodePosition(r.start.line + offset, r.start.column),
                            CodePosition(r.end.line + offset, r.end.column)) for node, r in computed.items()}


def locate(module: cst.Module, text: str,
           wanted: Iterable[tuple[cst.CSTNode, cst.CSTNode | None]]) -> Mapping[cst.CSTNode, CodeRange]:
    """Positions for the `(node, top-level statement holding it or None)` pairs in `wanted`."""
    by_statement: dict[cst.CSTNode, list[cst.CSTNode]] = {}
    top_level = {id(s) for s in module.body}
    whole = "\r" in text and "\r" in text.replace("\r\n", "")  # lone CRs: newlines libcst counts, we would not
    for node, statement in wanted:
        if statement is None or id(statement) not in top_level:
            whole = True
            break
        by_statement.setdefault(statement, []).append(node)
    if not whole:
        found: dict[cst.CSTNode, CodeRange] = {}
        for statement in by_statement:
            positions = _statement_positions(statement, module, text)
            if positions is None:
                whole = True
                break
            found.update(positions)
        if not whole and all(node in found for nodes in by_statement.values() for node in nodes):
            return found
    return whole_module_positions(module)
