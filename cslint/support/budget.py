"""How much parsing work a file may cost, judged before libcst sees it.

libcst's parser takes time that grows with the cube of an expression's depth (a long `x.f().f()...`
chain or `x + x + ...` line can take hours) and memory that explodes on deep bracket nesting. Python's
own parser is linear, and refuses more than 200 nested brackets. So a file is first measured with
Python's parser: nesting Python refuses is a syntax error with Python's message, and a file whose
statements would cost more than the budget is one finding (WSC004) instead of an analysis.

The cost of a statement is the cube of its expression depth beyond 16, in tenths: a depth-200
statement costs (184 / 10)^3 = 6,230 units, and the default budget of 200,000 is 32 of those per file
(a wait of seconds, not hours: docs/performance.md). Real code stays far below: statements are rarely more than
16 levels deep (the stdlib and torch: see bench/robustness.py).

Depth says nothing of length: Python's parser and its tree take time and memory in proportion to a file's
tokens, so a file of more tokens than `max-file-tokens` is one finding
too, counted before any parser sees it (docs/configuration.md gives the limit and the largest real files).
"""

from __future__ import annotations

import ast
import re
from itertools import accumulate

from cslint.support.line_shifts import line_shifts, renumbered

DEFAULT_BUDGET = 200_000
FREE_DEPTH = 16
PYTHON_MAX_NESTING = 200  # CPython's tokenizer: "too many nested parentheses" beyond this
_BRACKETS = re.compile(r"[][(){}]")
_STEP = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # lines as Python's parser numbers them
# A token as Python's tokenizer sees it, nearly: a string literal (to its closing quote, or unterminated
# to the end of its line or the text: every string match ends where it can, without backtracking, so the
# count is linear however quotes and backslashes are arranged), a comment, a name or number, or one
# character of an operator.
_TOKEN = re.compile(
    r'[rRbBuUfF]{0,2}(?:"""(?>[^"\\]*+(?:(?:\\[\s\S]?+|"(?!""))[^"\\]*+)*+)(?:"""|\Z)'
    r"|'''(?>[^'\\]*+(?:(?:\\[\s\S]?+|'(?!''))[^'\\]*+)*+)(?:'''|\Z)"
    r'|"(?>[^"\\\n]*+(?:\\[\s\S]?+[^"\\\n]*+)*+)(?:"|(?=\n)|\Z)'
    r"|'(?>[^'\\\n]*+(?:\\[\s\S]?+[^'\\\n]*+)*+)(?:'|(?=\n)|\Z))"
    r"|#[^\n]*|\w+|[^\w\s]")


def source_lines(text: str) -> list[str]:
    """The text's lines, with their ends, numbered as `ast` numbers them (str.splitlines also splits at
    form feeds and other separators)."""
    return _LINE.findall(text)


def token_count(text: str, stop_after: int = 0) -> int:
    """About how many tokens Python's tokenizer would find in the text (a string or a comment is one, an
    operator of two characters two), counting no further than `stop_after` when it is given. Python's
    parser, its `ast` tree and libcst's take time and memory in proportion (libcst's tree several
    kilobytes a token), so this is what bounds a file's analysis before anything parses it."""
    return _TOKEN.subn("", text, count=stop_after)[1]


def too_many_tokens(text: str, limit: int) -> str | None:
    """The WSC004 message for a text of more than `limit` tokens, else None. Every token takes a
    character, so a text of at most `limit` characters is not counted; a longer one only up to the limit."""
    if len(text) <= limit or token_count(text, stop_after=limit + 1) <= limit:
        return None
    return f"file not analysed: more tokens than the limit of {limit:,} (`max-file-tokens`)"


def may_nest_too_deep(text: str) -> bool:
    """Whether the text may nest brackets deeper than Python allows (brackets in strings and comments
    count too, so a True is checked with Python's parser)."""
    brackets = _BRACKETS.findall(text)
    if len(brackets) <= PYTHON_MAX_NESTING:
        return False
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > PYTHON_MAX_NESTING


