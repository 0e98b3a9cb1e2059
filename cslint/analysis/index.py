"""One pass over a parsed file: its imports, classes, functions and their decorators (from libcst's tree, or
from Python's `ast` with what ast_statements.py reads of its statements).

This is all that cross-file analysis needs to know about a file that contains no traced code, so it is
kept separate from (and much cheaper than) tensor-value inference.
"""

from __future__ import annotations

import ast
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

import libcst as cst

from cslint.analysis.ast_statements import (
    ast_base, calls_trace_wrapper, collect_ast_imports, has_toplevel_root_call, note_ast_function_table,
    object_assignments,
)
from cslint.analysis.bindings import Binding, ast_bindings
from cslint.analysis.function_tables import Table, cst_table
from cslint.analysis.import_scan import ast_dotted_name
from cslint.analysis.piece_pool import PiecePool
from cslint.analysis.imports import ImportTable, dotted_name
from cslint.analysis.walk import visit
from cslint.core.targets import wrapper_names
from cslint.support.line_shifts import line_shifts


@dataclass(frozen=True)
class Span:
    """Where a function's text is in its file: from its first decorator to the end of its last line."""

    start: int  # offset in the text
    end: int
    line: int  # of `start`


@dataclass(eq=False)
class Piece:
    """A function parsed on its own (`Span`'s text; a method inside a `class _:` line). Its nodes are
    located by generating its code with its indent and shifting the lines."""

    module: cst.Module  # what was parsed: its default indent and newline are the file's
    span: Span
    indent: str


@dataclass(eq=False)
class FunctionInfo:
    qualname: str  # pkg.mod.Class.method or pkg.mod.func
    name: str
    module: ModuleInfo
    cls: ClassInfo | None = None
    decorators: list[str] = field(default_factory=list)  # qualified where imports tell
    _node: cst.FunctionDef | None = None
    step_function: bool = False  # traced as a training step without a decorator (an xm.mark_step loop)
    _signature: tuple[tuple[str, ...], str | None] | None = None
    span: Span | None = None  # known for `ast`-indexed files, whose functions can be parsed one by one
    piece: Piece | None = None  # set while the node comes from parsing this function alone

    @property
    def node(self) -> cst.FunctionDef:
        if self._node is None:
            self.module.load_function(self)
        elif self.module.budget is not None:
            self.module.budget.touched(self.module)
        assert self._node is not None
        return self._node

    @property
    def signature(self) -> tuple[tuple[str, ...], str | None]:
        """Positional parameter names and the `*args` name: what binding a call needs. Kept when the
        tree is given back, so calling into a file does not parse it again."""
        if self._signature is None:
            p = self.node.params
            star = p.star_arg.name.value if isinstance(p.star_arg, cst.Param) else None
            self._signature = (tuple(x.name.value for x in (*p.posonly_params, *p.params)), star)
        return self._signature

    @property
    def display_name(self) -> str:
        return f"{self.cls.name}.{self.name}" if self.cls else self.name

    @property
    def is_static_method(self) -> bool:
        return any(d.split(".")[-1] == "staticmethod" for d in self.decorators)

    @property
    def is_class_method(self) -> bool:
        return any(d.split(".")[-1] == "classmethod" for d in self.decorators)

    @property
    def is_property(self) -> bool:
        return any(d.split(".")[-1] in ("property", "cached_property") for d in self.decorators)


@dataclass(eq=False)
class ClassInfo:
    qualname: str
    name: str
    module: ModuleInfo
    bases: list[str] = field(default_factory=list)  # qualified names of the base expressions
    methods: dict[str, FunctionInfo] = field(default_factory=dict)
    _node: cst.ClassDef | None = None
    # class attributes bound to a dict of functions (`_global_mapping = {"sdpa": sdpa_attention}`): a
    # registry its instances are subscripted for a function; its entries (function_tables.py)
    function_tables: dict[str, Table] = field(default_factory=dict)
    span: Span | None = None  # known for `ast`-indexed files

    @property
    def node(self) -> cst.ClassDef:
        self.module.use()
        assert self._node is not None
        return self._node


