"""`cslint lsp` against a client that writes its own bytes: every request answered (an error for bad
parameters), a wrong Content-Length survived, documents named by the URI the client sent (#34)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from lsp_hostile import RawClient  # noqa: E402

BAD = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.max() > 0:
            x = x * 2
        return x
"""


@pytest.fixture
def client(tmp_path: Path) -> RawClient:
    (tmp_path / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
    raw = RawClient(tmp_path)
    assert raw.initialize(tmp_path) is not None
    yield raw
    if raw.proc.poll() is None:
        raw.proc.kill()
        raw.proc.wait()


def _frame(message: dict[str, object], wrong_by: int = 0) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % (len(body) + wrong_by) + body


def _shut_down(client: RawClient) -> None:
    assert client.close() == 0


@pytest.mark.parametrize("params", [{"textDocument": 3, "position": {"line": 0, "character": 0}},
                                    {"position": {"line": 0, "character": 0}}, None, [1, 2],
                                    {"textDocument": {"uri": "file:///x.py"}, "position": {"line": "zero"}}])
def test_a_request_with_invalid_params_is_answered_with_an_error(client: RawClient, params: object) -> None:
    client.write(_frame({"jsonrpc": "2.0", "id": "bad", "method": "textDocument/hover", "params": params}))
    answer = client.response("bad", timeout=30)
    assert answer is not None, "no answer"
    assert answer["error"]["code"] == -32602
    _shut_down(client)


def test_a_message_that_is_not_a_request_is_answered_as_invalid(client: RawClient) -> None:
    client.write(_frame({"id": 7, "method": "shutdown"}))  # no "jsonrpc": "2.0"
    answer = client.response(7, timeout=30)
    assert answer is not None and answer["error"]["code"] == -32600
    _shut_down(client)


@pytest.mark.parametrize("wrong_by", [-10, 25, 100_000])
def test_a_wrong_content_length_is_survived(client: RawClient, wrong_by: int) -> None:
    """The next request (here `shutdown`) is answered, and so is the badly framed one when its body is
    JSON: a too-large length would otherwise swallow the shutdown, a too-small one its header."""
    hover = {"jsonrpc": "2.0", "id": 41, "method": "textDocument/hover",
             "params": {"textDocument": {"uri": "file:///nowhere/x.py"}, "position": {"line": 0, "character": 0}}}
    client.write(_frame(hover, wrong_by) + _frame({"jsonrpc": "2.0", "id": 42, "method": "shutdown"}))
    assert client.response(42, timeout=30) is not None, "shutdown not answered"
    assert client.response(41, timeout=5) is not None, "the badly framed request not answered"
    client.notify("exit", None)
    assert client.proc.wait(timeout=30) == 0


def test_garbage_between_messages_is_skipped(client: RawClient) -> None:
    client.write(b"\r\nnot a header\r\n\r\n{\"x\": 1}" + _frame({"jsonrpc": "2.0", "id": 5, "method": "shutdown"}))
    assert client.response(5, timeout=30) is not None
    client.notify("exit", None)
    assert client.proc.wait(timeout=30) == 0


@pytest.mark.parametrize("name, written", [
    ("model(1).py", "model(1).py"), ("model(1).py", "model%281%29.py"), ("a+c.py", "a+c.py"),
    ("a+c.py", "a%2Bc.py"), ("a+c.py", "a%2bc.py"), ("my model.py", "my%20model.py"),
    ("x.py", "%78.py")])
def test_diagnostics_are_published_under_the_uri_the_client_sent(
        tmp_path: Path, client: RawClient, name: str, written: str) -> None:
    (tmp_path / name).write_text(BAD, encoding="utf-8")
    uri = f"file://{tmp_path.as_posix()}/{written}"
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                            "text": BAD}})
    published = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics", timeout=60)
    assert published is not None
    assert published["params"]["uri"] == uri  # byte for byte
    found = published["params"]["diagnostics"]
    assert [d["code"] for d in found] == ["WSC101"]
    assert all(r["location"]["uri"] == uri for r in found[0]["relatedInformation"])  # the chain: this file
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    cleared = client.diagnostics(uri, timeout=30)
    assert cleared is not None and cleared["params"]["diagnostics"] == []
    _shut_down(client)


@pytest.mark.parametrize("wrong_by", [0, -10, -1, 1, 25, 100_000])
@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_frames_resynchronise_on_the_next_header(wrong_by: int, chunk: int) -> None:
    from cslint.lsp.framing import Frames

    first = {"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {"x": "Content-Length: 3"}}
    rest = [{"jsonrpc": "2.0", "id": 2, "method": "shutdown"}, {"jsonrpc": "2.0", "method": "exit"}]
    stream = _frame(first, wrong_by) + b"".join(_frame(m) for m in rest)
    frames, got = Frames(), []
    for at in range(0, len(stream), chunk):
        got += frames.feed(stream[at:at + chunk])
    assert got == [first, *rest]  # the badly framed body too: it is JSON up to the next header
