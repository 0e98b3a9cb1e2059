"""The language server: documents in, diagnostics, code actions and hovers out.

Analyses run one at a time on a worker thread (the protocol stays responsive). As in ruff's server, an edit
is analysed at once when nothing else is being analysed (`DEBOUNCE_SECONDS`, default 0, may delay it); the
edits (and opens) that arrive while an analysis runs are coalesced, and their projects analysed once, with
the newest text, when it ends, then again for each document that analysis did not cover (it covers the
documents related to its own, not every one of its project): a burst of keystrokes costs at most two
analyses and the diagnostics of the last one follow it by one analysis. After each analysis every open
document of the project whose findings changed gets them published, so an edit to a helper's file updates
the file whose `forward` calls it. A client that pulls diagnostics (`textDocument/diagnostic`, as ruff's
server serves them) gets none pushed: a pull waits for the analysis of the document's current text, answers
"unchanged" when its findings are those of the client's previous result, and an analysis that changes
another open document's findings, or any document's when no edit of it prompted the analysis (a saved
configuration, the cache brought up to date), asks the client to pull again
(`workspace/diagnostic/refresh`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import unquote, urlparse

from lsprotocol import types
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from cslint import __version__
from cslint.support.deep_stack import RECURSION_LIMIT
from cslint.lsp.collector import Collector
from cslint.lsp.framing import CHUNK, pumped, serve
from cslint.lsp.protocol import CslintProtocol
from cslint.lsp.notebooks import by_cell, cell_edits, cells_of, notebook_text, placed_in_cells, python_of
from cslint.lsp.documents import lean_documents, leading_lines
from cslint.lsp.convert import SOURCE, hover_text, lsp_range, minimal_edits, related_information, to_lsp
from cslint.lsp.workspace import Document, Workspace
from cslint.core.notebook import Notebook, NotebookError, is_notebook
from cslint.core.report import INTERNAL_ERROR, Diagnostic, chain_function

DEBOUNCE_SECONDS = float(os.environ.get("CSLINT_LSP_DEBOUNCE", "0"))
FIX_ALL = "source.fixAll.cslint"
FIX_ALL_UNSAFE = "source.cslint.fixAllUnsafe"  # not under source.fixAll: editors must not run it on save
CONFIG_FILES = ("pyproject.toml", "cslint.toml")
Report = types.RelatedFullDocumentDiagnosticReport | types.RelatedUnchangedDocumentDiagnosticReport


class CslintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("cslint", __version__, protocol_cls=CslintProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
                         notebook_document_sync=types.NotebookDocumentSyncOptions(notebook_selector=[
                             types.NotebookDocumentFilterWithCells(cells=[types.NotebookCellLanguage("python")],
                                                                   notebook="jupyter-notebook")], save=True))
        self.state = Workspace(on_warm=self.warmed, on_progress=self.checking)
        self.loop: asyncio.AbstractEventLoop | None = None  # the protocol's, once initialized
        self.analyses = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cslint-analysis")
        self.timers: dict[Path, asyncio.TimerHandle] = {}
        self.published: dict[Path, list[Any]] = {}
        self.busy = False  # an analysis is running
        self.waiting: dict[Path, None] = {}  # documents whose newest text no analysis has covered yet, in order
        self.collector = Collector()
        self.tidy_timer: asyncio.TimerHandle | None = None  # a due tidy, waiting for edits to pause
        self.pull = False  # the client pulls diagnostics: none are pushed
        self.refresh = False  # and may be asked to pull them again
        self.current: dict[Path, tuple[Document, int]] = {}  # the text and epoch a document's diagnostics are for
        self.epoch = 0  # bumped when what an analysis gives changes with no edit: settings, a cache brought up to date
        self.result_ids: dict[Path, int] = {}  # bumped when a document's diagnostics change
        self.analysed_event: asyncio.Event | None = None  # set (and replaced) after each analysis
        self.unprompted: set[Path] = set()  # analyses due to settings, saves or the cache, not to edits
        self.opening: set[Path] = set()  # opened, first analysis not yet published
        self.progress = False  # the client shows work done progress (`$/progress`)
        self.checks: dict[Path, str | None] = {}  # projects checked in the background: their progress token
        self.progress_tokens = 0  # tokens made so far
        self.uris: dict[Path, str] = {}  # the URI each open document was opened under, byte for byte
        self.again: set[Path] = set()  # analysed again even with their text covered: saved (files on disk changed)

    def uri_of(self, path: Path) -> str:
        """The URI to name `path` by: the client's own for an open document (editors match URIs as
        strings, and `model(1).py` or `a+c.py` may be written in more than one way), else its file URI."""
        return self.uris.get(path) or path.as_uri()

    # ---- transport: pygls' own, with cslint's reader (framing.py) -------------------------------------

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        source = stdin or sys.stdin.buffer
        self._stop_event = threading.Event()
        self.protocol.set_writer(StdoutWriter(stdout or sys.stdout.buffer))
        try:
            asyncio.run(serve(pumped(_chunks_of(source)), self.protocol, self._stop_event))
        except BrokenPipeError:
            logging.getLogger(__name__).error("cslint: the connection to the client is lost")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()

    def start_tcp(self, host: str, port: int) -> None:
        self._stop_event = stop = threading.Event()

        async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            self.protocol.set_writer(writer)  # type: ignore[arg-type]
            await serve(lambda: reader.read(CHUNK), self.protocol, stop)
            self.shutdown()

        async def listen() -> None:
            self._server = await asyncio.start_server(connection, host, port)
            async with self._server:
                await self._server.serve_forever()

        with contextlib.suppress(asyncio.CancelledError):
            asyncio.run(listen())

    # ---- analysis --------------------------------------------------------------------------------

    def schedule(self, path: Path, delay: float) -> None:
        timer = self.timers.pop(path, None)
        if timer is not None:
            timer.cancel()
        loop = asyncio.get_running_loop()
        self.timers[path] = loop.call_later(delay, lambda: loop.create_task(self.analyse(path)))

    async def analyse(self, path: Path) -> None:
        self.timers.pop(path, None)
        document = self.state.documents.get(path)
        if document is not None and path not in self.again and self._covered(path, document):
            return  # its newest text was analysed since this was asked for (with another document's analysis)
        if self.busy:  # superseded edits coalesce: analysed once when the running analysis ends
            self.waiting[path] = None
            return
        self.busy = True
        try:
            await self._analyse_one(path)
        finally:
            self.busy = False
            self._analysed()  # pulls waiting for it look again (they run once this returns)
        self._analyse_waiting()

    def _analyse_waiting(self) -> None:
        """Analyse again for the documents the last analysis did not cover: it covers only the documents
        related to its own, so each project's first one waiting is analysed, and so on while any remain."""
        for other in list(self.waiting):
            document = self.state.documents.get(other)
            if document is None or other not in self.again and self._covered(other, document):  # closed, or covered
                del self.waiting[other]
        projects: set[Path] = set()
        for other in list(self.waiting):
            root = self.state.project_of(other)
            if root not in projects:  # its analysis covers those related to it, with their newest text
                projects.add(root)
                del self.waiting[other]
                self.schedule(other, 0)

    def _covered(self, path: Path, document: Document) -> bool:
        """Whether the latest diagnostics of `path` are for this text, analysed since the last epoch began."""
        analysed, epoch = self.current.get(path, (None, -1))
        return analysed is document and epoch == self.epoch

    async def _analyse_one(self, path: Path) -> None:
        if path not in self.state.documents:
            return
        loop = asyncio.get_running_loop()
        epoch = self.epoch  # a settings change or a warm cache while this runs asks for another analysis
        self.again.discard(path)
        unprompted = path in self.unprompted  # not an edit of it: the client will not pull it by itself
        self.unprompted.discard(path)
        try:
            analysed = await loop.run_in_executor(self.analyses, self._analyse_and_convert, path)
            if path in self.opening:  # before the publish, so the first edit does not wait for it
                self.opening.discard(path)
                await loop.run_in_executor(self.analyses, self.collector.after_open)
        except Exception as exc:  # a bug outside the analysis itself: say so on the document, go on
            document = self.state.documents.get(path)
            if document is None:
                return
            broken = types.Diagnostic(range=types.Range(start=types.Position(line=0, character=0),
                                                        end=types.Position(line=0, character=0)),
                                      message=f"cslint: internal error: {type(exc).__name__}: {exc}", source=SOURCE,
                                      code=INTERNAL_ERROR, severity=types.DiagnosticSeverity.Error)
            analysed = {path: (document, [broken])}
        others_changed = False
        for document_path, (document, diagnostics) in analysed.items():
            if document_path not in self.state.documents:
                continue
            self.current[document_path] = (document, epoch)
            changed = self.published.get(document_path) != diagnostics
            if changed:
                self.published[document_path] = diagnostics
                self.result_ids[document_path] = self.result_ids.get(document_path, 0) + 1
                others_changed |= document_path != path or unprompted
            if not self.pull and (changed or document_path == path):
                self._publish(document_path, document, diagnostics)
        if self.pull and self.refresh and others_changed:
            self.workspace_diagnostic_refresh(None)
        if self.collector.analysed(loop.time()):  # due: done once edits pause (collector.py)
            if self.collector.overdue():
                self.analyses.submit(self.collector.catch_up)
            else:
                self._tidy_later()

    def _tidy_later(self) -> None:
        if self.tidy_timer is not None:
            self.tidy_timer.cancel()
        loop = asyncio.get_running_loop()
        self.tidy_timer = loop.call_later(self.collector.idle, self._tidy_if_idle)

    def _tidy_if_idle(self) -> None:
        self.tidy_timer = None
        loop = asyncio.get_running_loop()
        if self.collector.tidy_now(loop.time(), self.busy or bool(self.timers) or bool(self.waiting)):
            self.analyses.submit(self.collector.tidy)
        elif self.collector.due:
            self._tidy_later()

    def _publish(self, path: Path, document: Document, diagnostics: list[Any]) -> None:
        if not is_notebook(path):
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
                uri=self.uri_of(path), diagnostics=diagnostics, version=document.version))
            return
        for uri, items in diagnostics:  # a notebook's: each cell's, cells without findings cleared
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=items))

    def _analysed(self) -> None:
        if self.analysed_event is not None:
            self.analysed_event.set()
            self.analysed_event = None

    async def diagnostics_of(self, path: Path) -> tuple[int, list[types.Diagnostic]] | None:
        """The document's diagnostics for its current text, analysed first if need be (None: not open)."""
        while True:
            document = self.state.documents.get(path)
            if document is None:
                return None
            if self._covered(path, document):
                return self.result_ids.get(path, 0), self.published.get(path, [])
            if not (self.busy or path in self.timers or path in self.waiting):
                self.schedule(path, 0)
            if self.analysed_event is None:
                self.analysed_event = asyncio.Event()
            await self.analysed_event.wait()

    def _analyse_and_convert(self, path: Path) -> dict[Path, tuple[Document, list[types.Diagnostic]]]:
        out: dict[Path, tuple[Document, list[Any]]] = {}
        for document_path, (document, found) in self.state.analyse(path).items():
            if is_notebook(document_path):  # (cell URI, its diagnostics) for each cell
                placed = by_cell(found, document.text)
                out[document_path] = (document, [(uri, self._convert(document_path, text, placed.get(number, [])))
                                                 for number, (uri, text) in enumerate(cells_of(document.text), 1)])
            else:
                out[document_path] = (document, self._convert(document_path, document.text, found))
        return out

    def _convert(self, path: Path, text: str, found: list[Diagnostic]) -> list[types.Diagnostic]:
        lines = leading_lines(text, max((max(d.line, d.end_line) for d in found), default=0))  # not all of a huge text
        codec = self.workspace.position_codec
        converted = []
        root = self.state.project_of(path) if found else None  # each chain's hops are in this project
        for d in found:
            try:
                related = related_information(d, lambda q, near=path: self.state.locate(q, near, root), self.uri_of)
            except Exception:  # the chain is a nicety: never lose the finding over it
                related = []
            converted.append(to_lsp(d, lines, codec, related))
        return converted

    def reanalyse_all(self) -> None:
        self.epoch += 1
        for path in list(self.state.documents):
            self.unprompted.add(path)
            self.schedule(path, 0)

    def warmed(self, root: Path) -> None:
        """From the thread that brought `root`'s cache up to date: its callers are known, analyse again."""
        self.analyses.submit(self.collector.tidy)  # the project's indexes are made: freeze them
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._reanalyse_project, root)

    def checking(self, root: Path, message: str, percentage: int | None) -> None:
        """From the thread bringing `root`'s cache up to date: how it goes, shown as work done progress
        (as ruff's server shows its own work) when the client can show it."""
        if self.loop is not None and self.progress:
            self.loop.call_soon_threadsafe(self._show_progress, root, message, percentage)

    def _show_progress(self, root: Path, message: str, percentage: int | None) -> None:
        if root not in self.checks:  # the client makes the token first; reports before it is made are dropped
            self.checks[root] = None
            self.loop.create_task(self._begin_progress(root, message, percentage))  # type: ignore[union-attr]
        elif self.checks[root] is not None:
            self.work_done_progress.report(self.checks[root], types.WorkDoneProgressReport(  # type: ignore[arg-type]
                message=message, percentage=percentage))

    async def _begin_progress(self, root: Path, message: str, percentage: int | None) -> None:
        self.progress_tokens += 1
        token = f"cslint-check-{self.progress_tokens}"
        try:
            await self.work_done_progress.create_async(token)
        except Exception:  # the client refused: no progress shown
            return
        if root not in self.checks:  # up to date already
            return
        self.checks[root] = token
        self.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=f"cslint: checking {root.name}", message=message, percentage=percentage))

    def _reanalyse_project(self, root: Path) -> None:
        token = self.checks.pop(root, None)
        if token is not None:
            self.work_done_progress.end(token, types.WorkDoneProgressEnd(message="up to date"))
        self.window_log_message(types.LogMessageParams(type=types.MessageType.Info,
                                                       message=f"cslint: the cache of {root} is up to date"))
        self.epoch += 1
        for path in list(self.state.documents):
            if path == root or root in path.parents:
                self.unprompted.add(path)
                self.schedule(path, 0)


