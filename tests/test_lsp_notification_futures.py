"""The server does not keep anything per notification it handled (cslint/lsp/protocol.py): a session of
thousands of edits is thousands of `didChange` notifications."""

from __future__ import annotations

import pytest

pytest.importorskip("pygls")

from lsprotocol import types  # noqa: E402

from cslint.lsp.server import CslintServer  # noqa: E402


def test_a_handled_notification_leaves_no_future_behind() -> None:
    server = CslintServer()
    params = types.DidChangeWorkspaceFoldersParams(event=types.WorkspaceFoldersChangeEvent(added=[], removed=[]))
    for _ in range(3):  # pygls' own handler of it is a generator, as those of didOpen/didChange/didClose are
        server.protocol._handle_notification(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS, params)
    assert server.protocol._request_futures == {}
