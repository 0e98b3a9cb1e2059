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
import re
from collections.abc import Iterable, Mapping

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst._position import CodePosition, CodeRange

from cslint.analysis.index import Piece

_NEWLINE = re.compile(r"\r\n?|\n")  # what libcst's position state counts as a line break

Span = tuple[int, int, int, int]  # start line, start column, end line, end column


class _Done(Exception):
    pass


class _Syntactic:
    """`record_syntactic_position` of libcst's PositionProvider state, as a plain context manager (the
    generator-based one costs more than the code it times, for every expression and statement)."""

    __slots__ = ("state", "node", "start_node", "end_node", "line", "column")

    def __init__(self, state: _PositionState, node: cst.CSTNode, start_node: cst.CSTNode | None,
                 end_node: cst.CSTNode | None) -> None:
        self.state, self.node, self.start_node, self.end_node = state, node, start_node, end_node

    def __enter__(self) -> None:
        self.line, self.column = self.state.line, self.state.column

    def __exit__(self, kind: object, value: object, traceback: object) -> None:
        if kind is not None:
            return  # stopping (`_Done`): the enclosing nodes have no end
        state = self.state
        spans = state.spans
        line, column = (spans[id(self.start_node)][:2] if self.start_node is not None
                        else (self.line, self.column))
        end_line, end_column = (spans[id(self.end_node)][2:] if self.end_node is not None
                                else (state.line, state.column))
        spans[id(self.node)] = (line, column, end_line, end_column)


class _PositionState(CodegenState):
    """Generates code and the span of each node as libcst's PositionProvider does (the span of the
    syntax, without the whitespace a node owns), keyed by the node's id; stops once the wanted nodes
    have theirs."""

    def __init__(self, module: cst.Module, indent: str, stop_after: Iterable[cst.CSTNode]) -> None:
        super().__init__(default_indent=module.default_indent, default_newline=module.default_newline)
        self.indent_tokens = [indent] if indent else []
        self.line = 1  # one-based
        self.column = 0
        self.spans: dict[int, Span] = {}
        self.nodes: list[cst.CSTNode] = []  # every node with a span, to hand spans back by node
        self._starts: list[tuple[int, int]] = []
        self.remaining = {id(n) for n in stop_after}

    def add_token(self, value: str) -> None:
        self.tokens.append(value)
        if "\n" in value or "\r" in value:
            parts = _NEWLINE.split(value)
            self.line += len(parts) - 1
            self.column = len(parts[-1])
        else:
            self.column += len(value)

    def add_indent_tokens(self) -> None:
        for token in self.indent_tokens:
            self.add_token(token)

    def before_codegen(self, node: cst.CSTNode) -> None:
        self._starts.append((self.line, self.column))

    def after_codegen(self, node: cst.CSTNode) -> None:
        line, column = self._starts.pop()
        key = id(node)
        if key not in self.spans:  # a syntactic span recorded inside it stays
            self.spans[key] = (line, column, self.line, self.column)
        self.nodes.append(node)
        remaining = self.remaining
        if remaining and key in remaining:
            remaining.discard(key)
            if not remaining:
                raise _Done

    # libcst's returns its generator-based context manager, this one a `_Syntactic`
    def record_syntactic_position(  # type: ignore[override]
            self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None,
            end_node: cst.CSTNode | None = None) -> _Syntactic:
        return _Syntactic(self, node, start_node, end_node)


def _code_range(span: Span, line_offset: int = 0) -> CodeRange:
    return CodeRange(CodePosition(span[0] + line_offset, span[1]), CodePosition(span[2] + line_offset, span[3]))


class Layout:
    """A node's generated code and the spans of the nodes in it."""

    __slots__ = ("code", "spans", "_nodes")

    def __init__(self, state: _PositionState) -> None:
        self.code = "".join(state.tokens)
        self.spans = state.spans
        self._nodes = state.nodes

    def positions(self, nodes: Iterable[cst.CSTNode], line_offset: int = 0) -> dict[cst.CSTNode, CodeRange] | None:
        """The positions of `nodes`, shifted down by `line_offset` lines; None if one has none."""
        out = {}
        for node in nodes:
            span = self.spans.get(id(node))
            if span is None:
                return None
            out[node] = _code_range(span, line_offset)
        return out

    def all_positions(self) -> dict[cst.CSTNode, CodeRange]:
        return {node: _code_range(self.spans[id(node)]) for node in self._nodes}


def _generate(node: cst.CSTNode, module: cst.Module, stop_after: Iterable[cst.CSTNode] = (),
              indent: str = "") -> Layout:
    state = _PositionState(module, indent, stop_after)
    with contextlib.suppress(_Done):
        node._codegen(state)
    return Layout(state)


def whole_module_positions(module: cst.Module) -> dict[cst.CSTNode, CodeRange]:
    return _generate(module, module).all_positions()


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
        layout = _generate(statement, module, stop_after, indent)
        code = layout.code
        start = text.find(code)
        if not code or start < 0 or (start > 0 and text[start - 1] != "\n") or text.find(code, start + 1) >= 0:
            continue  # not found, or found twice: the line offset would be a guess
        return layout.positions(nodes, text.count("\n", 0, start))
    return None


def piece_layout(piece: Piece, function: cst.FunctionDef) -> Layout:
    """The code of a function parsed alone and the positions of all its nodes in it, to place any of
    them later (`piece_positions`) without generating the code again."""
    return _generate(function, piece.module, (), piece.indent)


def piece_positions(piece: Piece, function: cst.FunctionDef, text: str, nodes: list[cst.CSTNode],
                    layout: Layout | None = None) -> dict[cst.CSTNode, CodeRange] | None:
    """Positions of nodes of a function parsed alone: its code is the file's text at its span."""
    if layout is None:
        layout = _generate(function, piece.module, nodes, piece.indent)
    if not layout.code or not text.startswith(layout.code, piece.span.start):
        return _statement_positions(function, piece.module, text, nodes, piece.indent)
    return layout.positions(nodes, piece.span.line - 1)


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