@dataclass(eq=False)
class ModuleInfo:
    """A file's index. Built from libcst's tree, or, for files unlikely to hold traced code, from Python's
    much faster `ast` with `loader` parsing the libcst tree only when something asks for a node."""

    name: str
    path: Path
    source: str
    imports: ImportTable
    is_package: bool = False
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    functions: dict[str, FunctionInfo] = field(default_factory=dict)
    _tree: cst.Module | None = None
    loader: Callable[[], cst.Module] | None = None
    # Parses a piece of the file (a function, some assignments) when the whole tree is not needed.
    piece_parser: Callable[[str], cst.Module] | None = None
    top_level_imports: list[tuple[str, str | None]] | None = None  # (module, alias) of top-level `import`s
    # the module-level assignments that may bind an object (bindings.py; see `object_assignments`), from
    # indexing; None: read them from the tree
    object_bindings: list[Binding] | None = None
    # module-level names bound to a table of functions (`ATTENTION = {"eager": eager_attention}`, nested dicts,
    # lists, tuples); see ClassInfo
    function_tables: dict[str, Table] = field(default_factory=dict)
    # call expressions at module level (`torch.compile(fn)` marks fn as a root); None: not collected yet
    _toplevel_calls: list[cst.Call] | None = None
    may_have_toplevel_roots: bool = True
    # the module-level statements with a call naming a trace wrapper (`torch.compile(fn)`): where
    # `toplevel_calls` looks, so a large file is not parsed whole for them; None: look in the whole tree
    root_call_statements: list[Span] | None = None
    # Bounded memory: a module with a loader may give its tree back (`release`) unless it is held; the
    # budget hears of every load. Whatever is computed from the tree and holds its nodes goes in
    # `tree_data`, which goes with it.
    budget: TreeBudget | None = None
    holds: int = 0
    tree_data: dict[str, Any] = field(default_factory=dict)
    loaded: bool = False  # a tree or a function's piece was parsed since the last `release`
    # a module of an installed library read as context (analysis/libraries.py): its distribution's
    # (name, version), the version empty when unknown; None for the linted project's modules
    library: tuple[str, str] | None = None
    # where functions parsed alone go when the tree is given back, for a function of the same text later
    spare_pieces: PiecePool | None = None

    @property
    def tree(self) -> cst.Module:
        self.use()
        assert self._tree is not None
        return self._tree

    def use(self) -> None:
        """The tree is about to be read: parse it if needed, and count it as recently used."""
        if self._tree is None:
            self.materialise()
        elif self.budget is not None:
            self.budget.touched(self)

    @property
    def toplevel_calls(self) -> list[cst.Call]:
        if self._toplevel_calls is None:
            collector = _ToplevelCallCollector()
            if self.may_have_toplevel_roots and any(name in self.source for name in wrapper_names()):
                spans = self.root_call_statements
                statements = self.parse_pieces(spans) if spans else [] if spans is not None else None
                for node in statements if statements is not None else [self.tree]:
                    visit(node, collector)
            self._toplevel_calls = collector.calls
        return self._toplevel_calls

    def materialise(self) -> None:
        """Parse the libcst tree of an `ast`-indexed module and give every class and function its node
        (a function parsed alone keeps the node it has)."""
        if self._tree is not None:
            return
        if self.loader is None:
            raise RuntimeError(f"no syntax tree for {self.path}")
        tree = self.loader()
        # in body order, so a name defined twice gets its last definition, as in the index
        for stmt in tree.body:
            if isinstance(stmt, cst.ClassDef) and stmt.name.value in self.classes:
                cls = self.classes[stmt.name.value]
                cls._node = stmt
                body = stmt.body.body if isinstance(stmt.body, cst.IndentedBlock) else ()
                for inner in body:
                    if isinstance(inner, cst.FunctionDef) and inner.name.value in cls.methods and not _is_accessor(
                            inner.name.value, (dotted_name(d.decorator) for d in inner.decorators)):
                        _give_node(cls.methods[inner.name.value], inner)
            elif isinstance(stmt, cst.FunctionDef) and stmt.name.value in self.functions:
                _give_node(self.functions[stmt.name.value], stmt)
        self._tree = tree
        self.loaded = True
        if self.budget is not None:
            self.budget.loaded(self, len(self.source))

    def load_function(self, func: FunctionInfo) -> None:
        """Give `func` its node: parsed alone when its span is known (most functions of a file are never
        traced, and reading them is most of a parse), else from the whole tree."""
        if self._tree is not None or func.span is None or self.piece_parser is None:
            self.use()
            return
        span = func.span
        text = self.source[span.start:span.end]
        wrapped = func.cls is not None  # a method: indented, so it needs a class to be in
        try:  # (a method is given back to `spare_pieces` under the same text)
            parsed = self.piece_parser("class _:\n" + text if wrapped else text)
            stmt = parsed.body[0]
            node = stmt.body.body[0] if wrapped and isinstance(stmt, cst.ClassDef) else stmt
        except (cst.ParserSyntaxError, RecursionError, IndexError, AttributeError):
            node = None
        if not isinstance(node, cst.FunctionDef) or node.name.value != func.name:
            self.use()  # a function libcst will not parse alone: the whole file, as before
            return
        func._node = node
        func.piece = Piece(parsed, span, text[:len(text) - len(text.lstrip(" \t"))])
        self.loaded = True
        if self.budget is not None:
            self.budget.loaded(self, span.end - span.start)

    def parse_pieces(self, spans: list[Span]) -> list[cst.BaseStatement] | None:
        """The statements at `spans`, parsed together without the rest of the file; None if they cannot
        be (the caller then reads the whole tree)."""
        if self.piece_parser is None or self._tree is not None:
            return None
        # an indented statement goes in an `if 1:` block: a block's indent is whatever its first line has
        wrapped = [self.source[s.start] in " \t" for s in spans]
        text = "".join(("if 1:\n" if wrap else "") + self.source[s.start:s.end] for s, wrap in zip(spans, wrapped))
        try:
            body = self.piece_parser(text).body
        except (cst.ParserSyntaxError, RecursionError):
            return None
        if len(body) != len(spans):
            return None
        statements: list[cst.BaseStatement] = []
        for stmt, wrap in zip(body, wrapped):  # a statement that is an `if` itself stays one
            if wrap and isinstance(stmt, cst.If) and isinstance(stmt.body, cst.IndentedBlock):
                statements.append(stmt.body.body[0])
            else:
                statements.append(stmt)
        return statements

    @contextmanager
    def held(self) -> Iterator[None]:
        """Keep the tree (once loaded) while nodes of it are in use: an analysis, its rules, its positions."""
        self.holds += 1
        if self.budget is not None:
            self.budget.touched(self)
        try:
            yield
        finally:
            self.holds -= 1

    def release(self) -> bool:
        """Drop the tree and every node reference into it; the next use parses the file again."""
        if self.loader is None or self.holds:
            return False
        self.loaded = False
        self._tree = None
        self._toplevel_calls = None
        self.tree_data.clear()
        for cls in self.classes.values():
            cls._node = None
            for method in cls.methods.values():
                self._give_back(method)
        for func in self.functions.values():
            self._give_back(func)
        return True

    def _give_back(self, func: FunctionInfo) -> None:
        piece = func.piece
        if piece is not None and self.spare_pieces is not None:
            text = self.source[piece.span.start:piece.span.end]
            self.spare_pieces.give_back("class _:\n" + text if func.cls is not None else text, piece.module)
        func._node = func.piece = None


