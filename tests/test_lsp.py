"""`cslint lsp` driven over stdio by a real LSP client (pygls'): what an editor sees must equal `cslint check`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402
from pygls.lsp.client import LanguageClient  # noqa: E402

BAD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        assert x.min() > -100
        if x.max() > 0:  # noqa: E501
            x = x * 2
        print(x.item())
        return x
"""

GOOD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x * 2
"""

SCALES = "import torch\n\n\ndef get_scale(x):\n    return x.sum()\n"
SCALES_HOST = "import torch\n\n\ndef get_scale(x):\n    return 1.0\n"
MODEL = """\
from torch import nn

from pkg.scales import get_scale


class Model(nn.Module):
    def forward(self, x):
        if get_scale(x) > 0:
            return x * 2
        return x
"""


def _project(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def _check(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cslint", "check", "--no-cache", *args], cwd=root,
                          capture_output=True, text=True, timeout=120)


def apply_edits(text: str, edits: list[types.TextEdit]) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(position: types.Position) -> int:
        if position.line >= len(lines):
            return len(text)
        return offsets[position.line] + position.character  # ASCII test texts: code units are characters

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:offset(edit.range.start)] + edit.new_text + text[offset(edit.range.end):]
    return text


class Session:
    """One server process and the diagnostics it published, by URI."""

    def __init__(self, root: Path, options: dict[str, Any] | None = None, resolve: bool = True,
                 cache: bool = False, pull: bool = False, progress: bool = False, versioned: bool = False) -> None:
        self.root, self.options, self.resolve, self.cache, self.pull = root, options, resolve, cache, pull
        self.versioned = versioned  # the client takes edits naming a document version (documentChanges)
        self.progress = progress
        self.progressed: list[tuple[str, Any]] = []  # `$/progress` notifications: (token, value)
        self.client = LanguageClient("cslint-tests", "1")
        self.published: dict[str, list[types.PublishDiagnosticsParams]] = {}
        self.changed = asyncio.Event()
        self.refreshes = 0  # workspace/diagnostic/refresh requests received (a client that pulls)

        @self.client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _published(params: types.PublishDiagnosticsParams) -> None:
            self.published.setdefault(params.uri, []).append(params)
            self.changed.set()

        @self.client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def _create(params: types.WorkDoneProgressCreateParams) -> None:
            self.progressed.append((str(params.token), "created"))

        @self.client.feature(types.PROGRESS)
        def _progress(params: types.ProgressParams) -> None:
            self.progressed.append((str(params.token), params.value))
            self.changed.set()

        @self.client.feature(types.WORKSPACE_DIAGNOSTIC_REFRESH)
        def _refresh(params: None) -> None:
            self.refreshes += 1
            self.changed.set()

    async def __aenter__(self) -> Session:
        env = {**os.environ, "CSLINT_LSP_DEBOUNCE": "0.05", "CSLINT_NO_CACHE": "" if self.cache else "1"}
        await self.client.start_io(sys.executable, "-m", "cslint", "lsp", cwd=str(self.root), env=env)
        resolve = types.CodeActionClientCapabilities(
            resolve_support=types.ClientCodeActionResolveOptions(properties=["edit"])) if self.resolve else None
        pull = types.DiagnosticClientCapabilities() if self.pull else None
        workspace = types.WorkspaceClientCapabilities(
            diagnostics=types.DiagnosticWorkspaceClientCapabilities(refresh_support=True) if self.pull else None,
            workspace_edit=types.WorkspaceEditClientCapabilities(document_changes=True) if self.versioned else None)
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
                code_action=resolve, diagnostic=pull), workspace=workspace,
                window=types.WindowClientCapabilities(work_done_progress=True) if self.progress else None),
            root_uri=self.root.as_uri(), initialization_options=self.options))
        self.client.initialized(types.InitializedParams())
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()

    def uri(self, name: str) -> str:
        return (self.root / name).as_uri()

    def open(self, name: str, text: str | None = None) -> None:
        text = (self.root / name).read_text(encoding="utf-8") if text is None else text
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=self.uri(name), language_id="python", version=1, text=text)))

    def change(self, name: str, text: str, version: int) -> None:
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=self.uri(name), version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))

    async def diagnostics(self, name: str, when: Callable[[types.PublishDiagnosticsParams], bool] = lambda p: True,
                          after: int = 0, timeout: float = 90) -> list[types.Diagnostic]:
        """The first diagnostics published for `name` (from the `after`-th on) that satisfy `when`."""
        uri = self.uri(name)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for params in self.published.get(uri, [])[after:]:
                if when(params):
                    return list(params.diagnostics)
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise AssertionError(f"no matching diagnostics for {name}: {self.published.get(uri)}")
            self.changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)

    async def pull_diagnostics(self, name: str, previous: str | None = None) -> Any:
        return await self.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri(name)), previous_result_id=previous))

    async def refreshed(self, after: int, timeout: float = 90) -> None:
        deadline = asyncio.get_running_loop().time() + timeout
        while self.refreshes <= after:
            remaining = deadline - asyncio.get_running_loop().time()
            assert remaining > 0, "no workspace/diagnostic/refresh request"
            self.changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self.changed.wait(), remaining)

    def count(self, name: str) -> int:
        return len(self.published.get(self.uri(name), []))

    async def actions(self, name: str, rng: types.Range, diagnostics: list[types.Diagnostic],
                      only: list[str] | None = None) -> list[types.CodeAction]:
        found = await self.client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri(name)), range=rng,
            context=types.CodeActionContext(diagnostics=diagnostics, only=only)))
        out = []
        for action in found or []:
            assert isinstance(action, types.CodeAction)
            if action.edit is None:
                action = await self.client.code_action_resolve_async(action)
            out.append(action)
        return out


def run(coroutine: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, 300))


def _ranges(diagnostics: list[types.Diagnostic]) -> list[tuple[str, int, int, int, int]]:
    return sorted((str(d.code), d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character)
                  for d in diagnostics)


def _edited(uri: str, action: types.CodeAction, text: str) -> str:
    assert action.edit is not None and action.edit.changes is not None
    return apply_edits(text, action.edit.changes[uri])


def test_diagnostics_equal_check_and_follow_edits(tmp_path: Path) -> None:
    root = _project(tmp_path, {"net.py": BAD})
    expected = [(d["code"], d["line"] - 1, d["column"] - 1, d["end_line"] - 1, d["end_column"] - 1)
                for d in json.loads(_check(root, "net.py", "--output-format", "json").stdout)]
    assert len(expected) == 4

    async def scenario() -> None:
        async with Session(root) as s:
            s.open("net.py")
            found = await s.diagnostics("net.py")
            assert _ranges(found) == sorted(expected)
            first = next(d for d in found if d.code == "WSC101")
            assert first.source == "cslint"
            assert first.code_description is not None and first.code_description.href.endswith("/rules/WSC101.md")
            related = first.related_information or []
            assert [r.message.split(":")[0] for r in related] == ["net.Net.forward"]
            assert related[0].location.range.start.line == 5  # the `def forward` line
            s.change("net.py", GOOD, version=2)
            assert await s.diagnostics("net.py", lambda p: p.version == 2) == []
            s.change("net.py", BAD, version=3)
            assert _ranges(await s.diagnostics("net.py", lambda p: p.version == 3)) == sorted(expected)
            opened = s.count("net.py")
            s.client.text_document_did_close(types.DidCloseTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("net.py"))))
            assert await s.diagnostics("net.py", after=opened) == []  # closing clears them

    run(scenario())


def test_unsaved_helper_edit_republishes_the_caller(tmp_path: Path) -> None:
    """Editing a helper's buffer (not saved) changes the findings of the open file whose forward calls it."""
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/scales.py": SCALES, "pkg/model.py": MODEL})

    async def scenario() -> None:
        async with Session(root) as s:
            s.open("pkg/model.py")
            assert [d.code for d in await s.diagnostics("pkg/model.py")] == ["WSC101"]
            s.open("pkg/scales.py")
            await s.diagnostics("pkg/scales.py")
            before = s.count("pkg/model.py")
            s.change("pkg/scales.py", SCALES_HOST, version=2)
            assert await s.diagnostics("pkg/model.py", after=before) == []
            assert (root / "pkg/scales.py").read_text(encoding="utf-8") == SCALES  # nothing saved

    run(scenario())


