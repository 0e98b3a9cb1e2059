"""The client side of `cslint check --server`: kept to the standard library's lightest modules, since it
runs before (and mostly instead of) the rest of cslint.

Nothing is sent before the server is known to be this user's: its directory is a real directory owned
by this user and closed to others, and (on Linux) the process listening on the socket runs as this
user. A request has a deadline: a server that is stopped, stuck or busy with a stuck client does not
confirm it in time, and the run happens here instead. The served run starts only once the client has
said "go" (handing over its standard streams) after that confirmation, so a run given up on never
starts and never holds the streams (a pre-commit reading them would wait); a client interrupted (Ctrl-C) or
killed afterwards hangs up, and the server's child stops the run as Ctrl-C stops a local one.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from typing import Any

from cslint.support.isolation import python_command
from cslint.server.address import private_directory, server_directory, socket_path

HEADER_BYTES = 8
MAX_SOCKET_PATH = 100  # bytes; the system's limit is 104 (macOS) or 108 (Linux): else no server
# Set on a machine where no server should outlive the command: CI runners (most set CI), or by choice.
NO_SERVER_VARIABLES = ("CSLINT_NO_SERVER", "CI")
READY_SECONDS = 10.0  # from connecting until the server's child confirms the request; else run here
GO = b"g"  # the client's word to the child that it is still waiting: the run may start
LIMITS = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CPU", "RLIMIT_CORE")


class NotOurs(Exception):
    """The server's directory or process is not this user's: nothing may be sent to it."""


def wanted(argv: list[str]) -> bool:
    return bool(argv) and argv[0] == "check" and "--server" in argv \
        and not any(os.environ.get(name) for name in NO_SERVER_VARIABLES) \
        and hasattr(socket, "AF_UNIX") and hasattr(os, "fork")


def encode(request: dict[str, Any]) -> bytes:
    payload = json.dumps(request).encode("utf-8", "surrogateescape")
    return b"%08d" % len(payload) + payload


def directory_problem(directory: str) -> str | None:
    """Why the server directory cannot be trusted, or None (also when it does not exist yet)."""
    try:
        found = os.lstat(directory)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"{directory}: {exc.strerror}"
    if not os.path.isdir(directory) or os.path.islink(directory):
        return f"{directory} is not a directory"
    if found.st_uid != os.getuid():
        return f"{directory} is owned by another user"
    if found.st_mode & 0o077:
        return f"{directory} is open to other users (mode {found.st_mode & 0o777:o})"
    return None


def peer_uid(connection: socket.socket) -> int | None:
    """The user the listening process runs as, where the system says (Linux)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    import struct

    _, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return uid


def connect(path: str, deadline: float) -> socket.socket:
    """A connection to this user's server at `path`; raises NotOurs, or OSError when none answers."""
    problem = directory_problem(os.path.dirname(path))
    if problem:
        raise NotOurs(problem)
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.settimeout(max(0.001, deadline - time.monotonic()))
        connection.connect(path)
        uid = peer_uid(connection)
        if uid is not None and uid != os.getuid():
            raise NotOurs(f"the process listening on {path} runs as another user (uid {uid})")
    except BaseException:
        connection.close()
        raise
    return connection


def ask(request: dict[str, Any], fds: list[int] = (), path: str | None = None,  # type: ignore[assignment]
        timeout: float | None = None) -> dict[str, Any] | None:
    """Send one request (status, stop); the server's one-line JSON answer, or None if no server of this
    user's answered in time."""
    deadline = time.monotonic() + (timeout or READY_SECONDS)
    try:
        with connect(path or socket_path(), deadline) as connection:
            _send(connection, request, fds, deadline)
            return _answer(_Lines(connection), deadline)
    except NotOurs as exc:
        _warn(exc)
        return None
    except (OSError, ValueError):
        return None


def run_on_server(argv: list[str]) -> int | None:
    """The exit code of `cslint <argv>` run by the server, or None: then the caller runs it here, and a
    server is started for next time (unless the server's place is not this user's)."""
    path = socket_path()
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        return None
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    try:
        cwd = os.getcwd()
    except OSError:  # a deleted working directory: the run here says so, in one line
        return None
    mask = os.umask(0o077)
    os.umask(mask)
    request = {"kind": "check", "argv": argv, "cwd": cwd, "env": dict(os.environ),
               "encoding": sys.stdout.encoding, "umask": mask, "limits": _limits()}
    deadline = time.monotonic() + READY_SECONDS
    try:
        connection = connect(path, deadline)
    except NotOurs as exc:
        _warn(exc)
        return None
    except OSError:
        start_server(path)
        return None
    with connection:
        try:
            _send(connection, request, [], deadline)
            lines = _Lines(connection)
            ready = _answer(lines, deadline)
            if ready is None or "ready" not in ready:
                return None  # a stuck or broken server: it never starts this run, nor holds our streams
            connection.settimeout(None)
            socket.send_fds(connection, [GO], [0, 1, 2])
        except (OSError, ValueError):
            return None
        except KeyboardInterrupt:  # nothing has run yet
            print("cslint: interrupted", file=sys.stderr)
            return 130
        try:
            answer = _answer(lines, None)
        except KeyboardInterrupt:  # hanging up (leaving `with`) stops the run in the server's child
            print("cslint: interrupted", file=sys.stderr)
            return 130
        except (OSError, ValueError):
            answer = None
    if answer is not None and isinstance(answer.get("exit"), int):
        return answer["exit"]
    print("cslint: the server ended the run without an exit code; it may be incomplete", file=sys.stderr)
    return 2


def _send(connection: socket.socket, request: dict[str, Any], fds: list[int], deadline: float) -> None:
    message = encode(request)
    connection.settimeout(max(0.001, deadline - time.monotonic()))
    socket.send_fds(connection, [message[:HEADER_BYTES]], list(fds))
    connection.sendall(message[HEADER_BYTES:])


class _Lines:
    def __init__(self, connection: socket.socket) -> None:
        self.connection = connection
        self.buffer = b""

    def next(self, deadline: float | None) -> bytes | None:
        while b"\n" not in self.buffer:
            if deadline is not None:
                self.connection.settimeout(max(0.001, deadline - time.monotonic()))
            chunk = self.connection.recv(4096)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line


def _answer(lines: _Lines, deadline: float | None) -> dict[str, Any] | None:
    line = lines.next(deadline)
    if line is None:
        return None
    answer = json.loads(line)
    return answer if isinstance(answer, dict) else None


def _limits() -> dict[str, list[int]]:
    """This process's resource limits: the server's child takes them on, as a run here would have them."""
    try:
        import resource
    except ImportError:  # pragma: no cover - not a Unix
        return {}
    return {name: list(resource.getrlimit(getattr(resource, name))) for name in LIMITS if hasattr(resource, name)}


def _warn(problem: Exception) -> None:
    print(f"cslint: warning: not using the server: {problem}", file=sys.stderr)


def start_server(path: str) -> None:
    """In the background, detached from this process; it exits on its own after a quiet spell."""
    if not private_directory(server_directory()):
        return
    import subprocess
    from contextlib import suppress

    with suppress(OSError):  # no server this time, nor next time: the runs stay correct, only slower
        subprocess.Popen(python_command("import sys; from cslint.server.daemon import main; main(sys.argv[1])",
                                        path), cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)