class TreeBudget:
    """The libcst trees of ast-indexed modules kept in memory: at most `limit` bytes of their source (a
    tree takes many times the memory of its source), least recently used given back first. Memory then depends on
    this limit and on the largest file, not on how many files a run analyses together."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.size = 0
        self.resident: OrderedDict[ModuleInfo, int] = OrderedDict()

    def loaded(self, module: ModuleInfo, size: int) -> None:
        """`size` more bytes of `module`'s source are held as a tree (the whole file, or one function)."""
        self.resident[module] = self.resident.get(module, 0) + size
        self.resident.move_to_end(module)
        self.size += size
        self._trim(keep=module)

    def touched(self, module: ModuleInfo) -> None:
        if module in self.resident:
            self.resident.move_to_end(module)

    def _trim(self, keep: ModuleInfo) -> None:
        """Give back trees, least recently used first, until within the limit. Only the trees looked at
        are taken out (a copy of the whole list on every load took time growing with the modules held:
        the analysis of a thousand models meeting in one helper holds thousands)."""
        held = []  # trees in use, or the one just loaded: kept, in their place
        while self.size > self.limit and self.resident:
            module, size = self.resident.popitem(last=False)
            if module is not keep and module.release():
                self.size -= size
            else:
                held.append((module, size))
        for module, size in reversed(held):
            self.resident[module] = size
            self.resident.move_to_end(module, last=False)


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
    blocks: list[Sequence[cst.CSTNode]] = []
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