def test_the_cache_holds_only_answers_about_saved_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The server fills the project's cache from the files on disk and reads it for buffers, never
    storing what it found in unsaved text: `cslint check` afterwards still reports the saved file."""
    bad_helper = "import torch\n\n\ndef get_scale(x):\n    if x.sum() > 0:\n        return x\n    return x\n"
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/scales.py": bad_helper, "pkg/model.py": MODEL})
    monkeypatch.setenv("CSLINT_CACHE_DIR", str(root / ".cslint_cache"))
    for path in root.rglob("*.py"):  # old enough for a later run to trust the cache's file times
        os.utime(path, (path.stat().st_atime - 60, path.stat().st_mtime - 60))

    async def scenario() -> None:
        async with Session(root, cache=True) as s:
            s.open("pkg/scales.py", SCALES_HOST)
            assert await s.diagnostics("pkg/scales.py") == []
            s.change("pkg/scales.py", bad_helper, version=2)
            found = await s.diagnostics("pkg/scales.py", lambda p: p.version == 2)
            assert [(d.code, d.range.start.line) for d in found] == [("WSC101", 4)]
            s.change("pkg/scales.py", SCALES_HOST, version=3)
            assert await s.diagnostics("pkg/scales.py", lambda p: p.version == 3) == []

    run(scenario())
    assert list((root / ".cslint_cache").glob("*.json"))  # filled from the saved files
    cached = subprocess.run([sys.executable, "-m", "cslint", "check", "pkg/scales.py", "pkg/model.py",
                             "--output-format", "concise"], cwd=root, capture_output=True, text=True, timeout=120)
    assert "pkg/scales.py:5:8: WSC101" in cached.stdout, cached.stdout


def test_helper_buffer_traced_from_a_saved_forward(tmp_path: Path) -> None:
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/scales.py": SCALES_HOST, "pkg/model.py": MODEL})
    helper = "import torch\n\n\ndef get_scale(x):\n    if x.sum() > 0:\n        return x\n    return x\n"

    async def scenario() -> None:
        async with Session(root) as s:
            s.open("pkg/scales.py", helper)
            found = await s.diagnostics("pkg/scales.py")
            assert [(d.code, d.range.start.line) for d in found] == [("WSC101", 4)]
            chain = [r.message.split(":")[0] for r in found[0].related_information or []]
            assert chain == ["pkg.model.Model.forward", "pkg.scales.get_scale"]

    run(scenario())


@pytest.mark.parametrize("resolve", [True, False])
def test_code_actions_equal_check_fix(tmp_path: Path, resolve: bool) -> None:
    root = _project(tmp_path, {"net.py": BAD})
    # under compile the assert has an unsafe fix (a device-side assertion); lazy targets keep it unfixed
    (root / "pyproject.toml").write_text('[tool.cslint]\ntarget = "compile"\n', encoding="utf-8")
    _check(root, "net.py", "--fix")
    safe = (root / "net.py").read_text(encoding="utf-8")
    (root / "net.py").write_text(BAD, encoding="utf-8")
    _check(root, "net.py", "--fix", "--unsafe-fixes")
    unsafe = (root / "net.py").read_text(encoding="utf-8")
    (root / "net.py").write_text(BAD, encoding="utf-8")
    assert safe != BAD and unsafe != safe

    async def scenario() -> None:
        async with Session(root, resolve=resolve) as s:
            s.open("net.py")
            found = await s.diagnostics("net.py")
            uri = s.uri("net.py")
            whole = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=99, character=0))
            fix_all = await s.actions("net.py", whole, found, only=["source.fixAll"])
            assert [a.kind for a in fix_all] == ["source.fixAll.cslint"]  # never the unsafe one on save
            assert _edited(uri, fix_all[0], BAD) == safe
            every = await s.actions("net.py", whole, found, only=["source.cslint.fixAllUnsafe"])
            assert _edited(uri, every[0], BAD) == unsafe
            branch = next(d for d in found if d.code == "WSC101")
            quick = await s.actions("net.py", branch.range, [branch], only=["quickfix"])
            titles = [a.title for a in quick]
            assert any(t.startswith("Fix") for t in titles), titles
            fix = next(a for a in quick if a.title.startswith("Fix"))
            assert (fix.title.startswith("Fix (unsafe)")) == (fix.is_preferred is False)
            fixed_one = _edited(uri, fix, BAD)
            assert "x = torch.where(x.max() > 0, x * 2, x)" in fixed_one
            assert "print(x.item())" in fixed_one  # only this diagnostic's fix
            noqa = next(a for a in quick if a.title == "Ignore WSC101 for this line")
            quieted = _edited(uri, noqa, BAD)
            assert "if x.max() > 0:  # noqa: E501, WSC101\n" in quieted  # existing codes kept
            s.change("net.py", quieted, version=2)
            after = await s.diagnostics("net.py", lambda p: p.version == 2)
            assert [d.code for d in after] == ["WSC102"] or "WSC101" not in [d.code for d in after]

    run(scenario())


def test_hover_explains_a_finding_and_a_traced_def(tmp_path: Path) -> None:
    root = _project(tmp_path, {"net.py": BAD})

    async def scenario() -> None:
        async with Session(root) as s:
            s.open("net.py")
            found = await s.diagnostics("net.py")
            branch = next(d for d in found if d.code == "WSC101")
            shown = await s.client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("net.py")), position=branch.range.start))
            assert shown is not None
            text = shown.contents.value  # type: ignore[union-attr]
            for part in ("**WSC101**", "**What**", "**Why**", "**Use instead**", "**Traced**: net.Net.forward"):
                assert part in text
            on_def = await s.client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("net.py")),
                position=types.Position(line=5, character=9)))
            assert on_def is not None and "`net.Net.forward`" in on_def.contents.value  # type: ignore[union-attr]
            nothing = await s.client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("net.py")),
                position=types.Position(line=0, character=0)))
            assert nothing is None

    run(scenario())


def test_settings_from_pyproject_and_initialization_options(tmp_path: Path) -> None:
    root = _project(tmp_path, {"net.py": BAD})

    async def scenario() -> None:
        async with Session(root, options={"ignore": ["WSC101"]}) as s:
            s.open("net.py")
            assert "WSC101" not in [d.code for d in await s.diagnostics("net.py")]
            (root / "pyproject.toml").write_text('[tool.cslint]\nextend-ignore = ["WSC2"]\n', encoding="utf-8")
            before = s.count("net.py")
            s.client.text_document_did_save(types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("pyproject.toml"))))
            again = await s.diagnostics("net.py", after=before)
            assert "WSC101" not in [d.code for d in again]  # the client's options still win

    run(scenario())


def test_bad_settings_become_one_diagnostic_and_malformed_requests_an_error(tmp_path: Path) -> None:
    root = _project(tmp_path, {"net.py": BAD})

    async def scenario() -> None:
        async with Session(root, options={"select": 5}) as s:
            s.open("net.py")
            found = await s.diagnostics("net.py")
            assert len(found) == 1 and "configuration" in found[0].message
            body = json.dumps({"jsonrpc": "2.0", "id": "bad-1", "method": "textDocument/hover",
                               "params": {"textDocument": 3}}).encode()
            server = s.client._server  # the raw pipe: pygls' client refuses to send malformed params
            assert server is not None and server.stdin is not None
            server.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            await server.stdin.drain()
            shown = await s.client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("net.py")),
                position=types.Position(line=0, character=0)))
            assert shown is not None and "configuration" in shown.contents.value  # type: ignore[union-attr]
            assert server.returncode is None

    run(scenario())


def test_an_analysis_crash_is_one_diagnostic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cslint.lsp import workspace as module

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(module.Workspace, "_run", broken)
    state = module.Workspace()
    state.open(tmp_path / "net.py", BAD)
    (document, found), = state.analyse(tmp_path / "net.py").values()
    assert [(d.code, d.line) for d in found] == [("WSC002", 1)]
    assert "RuntimeError: boom" in found[0].message


def test_lsp_without_the_extra_is_a_clear_error(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['pygls'] = None; sys.modules['pygls.lsp.server'] = None; "
            "from cslint.cli.main import main; sys.exit(main(['lsp']))")
    run_ = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run_.returncode == 2
    assert "pip install -e '.[lsp]'" in run_.stderr and "git+https://github.com/cslint/cslint" in run_.stderr
    assert "pip install 'cslint[lsp]'" not in run_.stderr  # no package index serves cslint yet


def test_an_unsaved_helper_edit_adds_then_removes_the_callers_finding(tmp_path: Path) -> None:
    """The caller's file is open and unchanged; only the helper's buffer changes (never saved)."""
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/scales.py": SCALES_HOST, "pkg/model.py": MODEL})

    async def scenario() -> None:
        async with Session(root) as s:
            s.open("pkg/model.py")
            assert await s.diagnostics("pkg/model.py") == []
            s.open("pkg/scales.py")
            await s.diagnostics("pkg/scales.py")
            before = s.count("pkg/model.py")
            s.change("pkg/scales.py", SCALES, version=2)  # get_scale now returns a tensor: the branch is on one
            added = await s.diagnostics("pkg/model.py", after=before)
            assert [(d.code, d.range.start.line) for d in added] == [("WSC101", 7)]
            before = s.count("pkg/model.py")
            s.change("pkg/scales.py", SCALES_HOST, version=3)
            assert await s.diagnostics("pkg/model.py", after=before) == []
            assert (root / "pkg/scales.py").read_text(encoding="utf-8") == SCALES_HOST

    run(scenario())


def test_save_and_watched_files_reanalyse(tmp_path: Path) -> None:
    """didSave re-publishes the saved document; a pyproject.toml changed on disk (watched-files
    notification) applies to the open documents at once."""
    root = _project(tmp_path, {"net.py": BAD})

    async def scenario() -> None:
        async with Session(root) as s:
            s.open("net.py")
            assert "WSC101" in [d.code for d in await s.diagnostics("net.py")]
            s.change("net.py", GOOD, version=2)
            await s.diagnostics("net.py", lambda p: p.version == 2)
            (root / "net.py").write_text(GOOD, encoding="utf-8")
            before = s.count("net.py")
            s.client.text_document_did_save(types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("net.py"))))
            assert await s.diagnostics("net.py", after=before) == []
            s.change("net.py", BAD, version=3)
            assert "WSC101" in [d.code for d in await s.diagnostics("net.py", lambda p: p.version == 3)]
            (root / "pyproject.toml").write_text('[tool.cslint]\nextend-ignore = ["WSC101"]\n', encoding="utf-8")
            before = s.count("net.py")
            s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
                types.FileEvent(uri=s.uri("pyproject.toml"), type=types.FileChangeType.Changed)]))
            again = await s.diagnostics("net.py", after=before)
            assert again and "WSC101" not in [d.code for d in again]

    run(scenario())


def test_edits_in_a_burst_end_on_the_last_text(tmp_path: Path) -> None:
    """Edits arriving while an analysis runs are coalesced: the last diagnostics are the last text's."""
    root = _project(tmp_path, {"net.py": BAD})

    async def scenario() -> None:
        async with Session(root) as s:
            s.open("net.py")
            await s.diagnostics("net.py")
            for version in range(2, 12):
                s.change("net.py", BAD if version % 2 else GOOD, version=version)
            last = await s.diagnostics("net.py", lambda p: p.version == 11)
            assert "WSC101" in [d.code for d in last]
            s.change("net.py", GOOD, version=12)
            assert await s.diagnostics("net.py", lambda p: p.version == 12) == []
            versions = [p.version for p in s.published[s.uri("net.py")]]
            assert versions == sorted(versions)  # never an older text's diagnostics after a newer one's

    run(scenario())


