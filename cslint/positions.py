"""Line and column of the nodes we report, without libcst's metadata pass over the whole file.

libcst's PositionProvider generates the code of the entire module and, through MetadataWrapper, walks
the whole tree once more; on a large modeling file that is a second or more. Findings live in traced
functions, which are top-level functions or methods of top-level classes, so we generate only the
top-level statement that holds them (with the same position rules as PositionProvider), find that
code in the file's text, and shift the lines. Anything we cannot place that way falls back to
generating the whole module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager

import libcst as cst
from libcst._position import CodePosition, CodeRange
from libcst.metadata.position_provider import PositionProvidingCodegenState

from cslint.analysis.index import Piece


class _Sink:
    """Stands in for the metadata provider the codegen state writes positions into."""

    def __init__(self) -> None:
        self._computed: dict[cst.CSTNode, CodeRange] = {}


class _Done(Exception):
    pass


class _StoppingState(PositionProvidingCodegenState):
    """PositionProvider's codegen state, stopping once the wanted nodes have their positions."""

    remaining: set[int]

    @contextmanager
    def record_syntactic_position(self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
                                  end_node: cst.CSTNode | None = None) -> Iterator[None]:
        # libcst's version, without its `finally`: when we stop, the enclosing nodes have no end
        start = CodePosition(self.line, self.column)
        yield
        computed = self.provider._computed  # type: ignore[attr-defined]
        first = computed[start_node].start if start_node is not None else start
        last = computed[end_node].end if end_node is not None else CodePosition(self.line, self.column)
        computed[node] = CodeRange(first, last)

    def after_codegen(self, node: cst.CSTNode) -> None:
        super().after_codegen(node)
        remaining = self.remaining
        if remaining and id(node) in remaining:
            remaining.discard(id(node))
            if not remaining:
                raise _Done


def _generate(node: cst.CSTNode, module: cst.Module, stop_after: Iterable[cst.CSTNode] = (),
              indent: str = "") -> tuple[str, dict[cst.CSTNode, CodeRange]]:
    sink = _Sink()
    state = _StoppingState(default_indent=module.default_indent, default_newline=module.default_newline,
                           provider=sink)  # type: ignore[arg-type]
    state.indent_tokens = [indent] if indent else []
    state.remaining = {id(n) for n in stop_after}
    with contextlib.suppress(_Done):
        node._codegen(state)
    return "".join(state.tokens), sink._computed


def whole_module_positions(module: cst.Module) -> dict[cst.CSTNode, CodeRange]:
    return _generate(module, module)[1]


def _method_positions(cls: cst.CSTNode, method: cst.CSTNode, module: cst.Module, text: str,
                      nodes: list[cst.CSTNode]) -> dict[cst.CSTNode, CodeRange] | None:
    """A method's code alone, indented as in its class: a class holding many traced methods is then
    not generated again for each of them."""
    body = getattr(cls, "body", None)
    if type(body) is not cst.IndentedBlock or not any(s is method for s in body.body):
        return None
    indent = body.indent if body.indent is not None else module.default_indent
    return _statement_positions(method, module, text, nodes, indent)


def _statement_positions(statement: cst.CSTNode, module: cst.Module, text: str, nodes: list[cst.CSTNode],
                         indent: str = "") -> dict[cst.CSTNode, CodeRange] | None:
    # The code up to the last wanted node is usually enough to find the statement in the text; if
    # it is not unique, generate the whole statement and try again.
    for stop_after in (nodes, ()):
        code, computed = _generate(statement, module, stop_after, indent)
        start = text.find(code)
        if not code or start < 0 or (start > 0 and text[start - 1] != "\n") or text.find(code, start + 1) >= 0:
            continue  # not found, or found twice: the line offset would be a guess
        offset = text.count("\n", 0, start)
        out = {}
        for node in nodes:
            r = computed.get(node)
            if r is None:
                return None
            out[node] = CodeRange(CodePosition(r.start.line + offset, r.start.column),
                                  CodePosition(r.end.line + offset, r.end.column))
        return out
    return None


Layout = tuple[str, dict[cst.CSTNode, CodeRange]]  # a function's code, and where each of its nodes is in it


def piece_layout(piece: Piece, function: cst.FunctionDef) -> Layout:
    """The code of a function parsed alone and the positions of all its nodes in it, to place any of
    them later (`piece_positions`) without generating the code again."""
    return _generate(function, piece.module, (), piece.indent)


def piece_positions(piece: Piece, function: cst.FunctionDef, text: str, nodes: list[cst.CSTNode],
                    layout: Layout | None = None) -> dict[cst.CSTNode, CodeRange] | None:
    """Positions of nodes of a function parsed alone: its code is the file's text at its span."""
    code, computed = layout if layout is not None else _generate(function, piece.module, nodes, piece.indent)
    if not code or not text.startswith(code, piece.span.start):
        return _statement_positions(function, piece.module, text, nodes, piece.indent)
    offset = piece.span.line - 1
    out = {}
    for node in nodes:
        r = computed.get(node)
        if r is None:
            return None
        out[node] = CodeRange(CodePosition(r.start.line + offset, r.start.column),
                              CodePosition(r.end.line + offset, r.end.column))
    return out


Wanted = tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None]  # node, its top-level statement, its method


def locate(module: cst.Module, text: str, wanted: Iterable[Wanted]) -> Mapping[cst.CSTNode, CodeRange]:
    """Positions for the `(node, top-level statement holding it or None, method of that statement
    holding it or None)` triples in `wanted`."""
    by_statement: dict[tuple[cst.CSTNode, cst.CSTNode | None], list[cst.CSTNode]] = {}
    top_level = {id(s) for s in module.body}
    whole = "\r" in text and "\r" in text.replace("\r\n", "")  # lone CRs: newlines libcst counts, we would not
    for node, statement, method in wanted:
        if statement is None or id(statement) not in top_level:
            whole = True
            break
        by_statement.setdefault((statement, method), []).append(node)
    if not whole:
        found: dict[cst.CSTNode, CodeRange] = {}
        for (statement, method), nodes in by_statement.items():
            positions = _method_positions(statement, method, module, text, nodes) if method is not None else None
            if positions is None:
                positions = _statement_positions(statement, module, text, nodes)
            if positions is None:
                whole = True
                break
            found.update(positions)
        if not whole and all(node in found for nodes in by_statement.values() for node in nodes):
            return found
    return whole_module_positions(module)
