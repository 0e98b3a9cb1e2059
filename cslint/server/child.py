"""One `cslint check` request, in a child forked from the server. It confirms the request and waits for
the client's go-ahead, which comes with the client's standard streams (a client that gave up meanwhile
has run the check itself: this run never starts). It then takes over the client's working directory,
environment, umask, resource limits and standard streams, runs the command line as the client would
have, sends the exit code, lets go of the client's streams, and only then does the deferred work (the
cache write). A client that hangs up before the exit code (Ctrl-C, killed) interrupts the run as Ctrl-C
interrupts a local one, before the writes that follow the analysis."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
from contextlib import suppress
from typing import Any, NoReturn

from cslint.support import deferred
from cslint.support.isolation import keep_repository_off_path
from cslint.server.client import GO

GO_SECONDS = 10.0  # a client that has not said go by then has given up


def run_request(connection: socket.socket, listener: socket.socket, request: dict[str, Any],
                cache_paths_to_server: int) -> NoReturn:
    try:
        listener.close()
        fds = _client_says_go(connection)
        if fds is not None:
            _serve(connection, request, fds, cache_paths_to_server)
    finally:
        os._exit(0)


def _client_says_go(connection: socket.socket) -> list[int] | None:
    """The client's standard streams, sent with its go-ahead; None if it gave up."""
    try:
        connection.settimeout(GO_SECONDS)
        connection.sendall(json.dumps({"ready": os.getpid()}).encode() + b"\n")
        said, fds, _, _ = socket.recv_fds(connection, len(GO), 3)
        connection.settimeout(None)
    except OSError:
        return None
    return fds if said == GO and len(fds) == 3 else None


def _serve(connection: socket.socket, request: dict[str, Any], fds: list[int], cache_paths_to_server: int) -> None:
    code = 2
    watch = HangUpWatch(connection)
    try:
        _take_streams(fds, request.get("encoding") or "utf-8")
        _take_process_settings(request)
        os.chdir(request["cwd"])
        keep_repository_off_path()  # the server's path has no '' (it follows chdir); nor this directory
        os.environ.clear()
        os.environ.update(request["env"])
        deferred.start_deferring()
        # Ctrl-C semantics as in a local run, even when the server was started by a client that ignored
        # SIGINT (a background job): the hang-up watch interrupts the run with this signal.
        signal.signal(signal.SIGINT, signal.default_int_handler)
        watch.start()
        code = _run(request["argv"])
    except BaseException as exc:  # noqa: BLE001 - the client must get an answer whatever happened
        if not watch.hung_up:
            print(f"cslint: internal error in the server: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        hung_up = watch.finish()
        if not hung_up:
            with suppress(OSError, ValueError):  # a client that went away: still write the cache
                sys.stdout.flush()
                sys.stderr.flush()
                connection.sendall(json.dumps({"exit": code}).encode() + b"\n")
        connection.close()
        _let_go_of_streams()  # the client's reader sees end of file now, not after the cache write
        if not hung_up:  # an interrupted run leaves nothing behind
            deferred.run_deferred()
            _tell_server(cache_paths_to_server)


class HangUpWatch(threading.Thread):
    """Waits for the client to hang up; if it does before the run is finished, the run is interrupted
    (SIGINT, as Ctrl-C interrupts a local run) with its output going nowhere."""

    def __init__(self, connection: socket.socket) -> None:
        super().__init__(daemon=True)
        self.connection = connection
        self.lock = threading.Lock()
        self.finished = False
        self.hung_up = False

    def run(self) -> None:
        with suppress(OSError):
            self.connection.recv(1)  # the client sends nothing more: this returns when it hangs up
        with self.lock:
            if self.finished:
                return
            self.hung_up = True
            _let_go_of_streams()
            os.kill(os.getpid(), signal.SIGINT)

    def finish(self) -> bool:
        """No interruption from now on; whether the client hung up."""
        with self.lock:
            self.finished = True
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # also one sent but not handled yet
        return self.hung_up


def _take_process_settings(request: dict[str, Any]) -> None:
    """The client's umask and resource limits (lowered to them, never raised): files are created, and
    memory and time are bounded, as in a run in the client's own process."""
    umask = request.get("umask")
    if isinstance(umask, int):
        os.umask(umask & 0o777)
    import resource

    for name, wanted in (request.get("limits") or {}).items():
        which = getattr(resource, name, None) if name.startswith("RLIMIT_") else None
        if which is None or not isinstance(wanted, list) or len(wanted) != 2:
            continue
        soft, hard = resource.getrlimit(which)
        hard = _lower(hard, wanted[1])
        with suppress(ValueError, OSError):
            resource.setrlimit(which, (_lower(_lower(soft, wanted[0]), hard), hard))


def _lower(a: int, b: int) -> int:
    from resource import RLIM_INFINITY

    if a == RLIM_INFINITY:
        return b
    return a if b == RLIM_INFINITY else min(a, b)


def _tell_server(fd: int) -> None:
    """Which cache files this run read (and wrote): the server reads them ahead for the next run."""
    from cslint.store.cache import loaded_paths

    lines = "".join(f"{path}\n" for path in dict.fromkeys(loaded_paths))
    if lines:
        os.write(fd, lines.encode("utf-8", "surrogateescape"))


def _run(argv: list[str]) -> int:
    from cslint.cli.main import main

    try:
        return main([str(a) for a in argv])
    except SystemExit as exit:  # argparse's usage errors and --help
        if exit.code is None or isinstance(exit.code, int):
            return exit.code or 0
        print(exit.code, file=sys.stderr)
        return 1


def _take_streams(fds: list[int], encoding: str) -> None:
    for target, fd in zip((0, 1, 2), fds):
        os.dup2(fd, target)
        os.close(fd)
    sys.stdin = open(0, encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stdout = open(1, "w", encoding=encoding, closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", encoding=encoding, errors="backslashreplace", closefd=False, buffering=1)  # noqa: SIM115


def _let_go_of_streams() -> None:
    null = os.open(os.devnull, os.O_RDWR)
    for target in (0, 1, 2):
        os.dup2(null, target)
    os.close(null)