def _chunks_of(stream: BinaryIO) -> Callable[[], bytes]:
    """What is available of `stream`, a chunk at a time: read from its file descriptor where it has one (a
    read blocked in the buffered reader's lock would abort the interpreter's exit)."""
    try:
        fd = stream.fileno()
    except (OSError, ValueError, AttributeError):
        return lambda: stream.read1(CHUNK)  # type: ignore[attr-defined]
    return lambda: os.read(fd, CHUNK)


server = CslintServer()


def _path(uri: str) -> Path:
    parsed = urlparse(uri)
    return Path(os.path.abspath(unquote(parsed.path)))


def _is_python(path: Path) -> bool:
    return path.suffix in (".py", ".pyi")


@server.feature(types.INITIALIZE)
def initialize(ls: CslintServer, params: types.InitializeParams) -> None:
    ls.loop = asyncio.get_running_loop()
    lean_documents(ls.workspace)
    text_document, workspace = params.capabilities.text_document, params.capabilities.workspace
    ls.pull = text_document is not None and text_document.diagnostic is not None
    window = params.capabilities.window
    ls.progress = window is not None and bool(window.work_done_progress)
    ls.refresh = workspace is not None and workspace.diagnostics is not None and \
        bool(workspace.diagnostics.refresh_support)
    options = params.initialization_options
    if isinstance(options, dict):
        ls.state.options = dict(options.get("settings", options))


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: CslintServer, params: types.DidOpenTextDocumentParams) -> None:
    path = _path(params.text_document.uri)
    if _is_python(path):
        ls.uris[path] = params.text_document.uri
        ls.state.open(path, params.text_document.text, params.text_document.version)
        ls.opening.add(path)
        ls.schedule(path, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: CslintServer, params: types.DidChangeTextDocumentParams) -> None:
    path = _path(params.text_document.uri)
    if path in ls.state.documents:
        document = ls.workspace.get_text_document(params.text_document.uri)
        ls.state.change(path, document.source, params.text_document.version)
        ls.schedule(path, DEBOUNCE_SECONDS)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: CslintServer, params: types.DidSaveTextDocumentParams) -> None:
    path = _path(params.text_document.uri)
    if path.name in CONFIG_FILES or ls.state.is_baseline(path):
        ls.reanalyse_all()
    elif path in ls.state.documents:
        ls.state.files_changed()  # a new file may have been saved for the first time
        ls.again.add(path)
        ls.schedule(path, 0)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: CslintServer, params: types.DidCloseTextDocumentParams) -> None:
    path = _path(params.text_document.uri)
    ls.state.close(path)
    ls.uris.pop(path, None)
    ls.published.pop(path, None)
    ls.current.pop(path, None)
    ls.again.discard(path)
    ls.opening.discard(path)
    timer = ls.timers.pop(path, None)
    if timer is not None:
        timer.cancel()
    if not ls.pull:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri,
                                                                            diagnostics=[]))


