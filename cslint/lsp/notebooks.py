"""Notebooks in the editor: an LSP notebook document (each cell a text document of its own) is linted
as `cslint check` lints the `.ipynb` file: its code cells as one module (cslint/core/notebook.py), in its
project. The server keeps the notebook as the JSON a file would hold (`notebook_text`), so it is an
unsaved buffer like any other document, and gives each cell the diagnostics placed in it
(`by_cell`), with lines counted within the cell; a cell's code actions and hovers are those of the
findings placed in it, and a fix of the notebook becomes edits of the cells it changed (`cell_edits`).
"""

from __future__ import annotations

import json

from cslint.core.notebook import Notebook, NotebookError, in_cells
from cslint.core.report import Diagnostic

URI = "cslint-lsp-uri"


def notebook_text(cells: list[tuple[str, bool, str]]) -> str:
    """The notebook's JSON from its cells (each one's URI, whether it is code, and its text). Each cell
    keeps its URI in its metadata, so an analysis's findings go to the cells it saw."""
    return json.dumps({"cells": [{"cell_type": "code", "metadata": {URI: uri}, "source": text, "outputs": [],
                                  "execution_count": None} if code else
                                 {"cell_type": "markdown", "metadata": {URI: uri}, "source": text}
                                 for uri, code, text in cells],
                       "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5})


def cells_of(text: str) -> list[tuple[str, str]]:
    """The (URI, text) of each cell of a notebook made by `notebook_text` (or fixed from one)."""
    return [(cell["metadata"][URI], "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"])
            for cell in json.loads(text)["cells"]]


def python_of(text: str) -> str:
    """A notebook's code cells as one Python text ("" for one that cannot be read)."""
    try:
        return Notebook.parse(text).python
    except NotebookError:
        return ""


def by_cell(found: list[Diagnostic], text: str) -> dict[int, list[Diagnostic]]:
    """The notebook's diagnostics by cell number (from 1, over all cells), each with its lines counted
    within its cell; one about the whole file (an unreadable notebook) goes to the first cell."""
    out: dict[int, list[Diagnostic]] = {}
    for number, placed, _ in placed_in_cells(found, text):
        out.setdefault(number, []).append(placed)
    return out


def placed_in_cells(found: list[Diagnostic], text: str) -> list[tuple[int, Diagnostic, Diagnostic]]:
    """Each of the notebook's diagnostics as (its cell's number, a copy with lines counted within that
    cell, the diagnostic itself, whose lines are the notebook's code as one module)."""
    try:
        notebook: Notebook | None = Notebook.parse(text)
    except NotebookError:
        notebook = None
    placed = in_cells(found, lambda path: notebook)
    return [(d.cell if d.cell is not None else 1, d, original) for d, original in zip(placed, found)]


def cell_edits(old: str, new: str) -> dict[str, tuple[str, str]]:
    """The cells whose text differs between two texts of a notebook made by `notebook_text`: URI -> (old
    text, new text); none when the cells themselves differ."""
    before, after = cells_of(old), cells_of(new)
    if [uri for uri, _ in before] != [uri for uri, _ in after]:
        return {}
    return {uri: (a, b) for (uri, a), (_, b) in zip(before, after) if a != b}