def statement_cost(depth: int) -> float:
    """Units of parsing work for a statement whose expressions are `depth` levels deep: statements up to
    FREE_DEPTH deep cost nothing (their work is linear, bounded by the size limit), deeper ones grow
    with the cube of their depth, as libcst's parse time does."""
    return (max(depth - FREE_DEPTH, 0) / 10) ** 3


def over_budget(tree: ast.Module, budget: int, kept: dict[tuple[str, int, int], float] | None = None,
                lines: list[str] | None = None) -> tuple[int, int, str] | None:
    """(line, column, message) when the file's statements cost more than `budget`, else None. One walk
    over the tree; a statement's depth counts its expression nodes, not the statements nested in it.
    An expression on one line of L characters is at most L levels deep (each level takes a character),
    so one that cannot reach FREE_DEPTH is not walked. `kept` (with the text's `lines`): each top-level
    statement's cost by its text, from the file's last measure (an editor's, edit after edit), so only
    the statements an edit changed are walked; it is replaced by this text's."""
    if kept is not None and lines is not None:
        earlier = dict(kept)
        kept.clear()
        total = 0.0
        for stmt, shift in zip(tree.body, line_shifts(tree)):  # an edited buffer's may have moved
            first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))]) + shift
            key = ("".join(lines[first - 1:(stmt.end_lineno or stmt.lineno) + shift]), stmt.col_offset,
                   stmt.end_col_offset or 0)
            cost = kept.get(key, earlier.get(key))
            if cost is None:
                cost = sum(map(statement_cost, _depths(stmt)[0].values()))
            kept[key] = cost
            total += cost  # a statement repeated word for word counts each time
        if total <= budget:
            return None
    tree = renumbered(tree)  # the line of the deepest expression is reported
    depth_of, statements = _depths(tree)
    total = sum(map(statement_cost, depth_of.values()))
    if total <= budget:
        return None
    deepest_statement, deepest = max(depth_of.items(), key=lambda item: item[1])
    node = statements.get(deepest_statement)
    line, column = getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1
    return line, column, (f"file not analysed: an expression {deepest:,} levels deep puts it over the analysis "
                          f"budget ({total:,.0f} > {budget:,} units, `analysis-budget`)")


def _depths(root: ast.AST) -> tuple[dict[int, int], dict[int, ast.AST]]:
    """Each statement's expression depth (by id) under `root`, and the statements by id. The children
    are those of `ast.iter_child_nodes`, in its order, read through each type's fields (the generator
    and its per-field calls cost as much as the rest of the walk)."""
    depth_of: dict[int, int] = {}
    statements: dict[int, ast.AST] = {}
    stack: list[tuple[ast.AST, int, ast.AST]] = [(root, 0, root)]
    pop, push = stack.pop, stack.append
    node_class, context = ast.AST, ast.expr_context
    shapes = _SHAPES
    while stack:
        node, depth, owner = pop()
        role, fields = shapes.get(type(node)) or _shape(type(node))
        if role is _STATEMENT:
            owner, depth = node, 0
            statements[id(node)] = node
        elif role is _EXPRESSION and (
                node.lineno == node.end_lineno  # type: ignore[attr-defined]
                and depth + node.end_col_offset - node.col_offset <= FREE_DEPTH):  # type: ignore[attr-defined]
            continue
        elif depth > depth_of.get(id(owner), 0):
            depth_of[id(owner)] = depth
        depth += 1
        for name in fields:
            value = getattr(node, name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_class) and not isinstance(item, context):
                        push((item, depth, owner))  # Load/Store: not a level of the source
            elif isinstance(value, node_class) and not isinstance(value, context):
                push((value, depth, owner))
    return depth_of, statements


_STATEMENT, _EXPRESSION, _OTHER = "statement", "expression", "other"
_SHAPES: dict[type, tuple[str, tuple[str, ...]]] = {}


def _shape(kind: type) -> tuple[str, tuple[str, ...]]:
    role = _STATEMENT if issubclass(kind, ast.stmt) else _EXPRESSION if issubclass(kind, ast.expr) else _OTHER
    _SHAPES[kind] = found = (role, tuple(getattr(kind, "_fields", ())))
    return found