@server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC, types.DiagnosticOptions(
    identifier="cslint", inter_file_dependencies=True, workspace_diagnostics=False))
async def document_diagnostic(ls: CslintServer, params: types.DocumentDiagnosticParams) -> Report:
    path = _path(params.text_document.uri)
    found = await ls.diagnostics_of(path)
    if found is None:  # not open (or not Python): nothing to say about it
        return types.RelatedFullDocumentDiagnosticReport(items=[])
    result_id = str(found[0])
    if params.previous_result_id == result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    items = dict(found[1]).get(params.text_document.uri, []) if is_notebook(path) else found[1]  # a cell's
    return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=result_id)


def _sync_notebook(ls: CslintServer, uri: str, delay: float) -> None:
    """The notebook's cells as the client has them now, analysed after `delay`."""
    notebook = ls.workspace.get_notebook_document(notebook_uri=uri)
    path = _path(uri)
    if notebook is None or not is_notebook(path):
        return
    cells = [(cell.document, cell.kind == types.NotebookCellKind.Code,
              ls.workspace.get_text_document(cell.document).source) for cell in notebook.cells]
    known = ls.state.documents.get(path)
    ls.uris[path] = uri
    ls.state.change(path, notebook_text(cells), notebook.version)
    if known is not None and ls.published.get(path) and not ls.pull:  # cells removed: clear theirs
        kept = {cell[0] for cell in cells}
        for cell_uri, _ in ls.published[path]:
            if cell_uri not in kept:
                ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))
    ls.schedule(path, delay)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
