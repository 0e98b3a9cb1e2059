"""Code action edits are for the text they were computed on (#34): a fix-all while the user types never
corrupts the buffer. The server waits `CSLINT_LSP_TEST_FIX_DELAY` seconds before computing a fix, so the
edit typed during the request lands while it is being computed, every time."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import pytest
from lsprotocol import types

from tests.test_lsp import BAD, Session, _check, _project, apply_edits, run

TYPED = BAD.replace("class Net(nn.Module):\n", "class Net(nn.Module):\n    scale = 2\n\n    def extra(self, x):\n"
                    "        return x\n\n")  # lines typed above `forward` while the fix was computed
WHOLE = types.Range(start=types.Position(line=0, character=0), end=types.Position(line=99, character=0))


def _fixed_by_check(root: Path, text: str) -> str:
    (root / "net.py").write_text(text, encoding="utf-8")
    _check(root, "net.py", "--fix")
    fixed = (root / "net.py").read_text(encoding="utf-8")
    (root / "net.py").write_text(BAD, encoding="utf-8")
    return fixed


def _applied(edit: types.WorkspaceEdit | None, uri: str, buffer: str, version: int) -> str:
    """The client's buffer (at `version`) after applying `edit` as an editor does: an edit naming another
    version of the document is refused whole."""
    assert edit is not None
    if edit.document_changes is not None:
        assert edit.changes is None
        for change in edit.document_changes:
            assert isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri
            if change.text_document.version != version:
                return buffer  # refused: the edit is for another text
            buffer = apply_edits(buffer, change.edits)  # type: ignore[arg-type]
        return buffer
    return apply_edits(buffer, (edit.changes or {}).get(uri, []))


async def _during_an_edit(s: Session, action: types.CodeAction) -> types.CodeAction:
    """`action` resolved while TYPED replaces the document's text (version 2)."""
    request = asyncio.ensure_future(s.client.code_action_resolve_async(action))
    await asyncio.sleep(0.3)  # the server holds the request (CSLINT_LSP_TEST_FIX_DELAY) ...
    s.change("net.py", TYPED, version=2)  # ... while the user types
    return await request


@pytest.mark.parametrize("versioned", [True, False])
def test_a_fix_all_with_an_edit_arriving_during_the_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                            versioned: bool) -> None:
    root = _project(tmp_path, {"net.py": BAD})
    fixed_typed = _fixed_by_check(root, TYPED)
    assert fixed_typed != TYPED
    monkeypatch.setenv("CSLINT_LSP_TEST_FIX_DELAY", "1")

    async def scenario() -> None:
        async with Session(root, versioned=versioned) as s:
            s.open("net.py")
            found = await s.diagnostics("net.py")
            fix_all, = await s.client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("net.py")), range=WHOLE,
                context=types.CodeActionContext(diagnostics=found, only=["source.fixAll"])))
            resolved = await _during_an_edit(s, fix_all)
            after = _applied(resolved.edit, s.uri("net.py"), TYPED, 2)
            ast.parse(after)  # never unparsable
            assert after.count("scale = 2") == 1 and after.count("def forward") == 1
            assert after in (TYPED, fixed_typed)  # refused, or the fix of the text typed
            assert after == fixed_typed  # computed again on the newest text
            if versioned:
                assert resolved.edit.document_changes[0].text_document.version == 2  # type: ignore[index,union-attr]

    run(scenario())


@pytest.mark.parametrize("versioned", [True, False])
def test_a_single_fix_is_for_the_text_its_finding_was_reported_on(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  versioned: bool) -> None:
    root = _project(tmp_path, {"net.py": BAD})
    monkeypatch.setenv("CSLINT_LSP_TEST_FIX_DELAY", "1")

    async def scenario() -> None:
        async with Session(root, versioned=versioned) as s:
            s.open("net.py")
            found = await s.diagnostics("net.py")
            branch = next(d for d in found if d.code == "WSC101")
            quick = await s.client.text_document_code_action_async(types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("net.py")), range=branch.range,
                context=types.CodeActionContext(diagnostics=[branch], only=["quickfix"])))
            fix = next(a for a in quick or [] if a.title.startswith("Fix"))
            noqa = next(a for a in quick or [] if a.title.startswith("Ignore"))
            resolved = await _during_an_edit(s, fix)
            # both for version 1: refused by a client now at version 2 (a client without versions applies
            # whatever it is given: the noqa edit, given before the text changed, is then its own risk)
            for action in (resolved, noqa) if versioned else (resolved,):
                after = _applied(action.edit, s.uri("net.py"), TYPED, 2)
                assert after == TYPED
                if versioned:
                    assert action.edit.document_changes[0].text_document.version == 1  # type: ignore[index,union-attr]

    run(scenario())