def test_every_document_opened_at_once_gets_its_diagnostics(tmp_path: Path) -> None:
    """An editor restoring a session opens many documents while an analysis runs: each analysis covers only
    the documents related to its own, and every open one still gets the diagnostics `cslint check` gives."""
    unrelated = {f"m{i}.py": BAD.replace("class Net", f"class Net{i}") for i in range(7)}
    related = {"pkg/__init__.py": "", "pkg/scales.py": SCALES, "model.py": MODEL}
    root = _project(tmp_path, {**unrelated, **related})
    names = [*unrelated, "pkg/scales.py", "model.py"]
    checked = json.loads(_check(root, *names, "--output-format", "json").stdout)
    expected = {name: sorted((d["code"], d["line"] - 1, d["column"] - 1, d["end_line"] - 1, d["end_column"] - 1)
                             for d in checked if (root / d["filename"]).resolve() == (root / name).resolve())
                for name in names}
    assert all(expected[name] for name in [*unrelated, "model.py"])

    async def scenario() -> None:
        async with Session(root) as s:
            for name in names:  # no waiting between them
                s.open(name)
            for name in names:
                found = await s.diagnostics(name, lambda p: _ranges(p.diagnostics) == expected[name], timeout=120)
                assert _ranges(found) == expected[name]

    run(scenario())