def notebook_did_open(ls: CslintServer, params: types.DidOpenNotebookDocumentParams) -> None:
    _sync_notebook(ls, params.notebook_document.uri, 0)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
def notebook_did_change(ls: CslintServer, params: types.DidChangeNotebookDocumentParams) -> None:
    _sync_notebook(ls, params.notebook_document.uri, DEBOUNCE_SECONDS)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
def notebook_did_save(ls: CslintServer, params: types.DidSaveNotebookDocumentParams) -> None:
    ls.state.files_changed()
    ls.schedule(_path(params.notebook_document.uri), 0)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
def notebook_did_close(ls: CslintServer, params: types.DidCloseNotebookDocumentParams) -> None:
    path = _path(params.notebook_document.uri)
    published = ls.published.pop(path, None) or []
    ls.state.close(path)
    ls.uris.pop(path, None)
    ls.current.pop(path, None)
    ls.again.discard(path)
    ls.opening.discard(path)
    timer = ls.timers.pop(path, None)
    if timer is not None:
        timer.cancel()
    if not ls.pull:
        for cell_uri, _ in published:
            ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=cell_uri, diagnostics=[]))


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: CslintServer, params: types.DidChangeWatchedFilesParams) -> None:
    ls.state.files_changed()
    ls.reanalyse_all()


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
def did_change_configuration(ls: CslintServer, params: types.DidChangeConfigurationParams) -> None:
    settings = params.settings
    if isinstance(settings, dict) and isinstance(settings.get("cslint"), dict):
        ls.state.options = dict(settings["cslint"])
    ls.reanalyse_all()


