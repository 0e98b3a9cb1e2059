"""Jupyter notebooks (`.ipynb`) as Python source: the code cells, one after the other, as one module.

A notebook's Python text is its code cells in order, separated by a marker comment line, so a
`forward` in one cell reaches helpers defined in others, and fixes can be split back into cells.
IPython-only lines (`%magic`, `!shell`, `x = !cmd`, `obj?`) become `pass` with a marker comment at the
same indentation, and a cell that starts with a cell magic (`%%bash`) becomes blank lines, so every
line keeps its number within its cell. Findings are placed as (cell, line in cell); cells are
numbered from 1 over all cells, as the notebook shows them. Writing back changes only the code cells
a fix changed, restores their IPython lines, and keeps outputs, metadata and the JSON's layout
(indentation, key order, non-ASCII characters as written, final newline).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cslint.support import bounded_json

if TYPE_CHECKING:
    from cslint.core.report import Diagnostic

SUFFIX = ".ipynb"
CELL_BREAK = "# cslint: next notebook cell"
MAGIC = "pass  # cslint: IPython line"
_IPYTHON_LINE = re.compile(r"^\s*(?:[%!]|\w+\s*=\s*[%!])|\?\??\s*$")
_INDENT = re.compile(r"^\s*")


class NotebookError(ValueError):
    """The file is not a notebook cslint can read; the message is one line for the user."""


class NotebookTooDeep(NotebookError):
    """The notebook's JSON nests deeper than cslint parses (bounded_json.py): a file not analysed, as one
    over the size limit, rather than one that is not a notebook."""


def is_notebook(path: Path) -> bool:
    return path.suffix.lower() == SUFFIX


@dataclass
class _Cell:
    number: int  # 1-based, over all cells
    source: Any  # as in the file: a list of lines or one string
    python: str  # the cell's text as Python (IPython lines replaced)
    ipython_lines: list[str] = field(default_factory=list)  # the replaced lines, in order


@dataclass
class Notebook:
    raw: str
    data: dict[str, Any]
    cells: list[_Cell]
    python: str
    starts: list[int]  # the Python text's line where each code cell starts

    @classmethod
    def parse(cls, raw: str) -> Notebook:
        try:
            data = bounded_json.loads(raw)
        except bounded_json.TooDeep as exc:
            raise NotebookTooDeep(f"file not analysed: {exc}") from None
        except ValueError as exc:
            raise NotebookError(f"not a Jupyter notebook: invalid JSON ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise NotebookError("not a Jupyter notebook: no list of `cells`")
        language = (data.get("metadata") or {}).get("language_info", {}) or {}
        if isinstance(language, dict) and language.get("name") not in (None, "python"):
            raise NotebookError(f"a {language.get('name')} notebook, not Python")
        cells = []
        for number, cell in enumerate(data["cells"], start=1):
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            source = cell.get("source", "")
            if not isinstance(source, (list, str)) or isinstance(source, list) and \
                    not all(isinstance(line, str) for line in source):
                raise NotebookError(f"cell {number}: `source` is neither text nor a list of lines")
            cells.append(_as_python(number, source))
        parts, starts, line = [], [], 1
        for index, cell in enumerate(cells):
            if index:
                parts.append(CELL_BREAK + "\n")
                line += 1
            starts.append(line)
            parts.append(cell.python)
            line += cell.python.count("\n")
        return cls(raw, data, cells, "".join(parts), starts)

    def place(self, line: int) -> tuple[int, int]:
        """The (cell number, line in that cell) of a line of the Python text."""
        index = 0
        for i, start in enumerate(self.starts):
            if start <= line:
                index = i
        if not self.cells:
            return 1, line
        return self.cells[index].number, max(1, line - self.starts[index] + 1)

    def with_python(self, python: str) -> str:
        """The notebook's JSON with its code cells replaced by the cells of `python` (a fixed text)."""
        parts = _split_cells(python)
        if len(parts) != len(self.cells):
            raise NotebookError("a fix moved a notebook cell boundary; notebook left unchanged")
        changed = False
        for cell, text in zip(self.cells, parts):
            if text == cell.python:
                continue
            changed = True
            self.data["cells"][cell.number - 1]["source"] = _as_source(_restore_ipython(text, cell), cell.source)
        if not changed:
            return self.raw
        return _dump_like(self.data, self.raw)


