"""An analysis asked for while another runs, because something other than the text changed (the project's
cache came up to date, so its callers are known; the settings changed), is not dropped because the text is
the same: the running analysis began before the change, so its answer may be stale."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any, Callable

import pytest

pytest.importorskip("pygls")

from cslint.lsp.server import CslintServer  # noqa: E402
from cslint.lsp.workspace import Document  # noqa: E402


def _published_after(change: Callable[[CslintServer, Path], None], tmp_path: Path, expected: int = 2) -> list[Any]:
    """What is published for one open document when `change` happens while its first analysis runs."""
    path = tmp_path / "pkg" / "model.py"
    document = Document(path, "x = 1\n", 1)
    published: list[Any] = []
    running = threading.Event()
    release = threading.Event()

    async def scenario() -> None:
        server = CslintServer()
        server.loop = asyncio.get_running_loop()
        server.state.documents[path] = document
        server.state.project_of = lambda p: tmp_path  # type: ignore[method-assign]
        server.window_log_message = lambda params: None  # type: ignore[method-assign]
        analyses = 0

        def analyse(p: Path) -> dict[Path, tuple[Document, list[str]]]:
            nonlocal analyses
            analyses += 1
            running.set()
            release.wait(30)
            return {p: (document, [f"analysis {analyses}"])}

        server._analyse_and_convert = analyse  # type: ignore[method-assign]
        server._publish = lambda p, d, diagnostics: published.append(diagnostics)  # type: ignore[method-assign]
        server.schedule(path, 0)
        while not running.is_set():
            await asyncio.sleep(0.01)
        change(server, tmp_path)  # while the first analysis runs
        await asyncio.sleep(0.05)  # the analysis it asks for is scheduled, and waits for the running one
        release.set()
        await asyncio.sleep(0.2)  # time for an analysis that should not run to show
        for _ in range(300):
            if len(published) >= expected and not (server.busy or server.timers or server.waiting):
                break
            await asyncio.sleep(0.01)
        server.analyses.shutdown(wait=True)

    asyncio.run(asyncio.wait_for(scenario(), 60))
    return published


def test_a_cache_brought_up_to_date_during_an_analysis_analyses_again(tmp_path: Path) -> None:
    assert _published_after(lambda server, root: server._reanalyse_project(root), tmp_path) == [
        ["analysis 1"], ["analysis 2"]]


def test_settings_changed_during_an_analysis_analyse_again(tmp_path: Path) -> None:
    assert _published_after(lambda server, root: server.reanalyse_all(), tmp_path) == [
        ["analysis 1"], ["analysis 2"]]


def test_an_unchanged_document_is_not_analysed_twice(tmp_path: Path) -> None:
    """The covered check still holds when nothing changed: a second request for the same text is dropped."""
    assert _published_after(lambda server, root: server.schedule(root / "pkg" / "model.py", 0), tmp_path,
                            expected=1) == [
        ["analysis 1"]]