# ---- code actions ------------------------------------------------------------------------------
#
# An edit is computed on one version of a document and returned with it (a `TextDocumentEdit` naming the
# version, which the client refuses to apply to any other): text typed while a fix was being computed
# is never overwritten by lines of the text before it. Fix-all is computed on the document's newest
# text, again if the text changed while it was computed (up to `FIX_ATTEMPTS` times); a single fix or
# `noqa` is computed on the text its finding was reported on. A client that cannot take versioned
# edits gets an edit only when it is for the text the client has now.

FIX_ATTEMPTS = 3
FIX_DELAY = float(os.environ.get("CSLINT_LSP_TEST_FIX_DELAY", "0"))  # tests: lets an edit land mid-fix


@dataclass
class ShownText:
    """What a URI the client names shows: a document's text, or one cell of a notebook, with its findings."""

    path: Path  # the document analysed (the notebook, for a cell)
    text: str  # the text at the URI its findings are for (the cell's own)
    findings: list[tuple[Diagnostic, Diagnostic]]  # its last analysis's: (lines counted in `text`, as found)
    analysed: Document  # the document (the notebook) as that analysis saw it
    version: int | None  # the version of the text at the URI: what an edit of it names
    current: bool  # whether `text` is what the client has now


def _shown_text(ls: CslintServer, uri: str) -> ShownText | None:
    """The open document at `uri`, or the open notebook whose cell it is, with its last findings."""
    path = _path(uri)
    document = ls.state.documents.get(path)
    if document is not None and not is_notebook(path):
        analysed, found = ls.state.findings.get(path, (document, []))
        return ShownText(path, analysed.text, [(d, d) for d in found], analysed, analysed.version,
                       analysed is document)
    notebook = ls.workspace.get_notebook_document(cell_uri=uri)
    path = _path(notebook.uri) if notebook is not None else path
    if notebook is None or path not in ls.state.documents:
        return None
    analysed, found = ls.state.findings.get(path, (ls.state.documents[path], []))
    numbers = [number for number, (cell, _) in enumerate(cells_of(analysed.text), 1) if cell == uri]
    findings = [(placed, d) for number, placed, d in placed_in_cells(found, analysed.text) if number in numbers]
    cell = ls.workspace.get_text_document(uri)
    return ShownText(path, cell.source, findings, analysed, cell.version, analysed is ls.state.documents[path])


