"""cslint's findings, fixes and rule pages as LSP values.

Positions: cslint counts lines from 1 and columns in characters from 1 (end exclusive); LSP counts both
from 0, columns in the client's code units (UTF-16 unless negotiated), which `TextDocument`'s codec
converts from characters.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lsprotocol import types

from cslint.support.line_shifts import line_shifts
from cslint.core.report import Diagnostic, chain_function

SOURCE = "cslint"


def lsp_range(d: Diagnostic, lines: list[str], codec: Any) -> types.Range:
    start = types.Position(line=max(d.line - 1, 0), character=max(d.column - 1, 0))
    end_line, end_column = (d.end_line, d.end_column) if d.end_line >= d.line else (d.line, d.column)
    end = types.Position(line=max(end_line - 1, 0), character=max(end_column - 1, 0))
    return codec.range_to_client_units(lines, types.Range(start=start, end=end))


def to_lsp(d: Diagnostic, lines: list[str], codec: Any,
           related: list[types.DiagnosticRelatedInformation]) -> types.Diagnostic:
    from cslint.output.docs import rule_url
    from cslint.rules import rule_by_code

    rule = rule_by_code(d.code)
    return types.Diagnostic(
        range=lsp_range(d, lines, codec),
        message=d.message + "".join(f"\n{note}" for note in d.notes)
        + (f"\nassumed: {d.assumption}" if d.assumption else "")
        + (f"\n(fix, {d.fix.applicability}: {d.fix.message})" if d.fix is not None else ""),
        severity=_severity(d, rule is not None),
        code=d.code,
        code_description=types.CodeDescription(href=rule_url(d.code)) if rule is not None else None,
        source=SOURCE,
        related_information=related or None,
        data={"fix": [d.fix.applicability, d.fix.message] if d.fix is not None else None,
              "line": d.line, "column": d.column, "certainty": d.certainty,
              "targets": list(d.targets)},
    )


def _severity(d: Diagnostic, known_rule: bool) -> types.DiagnosticSeverity:
    """A rule's finding is a warning, one that rests on an assumption (`include-uncertain`) only
    information; anything else (a syntax or internal error) an error."""
    if not known_rule:
        return types.DiagnosticSeverity.Error
    return types.DiagnosticSeverity.Information if d.assumption else types.DiagnosticSeverity.Warning


def related_information(d: Diagnostic, locate: Any,
                        uri_of: Callable[[Path], str] = Path.as_uri) -> list[types.DiagnosticRelatedInformation]:
    """The traced chain, root first: each function's `def`, where it can be found (named by `uri_of`)."""
    out = []
    for index, hop in enumerate(d.chain):
        qualname = chain_function(hop)
        where = locate(qualname)
        if where is None:
            continue
        path, line, column = where
        role = f"traced root ({d.reason})" if index == 0 else f"called from {chain_function(d.chain[index - 1])}"
        position = types.Position(line=line - 1, character=column)
        out.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri_of(Path(path)), range=types.Range(start=position, end=position)),
            message=f"{hop}: {role}"))
    for path, line, code in d.library_sites:  # the installed library's lines that do it
        position = types.Position(line=max(line - 1, 0), character=0)
        out.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri_of(Path(path)), range=types.Range(start=position, end=position)),
            message=f"in the library: `{code}`"))
    return out


def def_positions(text: str, tree: ast.Module | None = None) -> dict[str, tuple[int, int]]:
    """Line (1-based) and column of every `def` and `class` in `text`, by dotted name within the module
    (`Model.forward`); the last of two with one name, as Python binds it. `tree`: Python's tree of
    `text`, when an analysis has just made it."""
    if tree is None:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            return {}
    found: dict[str, tuple[int, int]] = {}
    # each statement with the lines its top-level statement moved since it was parsed (an edited buffer's)
    stack: list[tuple[str, list[tuple[ast.stmt, int]]]] = [("", list(zip(tree.body, line_shifts(tree))))]
    while stack:
        prefix, body = stack.pop()
        for node, shift in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = prefix + node.name
                found[name] = (node.lineno + shift, node.col_offset)
                stack.append((name + ".", [(inner, shift) for inner in node.body]))
    return found


def minimal_edits(old: str, new: str) -> list[types.TextEdit]:
    """The line ranges that differ, as edits (positions in lines only, so no code unit conversion)."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    edits = []
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        rng = types.Range(start=types.Position(line=i1, character=0), end=types.Position(line=i2, character=0))
        edits.append(types.TextEdit(range=rng, new_text="".join(b[j1:j2])))
    if edits and a and not a[-1].endswith(("\n", "\r")):  # an edit ending on a last line with no newline
        last = edits[-1]
        if last.range.end.line == len(a):
            last.range.end = types.Position(line=len(a) - 1, character=len(a[-1]))
            if last.range.start.line == len(a):
                last.range.start = last.range.end
    return edits


def hover_text(d: Diagnostic) -> str:
    from cslint.rules import rule_by_code

    rule = rule_by_code(d.code)
    parts = [f"**{d.code}** {rule.name if rule else ''}".rstrip(), "", d.message, *d.notes]
    if rule is not None:
        parts += ["", f"**What**: {rule.summary}", "", f"**Why**: {rule.why}", "",
                  f"**Use instead**: {rule.use_instead}"]
    if d.chain:
        parts += ["", f"**Traced**: {' → '.join(d.chain)} ({d.reason})"]
    if d.fix is not None:
        parts += ["", f"**Fix** ({d.fix.applicability}): {d.fix.message}"]
    return "\n".join(parts)