def _give_node(func: FunctionInfo, node: cst.FunctionDef) -> None:
    if func.piece is None:  # a function parsed alone keeps that node: analyses may hold it
        func._node = node


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
    info = ModuleInfo(name=name, path=path, source=source, _tree=tree, imports=imports, is_package=is_package)
    for stmt in tree.body:
        if isinstance(stmt, cst.ClassDef):
            imports.add_definition(stmt.name.value)
            info.classes[stmt.name.value] = _index_class(stmt, info)
        elif isinstance(stmt, cst.FunctionDef):
            imports.add_definition(stmt.name.value)
            info.functions[stmt.name.value] = _index_function(stmt, info, None, f"{name}.{stmt.name.value}")
        elif isinstance(stmt, cst.SimpleStatementLine):
            _note_function_tables(stmt.body, info.function_tables)
    return info


def _is_accessor(name: str, decorators: Iterable[str | None]) -> bool:
    """`@loss_function.setter` / `.deleter`: the property's other accessors; `loss_function` stays the getter."""
    return any(d in (f"{name}.setter", f"{name}.deleter") for d in decorators)


def _note_function_tables(statements: Sequence[cst.CSTNode], tables: dict[str, Table]) -> None:
    """`NAME = {"a": f, "b": {"c": mod.g}}` (or annotated, or a list or tuple of functions): NAME -> its
    entries (function_tables.py); any other binding of NAME forgets it (the last binding wins, as at run time)."""
    for stmt in statements:
        if isinstance(stmt, cst.Assign):
            targets, value = [t.target for t in stmt.targets], stmt.value
        elif isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        else:
            continue
        table = cst_table(value)
        for target in targets:
            if isinstance(target, cst.Name):
                if table is not None:
                    tables[target.value] = table
                else:
                    tables.pop(target.value, None)


def _index_function(node: cst.FunctionDef, module: ModuleInfo, cls: ClassInfo | None, qualname: str) -> FunctionInfo:
    decorators = [_decorator_name(d, module.imports) for d in node.decorators]
    return FunctionInfo(qualname=qualname, name=node.name.value, _node=node, module=module, cls=cls,
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
    info = ClassInfo(qualname=qualname, name=node.name.value, _node=node, module=module, bases=bases)
    body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef):
            if stmt.name.value in info.methods and _is_accessor(stmt.name.value, (
                    dotted_name(d.decorator) for d in stmt.decorators)):
                continue
            info.methods[stmt.name.value] = _index_function(stmt, module, info, f"{qualname}.{stmt.name.value}")
        elif isinstance(stmt, cst.SimpleStatementLine):
            _note_function_tables(stmt.body, info.function_tables)
    return info


# ---- the same index from Python's ast ------------------------------------------------------------