def test_hover_on_a_traced_def_without_findings_names_its_root(tmp_path: Path) -> None:
    source = ("import torch\nfrom torch import nn\n\n\ndef halve(x):\n    return x / 2\n\n\ndef _untraced(x):\n"
              "    return x\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n        return halve(x)\n")
    root = _project(tmp_path, {"net.py": source})

    async def hover(s: Session, line: int) -> str | None:
        shown = await s.client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=s.uri("net.py")), position=types.Position(line=line,
                                                                                                      character=5)))
        return shown.contents.value if shown is not None else None  # type: ignore[union-attr]

    async def scenario() -> None:
        async with Session(root) as s:
            s.open("net.py")
            assert await s.diagnostics("net.py") == []
            shown = await hover(s, 4)
            assert shown is not None and "traced from 1 root" in shown and "`net.Net.forward`" in shown
            assert "forward of nn.Module subclass Net" in shown
            # `def _untraced`: no traced code reaches it (a public one would be a library entry point)
            assert await hover(s, 8) is None

    run(scenario())


def test_a_forward_edited_to_call_an_open_helper_republishes_the_helper(tmp_path: Path) -> None:
    """The other direction: the caller's buffer changes what its forward calls, and the findings of the
    open helper's file follow (no cache: the server knows only the imports)."""
    helper = "import torch\n\n\ndef get_scale(x):\n    if x.sum() > 0:\n        return x\n    return x\n"
    quiet = MODEL.replace("if get_scale(x) > 0:", "if True:")
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/scales.py": helper, "pkg/model.py": quiet})

    async def scenario() -> None:
        async with Session(root) as s:
            s.open("pkg/scales.py")
            assert await s.diagnostics("pkg/scales.py") == []  # nothing calls get_scale from traced code
            s.open("pkg/model.py")
            await s.diagnostics("pkg/model.py")
            before = s.count("pkg/scales.py")
            s.change("pkg/model.py", MODEL, version=2)  # the forward now calls get_scale
            found = await s.diagnostics("pkg/scales.py", after=before)
            assert [(d.code, d.range.start.line) for d in found] == [("WSC101", 4)]
            before = s.count("pkg/scales.py")
            s.change("pkg/model.py", quiet, version=3)
            assert await s.diagnostics("pkg/scales.py", after=before) == []

    run(scenario())


