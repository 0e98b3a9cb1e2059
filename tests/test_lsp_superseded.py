"""A request to analyse a document whose newest text an analysis has covered since (another open document's
analysis covers the documents related to it) is dropped before it starts; a changed text, or a save,
is still analysed."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, Callable

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402

from cslint.lsp.server import CslintServer, did_save  # noqa: E402
from cslint.lsp.workspace import Document  # noqa: E402


def _analyses_after(tmp_path: Path, meanwhile: Callable[[CslintServer, Path], None]) -> list[Path]:
    """The documents analysed when a request for `b.py` (debounced) is overtaken by an analysis of `a.py`
    that covers both, with `meanwhile` done after that analysis and before the request is due."""
    a, b = tmp_path / "pkg" / "a.py", tmp_path / "pkg" / "b.py"
    analysed: list[Path] = []

    async def scenario() -> None:
        server = CslintServer()
        server.loop = asyncio.get_running_loop()
        server.state.documents[a] = Document(a, "x = 1\n", 1)
        server.state.documents[b] = Document(b, "y = 1\n", 1)
        server.state.project_of = lambda p: tmp_path  # type: ignore[method-assign]

        def analyse(p: Path) -> dict[Path, tuple[Document, list[Any]]]:
            analysed.append(p)
            return {q: (server.state.documents[q], []) for q in (a, b)}  # both: they are related

        server._analyse_and_convert = analyse  # type: ignore[method-assign]
        server._publish = lambda p, d, diagnostics: None  # type: ignore[method-assign]
        server.schedule(b, 0.3)  # an edit of b.py, debounced
        server.schedule(a, 0)  # then one of a.py, analysed at once, with b.py's newest text
        for _ in range(100):
            await asyncio.sleep(0.01)
            if analysed and not server.busy:
                break
        meanwhile(server, b)
        await asyncio.sleep(0.6)  # b.py's request is due, and would have run
        for _ in range(300):
            if not (server.busy or server.timers or server.waiting):
                break
            await asyncio.sleep(0.01)
        server.analyses.shutdown(wait=True)

    asyncio.run(asyncio.wait_for(scenario(), 60))
    return [p.name for p in analysed]  # type: ignore[misc]


def test_a_request_for_a_text_already_analysed_is_dropped_before_it_starts(tmp_path: Path) -> None:
    assert _analyses_after(tmp_path, lambda server, b: None) == ["a.py"]


def test_a_text_changed_since_is_analysed(tmp_path: Path) -> None:
    def edit(server: CslintServer, b: Path) -> None:
        server.state.change(b, "y = 2\n", 2)

    assert _analyses_after(tmp_path, edit) == ["a.py", "b.py"]


def test_a_saved_document_is_analysed_again_with_the_same_text(tmp_path: Path) -> None:
    def save(server: CslintServer, b: Path) -> None:  # files on disk changed: what it imports may have
        did_save(server, types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=b.as_uri())))

    assert _analyses_after(tmp_path, save) == ["a.py", "b.py"]
