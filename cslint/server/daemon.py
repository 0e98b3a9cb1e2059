"""The server process: imports what a check needs once, then forks a child per request. It exits after
`CSLINT_SERVER_IDLE` seconds without a request (default 900), on `cslint server stop`, or when its socket
is removed or taken over."""

from __future__ import annotations

import fcntl
import gc
import json
import os
import resource
import select
import socket
import struct
import time
from pathlib import Path
from typing import Any

from cslint.support.isolation import keep_repository_off_path
from cslint.server.address import private_directory
from cslint.server.client import HEADER_BYTES

IDLE_SECONDS = 900.0
LOOK_EVERY = 30.0  # seconds between checks that the socket is still this server's
REAP_EVERY = 0.5  # while children run: how soon a finished one is reaped
REQUEST_SECONDS = 5.0  # a client that has not sent its whole request by then is dropped
MAX_REQUEST_BYTES = 16 * 1024 * 1024


def main(path: str) -> None:
    keep_repository_off_path()
    address = Path(path)
    if not private_directory(str(address.parent)):
        return
    with open(address.with_suffix(".lock"), "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return  # another server for this code is starting or running
        preload()
        address.unlink(missing_ok=True)  # left by a server that was killed
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
            listener.bind(str(address))
            os.chmod(address, 0o600)
            listener.listen(64)
            inode = os.stat(address).st_ino
            try:
                Server(listener, address, inode, lock.fileno()).serve()
            finally:
                if _inode(address) == inode:
                    address.unlink(missing_ok=True)


def preload() -> None:
    """Everything a check imports, so a forked child starts warm."""
    import libcst

    import cslint.cli.main
    import cslint.support.deep_stack
    import cslint.engine.discovery
    import cslint.output.docs
    import cslint.fixers.apply
    import cslint.engine.incremental
    import cslint.engine.runner
    import cslint.server.child
    import cslint.engine.target_inference
    import cslint.store.tree_memo  # noqa: F401
    from cslint.analysis.library_env import environment_for
    from cslint.core.config import DEFAULT_EXCLUDES
    from cslint.engine.discovery import Excluder
    from cslint.output import FORMATS, RENDERERS
    from cslint.rules import all_rules

    all_rules()
    Excluder(DEFAULT_EXCLUDES, None)  # its expressions compiled
    environment_for(None).digest_text()  # the installed libraries (each run checks they are unchanged)
    for name in RENDERERS:
        FORMATS[name]  # imports the format's module
    libcst.parse_module("def forward(self, x):\n    return x\n")
    gc.freeze()  # what is loaded now is never collected: children neither scan nor copy it


def preload_caches(paths: set[str]) -> None:
    from cslint.store.cache import preload
    from cslint.store.import_memo import preload as preload_import_memo
    from cslint.store.tree_memo import preload as preload_tree_memo

    for path in sorted(paths):
        preload(path)
    for directory in sorted({os.path.dirname(path) for path in paths}):  # the memos beside each cache
        preload_import_memo(Path(directory))
        preload_tree_memo(Path(directory))
    gc.freeze()


class Server:
    def __init__(self, listener: socket.socket, address: Path, inode: int, lock: int) -> None:
        self.listener = listener
        self.lock = lock  # children let go of it: a long run must not keep a new server from starting
        self.address = address
        self.inode = inode
        self.served = 0
        self.children = 0  # forked and not yet reaped
        self.children_peak_mb = 0.0
        self.started = time.time()
        self.last_request = time.monotonic()
        self.idle_seconds = float(os.environ.get("CSLINT_SERVER_IDLE") or IDLE_SECONDS)
        # children write here which cache files they used; they are read ahead for the next child
        self.cache_paths, self.cache_paths_to_server = os.pipe()
        os.set_blocking(self.cache_paths, False)

    def serve(self) -> None:
        while True:
            self.reap()
            quiet = time.monotonic() - self.last_request
            if quiet >= self.idle_seconds or _inode(self.address) != self.inode:
                return
            wait = min(LOOK_EVERY, self.idle_seconds - quiet, REAP_EVERY if self.children else LOOK_EVERY)
            ready, _, _ = select.select([self.listener, self.cache_paths], [], [], wait)
            if self.cache_paths in ready:
                preload_caches(self.read_cache_paths())
            if self.listener not in ready:
                continue
            try:
                connection, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                continue
            self.last_request = time.monotonic()
            with connection:
                if not self.handle(connection):
                    return

    def handle(self, connection: socket.socket) -> bool:
        """Serve one connection; False to stop the server."""
        fds: list[int] = []
        try:
            if not _same_user(connection):
                return True
            request, fds = _read_request(connection, time.monotonic() + REQUEST_SECONDS)
            kind = request.get("kind")
            if kind == "status":
                self.reap()
                _answer(connection, {"pid": os.getpid(), "served": self.served, "running": self.children,
                                     "started": self.started,
                                     "socket": str(self.address), "peak_mb": round(self.children_peak_mb, 1),
                                     "own_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)})
            elif kind == "stop":
                _answer(connection, {"stopped": os.getpid()})
                return False
            elif kind == "check" and isinstance(request.get("argv"), list):
                self.fork_check(connection, request)
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a broken or foreign request: drop it, keep serving
        finally:
            for fd in fds:
                os.close(fd)
        return True

    def fork_check(self, connection: socket.socket, request: dict[str, Any]) -> None:
        if os.fork() == 0:
            from cslint.server.child import run_request

            os.close(self.cache_paths)
            os.close(self.lock)
            run_request(connection, self.listener, request, self.cache_paths_to_server)  # never returns
        self.served += 1
        self.children += 1

    def reap(self) -> None:
        while self.children:
            try:
                pid, _, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                self.children = 0
                return
            if pid == 0:
                return
            self.children -= 1
            self.children_peak_mb = max(self.children_peak_mb, usage.ru_maxrss / 1024)

    def read_cache_paths(self) -> set[str]:
        data = b""
        try:
            while chunk := os.read(self.cache_paths, 65536):
                data += chunk
        except BlockingIOError:
            pass
        return {line for line in data.decode("utf-8", "surrogateescape").splitlines() if line}


def _read_request(connection: socket.socket, deadline: float) -> tuple[dict[str, Any], list[int]]:
    """The request, read by `deadline` in all: a client that sends it a byte at a time does not hold the
    server (which serves one connection at a time) past it."""
    _wait_until(connection, deadline)
    header, fds, _, _ = socket.recv_fds(connection, HEADER_BYTES, 3)
    try:
        header += _receive(connection, HEADER_BYTES - len(header), deadline)
        length = int(header)
        if not 0 < length <= MAX_REQUEST_BYTES:
            raise ValueError("bad request length")
        request = json.loads(_receive(connection, length, deadline).decode("utf-8", "surrogateescape"))
        if not isinstance(request, dict):
            raise ValueError("bad request")
    except BaseException:
        for fd in fds:
            os.close(fd)
        raise
    return request, fds


def _wait_until(connection: socket.socket, deadline: float) -> None:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("request too slow")
    connection.settimeout(left)


def _receive(connection: socket.socket, size: int, deadline: float) -> bytes:
    data = b""
    while len(data) < size:
        _wait_until(connection, deadline)
        chunk = connection.recv(size - len(data))
        if not chunk:
            raise ValueError("request cut short")
        data += chunk
    return data


def _answer(connection: socket.socket, answer: dict[str, Any]) -> None:
    connection.sendall(json.dumps(answer).encode() + b"\n")


def _same_user(connection: socket.socket) -> bool:
    """The socket's directory is closed to other users already; where the system says who is calling
    (Linux), check that too."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return True
    _, uid, _ = struct.unpack("3i", connection.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return uid == os.getuid()


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None
