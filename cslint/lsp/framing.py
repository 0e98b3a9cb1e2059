"""Reading the client's JSON-RPC messages: every request answered, a bad header survived.

pygls' reader trusts each `Content-Length`: one too small leaves the rest of the message to be read as
header lines, which swallows the next header too; one too large waits for bytes that are the following
messages. Either way nothing is answered again, `shutdown` and `exit` included. And a request whose
parameters do not fit its method fails while it is decoded, before pygls knows it is a request, so it
gets no answer either.

Here the bytes are framed by `Frames`, which resynchronises on the next `Content-Length:` header when a
body is not JSON. That header, with its CR LF, cannot occur inside a JSON body (a string holds no raw line
break, and outside strings JSON has no such token), so finding one where a body should be proves the
length wrong: the bytes before it are the message. Each message is then decoded as pygls would, and a
request that cannot be is answered with the JSON-RPC error for it (InvalidParams, -32602, for
parameters that do not fit the method).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidRequest, JsonRpcParseError

NAME = b"Content-Length:"
HEADER = re.compile(rb"Content-Length:[ \t]*(\d+)[ \t]*\r\n")
HEADERS_END = b"\r\n\r\n"
MAX_HEADERS = 4096  # bytes from `Content-Length:` to the blank line; beyond, the header is not one
CHUNK = 1 << 20
logger = logging.getLogger(__name__)


class Frames:
    """Messages out of a byte stream: `feed` bytes as they come, get the JSON values completed by them
    (`Unreadable` for bytes framed as a message that are not JSON)."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.length: int | None = None  # the body's length, once its headers are read
        self.searched = 0  # how much of the buffer is known to hold no header (a long body is searched once)

    def feed(self, data: bytes) -> list[Any]:
        self.buffer += data
        out: list[Any] = []
        while self._next(out):
            pass
        return out

    def _next(self, out: list[Any]) -> bool:
        """Take one message (or skip one bad frame) off the buffer; False when more bytes are needed."""
        if self.length is None:
            return self._headers()
        header = self._header_after(0)
        if len(self.buffer) < self.length and header is None:  # the body is still coming
            return False
        if len(self.buffer) >= self.length and (header is None or header.start() >= self.length):
            try:
                out.append(json.loads(self.buffer[:self.length]))
            except ValueError:
                pass
            else:
                self._drop(self.length)
                return True
        # Not JSON at its stated length: the message is the bytes up to the next header, if those are JSON.
        if header is None:
            if not self.buffer.rstrip().endswith(b"}"):
                return False  # the rest of it, or the next header, is still to come
            try:
                out.append(json.loads(self.buffer))
            except ValueError:
                return False
            self._drop(len(self.buffer))
            return True
        try:
            out.append(json.loads(self.buffer[:header.start()]))
        except ValueError:
            out.append(Unreadable(len(self.buffer[:header.start()])))
        self._drop(header.start())
        return True

    def _headers(self) -> bool:
        header = _find_header(self.buffer, 0)
        if header is None:  # garbage, or a header still coming: keep only what may start one
            del self.buffer[:max(len(self.buffer) - 64, 0)]
            return False
        end = self.buffer.find(HEADERS_END, header.end() - 2)
        if end < 0:
            if len(self.buffer) - header.start() > MAX_HEADERS:
                del self.buffer[:header.end()]
                return True
            return False
        if header.start() > 0:  # other headers (Content-Type), or what a bad frame left
            logger.debug("cslint: %d bytes before Content-Length", header.start())
        self.length = int(header.group(1))
        del self.buffer[:end + len(HEADERS_END)]
        self.searched = 0
        return True

    def _header_after(self, start: int) -> re.Match[bytes] | None:
        """The first complete header (its blank line read) in the body being read, if any."""
        begin = max(self.searched - 64, start)
        header = _find_header(self.buffer, begin)
        if header is None:
            self.searched = len(self.buffer)
            return None
        if self.buffer.find(HEADERS_END, header.end() - 2, header.end() + MAX_HEADERS) >= 0:
            return header
        self.searched = header.start()  # its blank line is still to come: looked for again from here
        return None

    def _drop(self, count: int) -> None:
        del self.buffer[:count]
        self.length = None
        self.searched = 0


def _find_header(buffer: bytearray, start: int) -> re.Match[bytes] | None:
    """The first `Content-Length: N` line from `start` (found with `find`: a body of tens of MB is
    searched at memory speed as it comes)."""
    while True:
        at = buffer.find(NAME, start)
        if at < 0:
            return None
        header = HEADER.match(buffer, at)
        if header is not None:
            return header
        start = at + 1


class Unreadable:
    """Bytes framed as a message that are not JSON."""

    def __init__(self, size: int) -> None:
        self.size = size


def deliver(protocol: Any, value: Any) -> None:
    """Hand one decoded JSON value to pygls' protocol; a request it cannot take is answered with an error."""
    if isinstance(value, Unreadable):
        logger.warning("cslint: %d bytes framed as a message are not JSON", value.size)
        protocol._send_response(None, None, JsonRpcParseError().to_response_error())
        return
    invalid = not isinstance(value, dict) or value.get("jsonrpc") != "2.0"
    request = not invalid and "id" in value and "method" in value  # a notification is never answered
    request_id = value.get("id") if isinstance(value, dict) else None
    request_id = request_id if isinstance(request_id, (int, str)) and not isinstance(request_id, bool) else None
    try:
        if invalid:
            raise JsonRpcInvalidRequest()
        message = protocol.structure_message(value)
    except JsonRpcException as error:
        if invalid or request:
            protocol._send_response(request_id, None, error.to_response_error())
        return
    except Exception as exc:  # pygls' decoding itself failed: still an answer
        logger.exception("cslint: a message could not be decoded")
        if request:
            protocol._send_response(request_id, None, JsonRpcInternalError(str(exc)).to_response_error())
        return
    try:
        protocol.handle_message(message)
    except Exception:  # as pygls' own loop: a handler's failure is logged, the server goes on
        logger.exception("cslint: a message could not be handled")


async def serve(read: Callable[[], Awaitable[bytes]], protocol: Any, stop: threading.Event) -> None:
    """Deliver the messages of the chunks `read` gives (b"" at the end) until the stream ends or `stop`
    is set."""
    frames = Frames()
    while not stop.is_set():
        data = await read()
        if not data:
            break
        for value in frames.feed(data):
            deliver(protocol, value)


def pumped(read: Callable[[], bytes]) -> Callable[[], Awaitable[bytes]]:
    """An awaitable reader of what the blocking `read` gives, read on a daemon thread of its own (a read
    blocked on the client's pipe never holds up the server's exit)."""
    chunks: asyncio.Queue[bytes] | None = None

    def pump(loop: asyncio.AbstractEventLoop, queue: asyncio.Queue[bytes]) -> None:
        while True:
            try:
                data = read()
            except (OSError, ValueError):
                data = b""
            loop.call_soon_threadsafe(queue.put_nowait, data)
            if not data:
                return

    async def next_chunk() -> bytes:
        nonlocal chunks
        if chunks is None:
            chunks = asyncio.Queue()
            threading.Thread(target=pump, args=(asyncio.get_running_loop(), chunks), name="cslint-lsp-reader",
                             daemon=True).start()
        return await chunks.get()

    return next_chunk