LOGGED_MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        loss = x.pow(2).mean()
        print(f"loss {loss}")
        return x
"""


def test_the_target_is_inferred_from_the_project_as_check_does(tmp_path: Path) -> None:
    """No target configured: the project's imports on disk choose it, as for `cslint check`, and a file
    saved with another accelerator's import changes it."""
    root = _project(tmp_path, {"model.py": LOGGED_MODEL, "train.py": "import torch_xla\n"})

    def checked() -> list[tuple[str, int, str]]:
        found = json.loads(_check(root, "model.py", "--output-format", "json").stdout)
        return [(d["code"], d["line"] - 1, d["message"]) for d in found]

    on_xla = checked()
    assert [code for code, _, message in on_xla if "on XLA it runs the graph so far, on every step" in message] == ["WSC701"]

    async def scenario() -> None:
        async with Session(root) as s:
            s.open("model.py")
            found = await s.diagnostics("model.py")
            assert [(d.code, d.range.start.line, d.message) for d in found] == on_xla
            (root / "train.py").write_text("import torch\n", encoding="utf-8")  # saved outside the editor
            by_default = checked()
            assert by_default != on_xla and not any("xm." in message for _, _, message in by_default)
            before = s.count("model.py")
            s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
                types.FileEvent(uri=s.uri("train.py"), type=types.FileChangeType.Changed)]))
            found = await s.diagnostics("model.py", after=before)
            assert [(d.code, d.range.start.line, d.message) for d in found] == by_default

    run(scenario())