def _as_python(number: int, source: Any) -> _Cell:
    text = "".join(source) if isinstance(source, list) else source
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    replaced: list[str] = []
    first = next((line for line in lines if line.strip()), "")
    if first.lstrip().startswith("%%"):  # a cell magic: the whole cell is another language
        out = [""] * len(lines)
        replaced = list(lines)
    else:
        out = []
        for line in lines:
            if _IPYTHON_LINE.search(line) and _not_python(line):
                out.append(_INDENT.match(line).group() + MAGIC)  # type: ignore[union-attr]
                replaced.append(line)
            else:
                out.append(line)
    return _Cell(number, source, "".join(line + "\n" for line in out), replaced)


def _not_python(line: str) -> bool:
    """An IPython line is one Python cannot parse (`a % b` and `x != y` are Python), nor one its parser
    gives up on (nested too deep)."""
    import ast

    try:
        ast.parse(line.strip())
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True
    return False


def _split_cells(python: str) -> list[str]:
    parts: list[list[str]] = [[]]
    for line in python.splitlines(keepends=True):
        if line.rstrip("\r\n") == CELL_BREAK:
            parts.append([])
        else:
            parts[-1].append(line)
    return ["".join(part) for part in parts]


def _restore_ipython(text: str, cell: _Cell) -> str:
    lines = text.split("\n")
    if not cell.python.strip() and cell.ipython_lines:  # a cell magic's cell: never edited
        return "\n".join(cell.ipython_lines) + "\n"
    originals = iter(cell.ipython_lines)
    return "\n".join(next(originals, line) if line.strip() == MAGIC else line for line in lines)


def _as_source(text: str, original: Any) -> Any:
    """`text` in the cell's original form; a cell's last line has no newline, as Jupyter writes it."""
    original_text = "".join(original) if isinstance(original, list) else original
    if not original_text.endswith("\n") and text.endswith("\n"):
        text = text[:-1]
    return text.splitlines(keepends=True) if isinstance(original, list) else text


def _dump_like(data: dict[str, Any], raw: str) -> str:
    """JSON laid out as `raw` was: its indentation, ASCII escapes or not, final newline."""
    indent_match = re.search(r"\{\s*?\n([ \t]+)\"", raw)
    indent: int | str | None = None
    if indent_match:
        found = indent_match.group(1)
        indent = len(found) if set(found) == {" "} else found
    ascii_only = bool(re.search(r"\\u[0-9a-fA-F]{4}", raw)) and raw.isascii()
    text = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    return text + "\n" if raw.endswith("\n") else text


def in_cells(diagnostics: Iterable[Diagnostic], read: Any) -> list[Diagnostic]:
    """The diagnostics, each of a notebook with its cell and lines within that cell. `read(path)` returns
    the notebook as the diagnostics saw it (None when it cannot be read: the lines are left as they are)."""
    notebooks: dict[Path, Notebook | None] = {}
    out = []
    for d in diagnostics:
        if not is_notebook(d.path) or d.cell is not None:
            out.append(d)
            continue
        if d.path not in notebooks:
            notebooks[d.path] = read(d.path)
        notebook = notebooks[d.path]
        if notebook is None:
            out.append(d)
            continue
        cell, line = notebook.place(d.line)
        end_cell, end_line = notebook.place(d.end_line)
        out.append(replace(d, cell=cell, line=line, end_line=end_line if end_cell == cell else line))
    return out