def _findings_at(ls: CslintServer, uri: str, rng: types.Range) -> list[tuple[Diagnostic, Diagnostic]]:
    """The findings shown at `uri` whose ranges meet `rng` (client units)."""
    shown_text = _shown_text(ls, uri)
    if shown_text is None:
        return []
    lines = shown_text.text.splitlines(keepends=True)
    codec = ls.workspace.position_codec
    out = []
    for shown, d in shown_text.findings:
        span = lsp_range(shown, lines, codec)
        if (span.start.line, span.start.character) <= (rng.end.line, rng.end.character) and \
                (rng.start.line, rng.start.character) <= (span.end.line, span.end.character):
            out.append((shown, d))
    return out


def _versioned(ls: CslintServer) -> bool:
    """Whether the client takes edits that name the version they are for (`documentChanges`)."""
    workspace = ls.client_capabilities.workspace
    edit = workspace.workspace_edit if workspace is not None else None
    return edit is not None and bool(edit.document_changes)


def _edit(ls: CslintServer, texts: dict[str, tuple[int | None, str, str]]) -> types.WorkspaceEdit:
    """The edit turning each URI's old text (of the version given) into its new one: as edits naming that
    version when the client takes them, else as plain changes (given only for the text it has now)."""
    if not _versioned(ls):
        return types.WorkspaceEdit(changes={uri: minimal_edits(old, new) for uri, (_, old, new) in texts.items()})
    return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(
        text_document=types.OptionalVersionedTextDocumentIdentifier(uri=uri, version=version),
        edits=minimal_edits(old, new)) for uri, (version, old, new) in texts.items()])  # type: ignore[arg-type]


def _wants(only: list[str] | None, kind: str) -> bool:
    return only is None or any(kind == k or kind.startswith(k + ".") for k in only)