def test_a_target_given_by_the_client_is_not_inferred(tmp_path: Path) -> None:
    root = _project(tmp_path, {"model.py": LOGGED_MODEL, "train.py": "import torch_xla\n"})

    async def scenario() -> None:
        async with Session(root, options={"target": "wsc"}) as s:
            s.open("model.py")
            found = await s.diagnostics("model.py")
            assert "WSC701" in [d.code for d in found]
            assert not any("xm." in d.message for d in found)

    run(scenario())


def test_pulled_diagnostics_equal_check_and_follow_edits(tmp_path: Path) -> None:
    """A client that pulls (textDocument/diagnostic) gets the diagnostics of the text it last sent, an
    "unchanged" answer when nothing changed since its previous result, and no pushed diagnostics."""
    root = _project(tmp_path, {"net.py": BAD})
    expected = [(d["code"], d["line"] - 1, d["column"] - 1, d["end_line"] - 1, d["end_column"] - 1)
                for d in json.loads(_check(root, "net.py", "--output-format", "json").stdout)]

    async def scenario() -> None:
        async with Session(root, pull=True) as s:
            s.open("net.py")
            report = await s.pull_diagnostics("net.py")
            assert report.kind == "full" and _ranges(report.items) == sorted(expected)
            again = await s.pull_diagnostics("net.py", previous=report.result_id)
            assert again.kind == "unchanged" and again.result_id == report.result_id
            s.change("net.py", GOOD, version=2)  # pulled at once: the answer waits for the new text's analysis
            cleared = await s.pull_diagnostics("net.py", previous=report.result_id)
            assert cleared.kind == "full" and list(cleared.items) == [] and cleared.result_id != report.result_id
            s.change("net.py", BAD, version=3)
            s.change("net.py", GOOD, version=4)
            s.change("net.py", BAD, version=5)
            last = await s.pull_diagnostics("net.py")
            assert _ranges(last.items) == sorted(expected)
            assert list((await s.pull_diagnostics("other.py")).items) == []  # not open
            assert s.published == {}  # nothing pushed to a client that pulls

    run(scenario())


def test_a_pulling_client_is_asked_to_pull_again_when_a_helper_edit_changes_another_file(tmp_path: Path) -> None:
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/scales.py": SCALES, "pkg/model.py": MODEL})

    async def scenario() -> None:
        async with Session(root, pull=True) as s:
            s.open("pkg/model.py")
            assert [d.code for d in (await s.pull_diagnostics("pkg/model.py")).items] == ["WSC101"]
            s.open("pkg/scales.py")
            assert list((await s.pull_diagnostics("pkg/scales.py")).items) == []
            before = s.refreshes
            s.change("pkg/scales.py", SCALES_HOST, version=2)
            assert list((await s.pull_diagnostics("pkg/scales.py")).items) == []
            await s.refreshed(before)
            assert list((await s.pull_diagnostics("pkg/model.py")).items) == []
            assert s.published == {}

    run(scenario())


NOTEBOOK_CELLS = [
    (False, "# A model\n"),
    (True, "import torch\nfrom torch import nn\n"),
    (True, "class Net(nn.Module):\n    def forward(self, x):\n        if x.max() > 0:\n            x = x * 2\n"
           "        print(x.item())\n        return x\n"),
]


def test_a_notebook_gets_each_cells_diagnostics_as_check_places_them(tmp_path: Path) -> None:
    """An LSP notebook document is linted as `cslint check` lints the .ipynb (its code cells as one
    module); each cell gets the findings in it, lines counted within the cell, and an edit of a cell
    updates them."""
    notebook = {"cells": [{"cell_type": "code" if code else "markdown", "metadata": {}, "source": text,
                           **({"outputs": [], "execution_count": None} if code else {})}
                          for code, text in NOTEBOOK_CELLS],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    root = _project(tmp_path, {"nb.ipynb": json.dumps(notebook)})
    found = json.loads(_check(root, "nb.ipynb", "--output-format", "json").stdout)
    expected = sorted((d["code"], d["line"] - 1, d["column"] - 1, d["end_line"] - 1, d["end_column"] - 1)
                      for d in found)
    assert {d["cell"] for d in found} == {3} and len(expected) == 3
    path = root / "nb.ipynb"
    cells = [f"vscode-notebook-cell:{path}#cell{number}" for number in range(1, 4)]

    async def published(uri: str, after: int) -> list[types.Diagnostic]:
        while len(s.published.get(uri, [])) <= after:
            s.changed.clear()
            await asyncio.wait_for(s.changed.wait(), 90)
        return list(s.published[uri][-1].diagnostics)

    async def scenario() -> None:
        s.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
            notebook_document=types.NotebookDocument(uri=path.as_uri(), notebook_type="jupyter-notebook", version=1,
                                                     cells=[types.NotebookCell(
                                                         kind=types.NotebookCellKind.Code if code else
                                                         types.NotebookCellKind.Markup, document=uri)
                                                         for uri, (code, _) in zip(cells, NOTEBOOK_CELLS)]),
            cell_text_documents=[types.TextDocumentItem(uri=uri, language_id="python" if code else "markdown",
                                                        version=1, text=text)
                                 for uri, (code, text) in zip(cells, NOTEBOOK_CELLS)]))
        assert _ranges(await published(cells[2], 0)) == expected
        assert await published(cells[1], 0) == [] and await published(cells[0], 0) == []
        fixed = "class Net(nn.Module):\n    def forward(self, x):\n        return x * 2\n"
        s.client.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
            notebook_document=types.VersionedNotebookDocumentIdentifier(version=2, uri=path.as_uri()),
            change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
                types.NotebookDocumentCellContentChanges(
                    document=types.VersionedTextDocumentIdentifier(uri=cells[2], version=2),
                    changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)])]))))
        assert await published(cells[2], 1) == []
        assert s.published.get(path.as_uri()) is None  # nothing for the notebook's own URI

    async def session() -> None:
        nonlocal s
        async with Session(root) as s:
            await scenario()

    s: Session
    run(session())


