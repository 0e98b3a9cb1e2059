"""The client side of `cslint check --server`: kept to the standard library's lightest modules, since it
runs before (and mostly instead of) the rest of cslint."""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

from cslint.server.address import private_directory, server_directory, socket_path

HEADER_BYTES = 8
MAX_SOCKET_PATH = 100  # bytes; the system's limit is 104 (macOS) or 108 (Linux): else no server
# Set on a machine where no server should outlive the command: CI runners (most set CI), or by choice.
NO_SERVER_VARIABLES = ("CSLINT_NO_SERVER", "CI")


def wanted(argv: list[str]) -> bool:
    return bool(argv) and argv[0] == "check" and "--server" in argv \
        and not any(os.environ.get(name) for name in NO_SERVER_VARIABLES) \
        and hasattr(socket, "AF_UNIX") and hasattr(os, "fork")


def encode(request: dict[str, Any]) -> bytes:
    payload = json.dumps(request).encode("utf-8", "surrogateescape")
    return b"%08d" % len(payload) + payload


def ask(request: dict[str, Any], fds: list[int] = (), path: str | None = None,  # type: ignore[assignment]
        timeout: float | None = None) -> dict[str, Any] | None:
    """Send one request; the server's one-line JSON answer, or None if no server answered."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(timeout)
            connection.connect(path or socket_path())
            message = encode(request)
            socket.send_fds(connection, [message[:HEADER_BYTES]], list(fds))
            connection.sendall(message[HEADER_BYTES:])
            answer = b""
            while not answer.endswith(b"\n"):
                chunk = connection.recv(4096)
                if not chunk:
                    return None
                answer += chunk
        return json.loads(answer)
    except (OSError, ValueError):
        return None


def run_on_server(argv: list[str]) -> int | None:
    """The exit code of `cslint <argv>` run by the server, or None: then the caller runs it here, and a
    server is started for next time."""
    path = socket_path()
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        return None
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    request = {"kind": "check", "argv": argv, "cwd": os.getcwd(), "env": dict(os.environ),
               "encoding": sys.stdout.encoding}
    answer = ask(request, fds=[0, 1, 2], path=path)
    if answer is not None and isinstance(answer.get("exit"), int):
        return answer["exit"]
    start_server(path)
    return None


def start_server(path: str) -> None:
    """In the background, detached from this process; it exits on its own after a quiet spell."""
    if not private_directory(server_directory()):
        return
    import subprocess
    from contextlib import suppress

    with suppress(OSError):  # no server this time, nor next time: the runs stay correct, only slower
        subprocess.Popen([sys.executable, "-c", "import sys; from cslint.server.daemon import main; main(sys.argv[1])",
                          path], cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