def _resolves_edits(ls: CslintServer) -> bool:
    capability = ls.client_capabilities.text_document
    action = capability.code_action if capability is not None else None
    support = action.resolve_support if action is not None else None
    return support is not None and "edit" in support.properties


@server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
    code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL, FIX_ALL_UNSAFE], resolve_provider=True))
async def code_action(ls: CslintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    from cslint.engine.noqa_edit import add_noqa_to_text

    uri = params.text_document.uri
    shown_text = _shown_text(ls, uri)
    if shown_text is None:
        return []
    only = params.context.only
    # an edit of the text the findings are for can be given (a cell's version is known only for its text now)
    editable = shown_text.current or (_versioned(ls) and not is_notebook(shown_text.path))
    actions: list[types.CodeAction] = []
    for shown, d in _findings_at(ls, uri, params.range):
        related = [x for x in params.context.diagnostics if x.source == SOURCE and x.code == d.code]
        if d.fix is not None and editable and _wants(only, types.CodeActionKind.QuickFix):
            unsafe = d.fix.applicability != "safe"
            actions.append(types.CodeAction(
                title=f"Fix{' (unsafe)' if unsafe else ''}: {d.fix.message}", kind=types.CodeActionKind.QuickFix,
                diagnostics=related or None, is_preferred=not unsafe,
                data={"uri": uri, "fix": [d.code, d.line, d.column], "unsafe": unsafe,
                      "version": shown_text.analysed.version}))
        if editable and _wants(only, types.CodeActionKind.QuickFix):
            quieted, added = add_noqa_to_text(shown_text.text, {shown.line: {d.code}})
            if added:
                actions.append(types.CodeAction(
                    title=f"Ignore {d.code} for this line", kind=types.CodeActionKind.QuickFix,
                    diagnostics=related or None, edit=_edit(ls, {uri: (shown_text.version, shown_text.text, quieted)})))
    fixable = [d for _, d in shown_text.findings if d.fix is not None]
    if any(d.fix.applicability == "safe" for d in fixable) and _wants(only, FIX_ALL):  # type: ignore[union-attr]
        actions.append(types.CodeAction(title="cslint: fix all safe fixes", kind=FIX_ALL,
                                        data={"uri": uri, "unsafe": False}))
    if fixable and _wants(only, FIX_ALL_UNSAFE):
        actions.append(types.CodeAction(title="cslint: fix all, including unsafe fixes", kind=FIX_ALL_UNSAFE,
                                        data={"uri": uri, "unsafe": True}))
    if not _resolves_edits(ls):
        actions = [await _resolve(ls, action) if action.edit is None else action for action in actions]
        actions = [action for action in actions if action.edit is not None]
    return actions


@server.feature(types.CODE_ACTION_RESOLVE)
async def code_action_resolve(ls: CslintServer, action: types.CodeAction) -> types.CodeAction:
    resolved = await _resolve(ls, action)
    if resolved.edit is None:  # nothing can be applied to the text the client has: an edit that does nothing
        resolved.edit = types.WorkspaceEdit(changes={})
    return resolved


async def _resolve(ls: CslintServer, action: types.CodeAction) -> types.CodeAction:
    """The action with its edit, for the version of the document it was computed on (no edit: none can be
    given for the text the client has)."""
    data = action.data if isinstance(action.data, dict) else {}
    uri = data.get("uri")
    if action.edit is not None or not isinstance(uri, str):
        return action
    shown_text = _shown_text(ls, uri)
    if shown_text is None:
        return action
    path = shown_text.path
    chosen = data.get("fix")

    def choice(d: Diagnostic) -> bool:
        return [d.code, d.line, d.column] == chosen

    if chosen:  # a finding's own fix: on the text it was reported on, if that is still known
        if shown_text.analysed.version != data.get("version"):
            return action
        document: Document | None = shown_text.analysed
    else:
        document = ls.state.documents.get(path)
    loop = asyncio.get_running_loop()
    for _ in range(FIX_ATTEMPTS):
        if document is None:
            return action
        if FIX_DELAY:
            await asyncio.sleep(FIX_DELAY)
        fixed = await loop.run_in_executor(ls.analyses, lambda on=document: ls.state.fixed_text(
            path, bool(data.get("unsafe")), choice if chosen else None, on))
        newest = ls.state.documents.get(path)
        if chosen or newest is document:
            break
        document = newest  # typed into while it was fixed: fixed again, on the newest text
    current = ls.state.documents.get(path) is document
    if not current and not _versioned(ls):
        return action
    if is_notebook(path):  # the cells it changed, each edited as a document of its own
        if not current:  # the cells' versions are known only for the text the client has now
            return action
        changed = cell_edits(document.text, fixed) if fixed is not None else {}
        action.edit = _edit(ls, {cell: (ls.workspace.get_text_document(cell).version, a, b)
                                 for cell, (a, b) in changed.items()})
    else:
        action.edit = _edit(ls, {uri: (document.version, document.text,
                                       fixed if fixed is not None else document.text)})
    return action


# ---- hover -------------------------------------------------------------------------------------


@server.feature(types.TEXT_DOCUMENT_HOVER)
def hover(ls: CslintServer, params: types.HoverParams) -> types.Hover | None:
    point = types.Range(start=params.position, end=params.position)
    found = _findings_at(ls, params.text_document.uri, point)
    if found:
        text = "\n\n---\n\n".join(hover_text(shown) for shown, _ in found)
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text))
    found_def = _def_line(ls, params.text_document.uri, params.position.line + 1)
    if found_def is None:
        return None
    path, line = found_def
    roots = _roots_reaching(ls, path, line)
    if roots:
        lines = [f"**cslint**: traced from {len(roots)} root{'s' if len(roots) != 1 else ''}:", ""] + \
            [f"- `{root}` ({reason})" for root, reason in sorted(roots.items())]
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n".join(lines)))
    return None