def test_a_pulled_notebook_cell_traces_a_helper_the_notebook_imports(tmp_path: Path) -> None:
    """The notebook's imports (read from its code cells, not its JSON) bring in the project's helper
    (it returns a Python number: no tensor branch), and a client that pulls gets each cell's
    diagnostics by the cell's URI."""
    model = MODEL.split("\n\n\n", 1)[1].replace("            return x * 2\n", "            print(x.item())\n"
                                                    "            return x * 2\n")
    cells_text = [(True, "from torch import nn\n\nfrom pkg.scales import get_scale\n"), (True, model)]
    notebook = {"cells": [{"cell_type": "code", "metadata": {}, "source": text, "outputs": [], "execution_count": None}
                          for _, text in cells_text], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/scales.py": SCALES_HOST, "nb.ipynb": json.dumps(notebook)})
    found = json.loads(_check(root, "nb.ipynb", "--output-format", "json").stdout)
    assert {d["cell"] for d in found} == {2} and "WSC101" not in [d["code"] for d in found]
    path = root / "nb.ipynb"
    cells = [f"vscode-notebook-cell:{path}#cell{number}" for number in (1, 2)]

    async def scenario() -> None:
        async with Session(root, pull=True) as s:
            s.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=path.as_uri(), notebook_type="jupyter-notebook", version=1,
                    cells=[types.NotebookCell(kind=types.NotebookCellKind.Code, document=uri) for uri in cells]),
                cell_text_documents=[types.TextDocumentItem(uri=uri, language_id="python", version=1, text=text)
                                     for uri, (_, text) in zip(cells, cells_text)]))
            second = await s.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
                text_document=types.TextDocumentIdentifier(uri=cells[1])))
            assert sorted((d.code, d.range.start.line) for d in second.items) == \
                sorted((d["code"], d["line"] - 1) for d in found)
            first = await s.client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
                text_document=types.TextDocumentIdentifier(uri=cells[0])))
            assert list(first.items) == []
            assert s.published == {}

    run(scenario())


def test_a_pulling_client_is_asked_to_pull_again_after_a_configuration_change(tmp_path: Path) -> None:
    root = _project(tmp_path, {"net.py": BAD})

    async def scenario() -> None:
        async with Session(root, pull=True) as s:
            s.open("net.py")
            report = await s.pull_diagnostics("net.py")
            assert "WSC101" in [d.code for d in report.items]
            before = s.refreshes
            (root / "pyproject.toml").write_text('[tool.cslint]\nextend-ignore = ["WSC101"]\n', encoding="utf-8")
            s.client.text_document_did_save(types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("pyproject.toml"))))
            await s.refreshed(before)
            again = await s.pull_diagnostics("net.py", previous=report.result_id)
            assert again.kind == "full" and "WSC101" not in [d.code for d in again.items]

    run(scenario())


