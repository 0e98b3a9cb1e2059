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


INVALID_HOVER_PARAMS = [{"textDocument": 3, "position": {"line": 0, "character": 0}},
                        {"position": {"line": 0, "character": 0}}, None, [1, 2],
                        {"textDocument": {"uri": "file:///x.py"}, "position": {"line": "zero"}}]


def test_a_request_with_invalid_params_is_answered_with_an_error(client: RawClient) -> None:
    for number, params in enumerate(INVALID_HOVER_PARAMS):
        client.write(_frame({"jsonrpc": "2.0", "id": f"bad-{number}", "method": "textDocument/hover",
                             "params": params}))
        answer = client.response(f"bad-{number}", timeout=30)
        assert answer is not None, f"no answer for {params!r}"
        assert answer["error"]["code"] == -32602, answer
    client.write(_frame({"id": 7, "method": "shutdown"}))  # no "jsonrpc": "2.0": not a request
    answer = client.response(7, timeout=30)
    assert answer is not None and answer["error"]["code"] == -32600
    _shut_down(client)


def test_a_wrong_content_length_is_survived(client: RawClient) -> None:
    """The next request is answered (a too-large length would swallow it, a too-small one its header),
    and so is the badly framed one when its body is JSON; at the end, `shutdown` and `exit` work."""
    for number, wrong_by in enumerate([-10, 25, 100_000]):
        hover = {"jsonrpc": "2.0", "id": 2 * number, "method": "textDocument/hover",
                 "params": {"textDocument": {"uri": "file:///nowhere/x.py"}, "position": {"line": 0, "character": 0}}}
        after = {**hover, "id": 2 * number + 1}
        client.write(_frame(hover, wrong_by) + _frame(after))
        assert client.response(2 * number + 1, timeout=30) is not None, f"{wrong_by}: the next request not answered"
        assert client.response(2 * number, timeout=5) is not None, f"{wrong_by}: the badly framed one not answered"
    client.write(b"\r\nnot a header\r\n\r\n{\"x\": 1}")  # garbage between messages is skipped
    hover = {"jsonrpc": "2.0", "id": 98, "method": "textDocument/hover",
             "params": {"textDocument": {"uri": "file:///nowhere/x.py"}, "position": {"line": 0, "character": 0}}}
    client.write(_frame(hover, 1000) + _frame({"jsonrpc": "2.0", "id": 99, "method": "shutdown"}))
    assert client.response(99, timeout=30) is not None, "shutdown not answered"
    client.notify("exit", None)
    assert client.proc.wait(timeout=30) == 0


URIS = [("model(1).py", "model(1).py"), ("model(2).py", "model%282%29.py"), ("a+c.py", "a+c.py"),
        ("a+d.py", "a%2Bd.py"), ("a+e.py", "a%2be.py"), ("my model.py", "my%20model.py"), ("x.py", "%78.py")]


def test_diagnostics_are_published_under_the_uri_the_client_sent(tmp_path: Path, client: RawClient) -> None:
    uris: list[str] = []
    located = 0
    for name, written in URIS:
        (tmp_path / name).write_text(BAD, encoding="utf-8")
        uris.append(f"file://{tmp_path.as_posix()}/{written}")
        client.notify("textDocument/didOpen", {"textDocument": {"uri": uris[-1], "languageId": "python",
                                                                "version": 1, "text": BAD}})
        published = client.diagnostics(uris[-1], timeout=60)  # the URI as sent, byte for byte
        assert published is not None, f"nothing published under {uris[-1]}"
        found = published["params"]["diagnostics"]
        assert [d["code"] for d in found] == ["WSC101"]
        chain = [r["location"]["uri"] for r in found[0].get("relatedInformation") or []]
        assert set(chain) <= {uris[-1]}, chain  # the chain's `def`s: in this file, named as it was sent
        located += bool(chain)
    assert located  # some chains are checked (not every one of these file names is a module name cslint locates)
    client.notify("textDocument/didClose", {"textDocument": {"uri": uris[0]}})
    cleared = client.diagnostics(uris[0], timeout=30)
    assert cleared is not None and cleared["params"]["diagnostics"] == []
    unexpected = [m["params"]["uri"] for m in client.seen
                  if m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] not in uris]
    assert not unexpected, f"published under URIs the client did not send: {unexpected}"
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