def _def_line(ls: CslintServer, uri: str, line: int) -> tuple[Path, int] | None:
    """The open document shown at `uri` and the line of its module that is `line` there: a cell's line is
    counted in its notebook's code cells as one module."""
    path = _path(uri)
    if path in ls.state.documents and not is_notebook(path):
        return path, line
    notebook = ls.workspace.get_notebook_document(cell_uri=uri)
    path = _path(notebook.uri) if notebook is not None else path
    document = ls.state.documents.get(path)
    if notebook is None or document is None:
        return None
    try:
        parsed = Notebook.parse(document.text)
    except NotebookError:
        return None
    numbers = [number for number, (cell, _) in enumerate(cells_of(document.text), 1) if cell == uri]
    for cell, start in zip(parsed.cells, parsed.starts):
        if cell.number in numbers:
            return path, start + line - 1
    return None


def _roots_reaching(ls: CslintServer, path: Path, line: int) -> dict[str, str]:
    """The roots whose traced chains pass through the `def` on `line`: the chain the last analysis of
    the document traced it by, and those of the open documents' findings."""
    chains = list(ls.state.traced.get(path, []))
    for _, diagnostics in list(ls.state.findings.values()):
        chains += [(d.chain, d.reason) for d in diagnostics]
    roots: dict[str, str] = {}
    text = _line_text(ls, path, line)
    for chain, reason in chains:
        for qualname in map(chain_function, chain):
            if chain[0] in roots or qualname.rpartition(".")[2] not in text:
                continue
            where = ls.state.locate(qualname, path)
            if where is not None and where[0] == path and where[1] == line:
                roots[chain[0]] = reason
    return roots


def _line_text(ls: CslintServer, path: Path, line: int) -> str:
    document = ls.state.documents.get(path)
    text = document.text if document is not None else ""
    lines = (python_of(text) if is_notebook(path) else text).splitlines()
    return lines[line - 1] if 0 < line <= len(lines) else ""


def main(tcp_port: int | None = None) -> None:
    # analyses and cache updates run on threads at once, each on a deep stack (deep_stack.py): at this
    # limit from the start, none of them puts back a lower one while another runs
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION_LIMIT))
    if tcp_port is not None:
        server.start_tcp("127.0.0.1", tcp_port)
    else:
        server.start_io()