def index_module_from_ast(path: Path, source: str, tree: ast.Module, name: str, is_package: bool,
                          loader: Callable[[], cst.Module]) -> ModuleInfo:
    """`index_module` for a file parsed with `ast`: same imports, classes, bases, methods and decorators
    (in the same order, so later bindings win the same way); nodes come from `loader` on demand."""
    package = name if is_package else name.rpartition(".")[0]
    imports = ImportTable(name, package)
    spans = _Spans(source)
    shifts = line_shifts(tree)  # an edited buffer's statements may keep an earlier text's line numbers
    for stmt, spans.shift in zip(tree.body, shifts):
        collect_ast_imports([stmt], imports, spans.may_import if spans.usable else None)
    info = ModuleInfo(name=name, path=path, source=source, imports=imports, is_package=is_package, loader=loader)
    info.may_have_toplevel_roots = has_toplevel_root_call(tree)
    for stmt, spans.shift in zip(tree.body, shifts):
        if isinstance(stmt, ast.ClassDef):
            imports.add_definition(stmt.name)
            cls = ClassInfo(qualname=f"{name}.{stmt.name}", name=stmt.name, module=info,
                            bases=[imports.qualify(d) for d in map(ast_base, stmt.bases) if d is not None],
                            span=spans.of(stmt) if spans.usable else None)
            for inner in stmt.body:
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    if inner.name in cls.methods and \
                            _is_accessor(inner.name, map(ast_dotted_name, inner.decorator_list)):
                        continue
                    cls.methods[inner.name] = _ast_function(inner, info, cls, f"{cls.qualname}.{inner.name}", spans)
                else:
                    note_ast_function_table(inner, cls.function_tables)
            info.classes[stmt.name] = cls
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            imports.add_definition(stmt.name)
            info.functions[stmt.name] = _ast_function(stmt, info, None, f"{name}.{stmt.name}", spans)
        else:
            note_ast_function_table(stmt, info.function_tables)
    info.top_level_imports = [(a.name, a.asname) for stmt in tree.body if isinstance(stmt, ast.Import)
                              for a in stmt.names]
    if spans.usable and info.may_have_toplevel_roots:
        info.root_call_statements = [spans.of(stmt) for stmt, spans.shift in zip(tree.body, shifts)
                                     if calls_trace_wrapper(stmt, imports)]
    info.object_bindings = ast_bindings(object_assignments(tree.body))
    return info


class _Spans:
    """Spans of statements from `ast` line numbers, plus `shift`: how far the top-level statement they are
    in has moved since it was numbered (line_shifts.py). Not usable when the text has a lone carriage
    return: `ast` and libcst would count its lines differently from us."""

    def __init__(self, text: str) -> None:
        self.usable = "\r" not in text or "\r" not in text.replace("\r\n", "")
        self.shift = 0
        self.length = len(text)
        self.starts = [0]
        self.import_lines: list[int] = []  # the lines holding the word `import`, in order
        if self.usable:
            # each line's start is the sum of the lengths of the lines before it, with their newlines
            self.starts += accumulate(map((1).__add__, map(len, text.split("\n")[:-1])))
            find, at = text.find, text.find("import")
            while at >= 0:
                self.import_lines.append(bisect_right(self.starts, at))
                at = find("import", at + 6)

    def of(self, node: ast.stmt) -> Span:
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))]) + self.shift
        last = (node.end_lineno or node.lineno) + self.shift
        end = self.starts[last] if last < len(self.starts) else self.length
        return Span(self.starts[first - 1], end, first)

    def may_import(self, node: ast.stmt) -> bool:
        """Whether a statement's lines hold the word `import` (any import statement in it does)."""
        lines = self.import_lines
        at = bisect_left(lines, node.lineno + self.shift)
        return at < len(lines) and lines[at] <= (node.end_lineno or node.lineno) + self.shift


def _ast_function(node: ast.FunctionDef | ast.AsyncFunctionDef, module: ModuleInfo, cls: ClassInfo | None,
                  qualname: str, spans: _Spans) -> FunctionInfo:
    decorators = []
    for dec in node.decorator_list:
        dotted = ast_dotted_name(dec.func if isinstance(dec, ast.Call) else dec)
        decorators.append(module.imports.qualify(dotted) if dotted is not None else "")
    args = node.args
    signature = (tuple(a.arg for a in (*args.posonlyargs, *args.args)), args.vararg.arg if args.vararg else None)
    return FunctionInfo(qualname=qualname, name=node.name, module=module, cls=cls, decorators=decorators,
                        _signature=signature, span=spans.of(node) if spans.usable else None)