def test_the_background_check_shows_work_done_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While the project's cache is brought up to date in the background, a client that shows work done
    progress gets `$/progress` begin, reports and end on a token it was asked to create; the first
    diagnostics do not wait for it."""
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/scales.py": SCALES, "pkg/model.py": MODEL})
    monkeypatch.setenv("CSLINT_CACHE_DIR", str(root / ".cslint_cache"))

    def kind(value: Any) -> str:
        return value if isinstance(value, str) else value["kind"] if isinstance(value, dict) else value.kind

    async def scenario() -> list[tuple[str, Any]]:
        async with Session(root, cache=True, progress=True) as s:
            s.open("pkg/model.py")
            found = await s.diagnostics("pkg/model.py")
            assert [d.code for d in found] == ["WSC101"]
            deadline = asyncio.get_running_loop().time() + 120
            while not any(kind(value) == "end" for _, value in s.progressed):
                assert asyncio.get_running_loop().time() < deadline, s.progressed
                s.changed.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(s.changed.wait(), 5)
            return s.progressed

    progressed = run(scenario())
    kinds = [kind(value) for _, value in progressed]
    assert kinds[0] == "created" and kinds[1] == "begin" and kinds[-1] == "end", progressed
    assert set(kinds[2:-1]) <= {"report"}
    assert len({token for token, _ in progressed}) == 1
    begin = progressed[1][1]
    title = begin["title"] if isinstance(begin, dict) else begin.title
    assert title == f"cslint: checking {root.name}"


def test_no_progress_for_a_client_that_does_not_show_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _project(tmp_path, {"pkg/__init__.py": "", "pkg/scales.py": SCALES, "pkg/model.py": MODEL})
    monkeypatch.setenv("CSLINT_CACHE_DIR", str(root / ".cslint_cache"))

    async def scenario() -> list[tuple[str, Any]]:
        async with Session(root, cache=True) as s:
            s.open("pkg/model.py")
            assert [d.code for d in await s.diagnostics("pkg/model.py")] == ["WSC101"]
            await s.diagnostics("pkg/model.py", after=1)  # published again once the cache is up to date
            return s.progressed

    assert run(scenario()) == []


def test_a_notebook_cells_code_actions_and_hover_are_its_findings(tmp_path: Path) -> None:
    """In a notebook cell, as in a file (and as ruff's server does): a finding's fix, whose edit is what
    `cslint check --fix` makes of that cell, the noqa action on the cell's line, fix-all, and the hover
    (on a finding, and on a traced `def`: the roots reaching it)."""
    notebook = {"cells": [{"cell_type": "code" if code else "markdown", "metadata": {}, "source": text,
                           **({"outputs": [], "execution_count": None} if code else {})}
                          for code, text in NOTEBOOK_CELLS],
                "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    root = _project(tmp_path, {"nb.ipynb": json.dumps(notebook), "fixed.ipynb": json.dumps(notebook)})
    _check(root, "fixed.ipynb", "--fix")
    fixed = [cell["source"] for cell in json.loads((root / "fixed.ipynb").read_text(encoding="utf-8"))["cells"]]
    fixed = ["".join(text) if isinstance(text, list) else text for text in fixed]
    assert fixed[:2] == [text for _, text in NOTEBOOK_CELLS[:2]] and "torch.where" in fixed[2]
    path = root / "nb.ipynb"
    cells = [f"vscode-notebook-cell:{path}#cell{number}" for number in range(1, 4)]
    texts = [text for _, text in NOTEBOOK_CELLS]

    def applied(action: types.CodeAction) -> list[str]:
        assert action.edit is not None and action.edit.changes is not None
        return [apply_edits(text, action.edit.changes.get(uri, [])) for uri, text in zip(cells, texts)]

    async def scenario() -> None:
        async with Session(root) as s:
            s.client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=path.as_uri(), notebook_type="jupyter-notebook", version=1,
                    cells=[types.NotebookCell(kind=types.NotebookCellKind.Code if code else
                                              types.NotebookCellKind.Markup, document=uri)
                           for uri, (code, _) in zip(cells, NOTEBOOK_CELLS)]),
                cell_text_documents=[types.TextDocumentItem(uri=uri, language_id="python" if code else "markdown",
                                                            version=1, text=text)
                                     for uri, (code, text) in zip(cells, NOTEBOOK_CELLS)]))
            while not s.published.get(cells[2]):
                s.changed.clear()
                await asyncio.wait_for(s.changed.wait(), 90)
            found = list(s.published[cells[2]][-1].diagnostics)
            branch = next(d for d in found if d.code == "WSC101")
            actions = await s.client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=cells[2]), range=branch.range,
                context=types.CodeActionContext(diagnostics=[branch])))
            by_title = {a.title: a for a in actions or [] if isinstance(a, types.CodeAction)}
            fix = next(a for title, a in by_title.items() if title.startswith("Fix: "))
            assert applied(await s.client.code_action_resolve_async(fix)) == fixed
            noqa = by_title["Ignore WSC101 for this line"]
            assert applied(noqa)[2].splitlines()[2] == "        if x.max() > 0:  # noqa: WSC101"
            fix_all = await s.client.code_action_resolve_async(by_title["cslint: fix all safe fixes"])
            assert applied(fix_all) == fixed
            hover = await s.client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=cells[2]), position=branch.range.start))
            assert hover is not None and "WSC101" in hover.contents.value  # type: ignore[union-attr]
            on_def = await s.client.text_document_hover_async(types.HoverParams(  # the cell's `def forward`
                text_document=types.TextDocumentIdentifier(uri=cells[2]), position=types.Position(line=1, character=8)))
            assert on_def is not None and "traced from 1 root" in on_def.contents.value  # type: ignore[union-attr]
            assert "`nb.Net.forward` (forward of nn.Module subclass Net)" in on_def.contents.value  # type: ignore[union-attr]
            elsewhere = await s.client.text_document_hover_async(types.HoverParams(  # an import: nothing traced
                text_document=types.TextDocumentIdentifier(uri=cells[1]), position=types.Position(line=0, character=1)))
            assert elsewhere is None
            nothing = await s.client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=cells[1]), range=branch.range,
                context=types.CodeActionContext(diagnostics=[])))
            assert not nothing

    run(scenario())
