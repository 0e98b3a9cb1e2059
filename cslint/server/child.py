"""One `cslint check` request, in a child forked from the server: it takes over the client's working
directory, environment and standard streams, runs the command line as the client would have, sends the
exit code, lets go of the client's streams, and only then does the deferred work (the cache write)."""

from __future__ import annotations

import json
import os
import socket
import sys
from contextlib import suppress
from typing import Any, NoReturn

from cslint import deferred


def run_request(connection: socket.socket, listener: socket.socket, request: dict[str, Any],
                fds: list[int], cache_paths_to_server: int) -> NoReturn:
    code = 2
    try:
        listener.close()
        _take_streams(fds, request.get("encoding") or "utf-8")
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        deferred.start_deferring()
        code = _run(request["argv"])
    except BaseException as exc:  # noqa: BLE001 - the client must get an answer whatever happened
        print(f"cslint: internal error in the server: {type(exc).__name__}: {exc}", file=sys.stderr)
    finally:
        try:
            with suppress(OSError, ValueError):  # a client that went away: still write the cache
                sys.stdout.flush()
                sys.stderr.flush()
                connection.sendall(json.dumps({"exit": code}).encode() + b"\n")
            connection.close()
            _let_go_of_streams()  # the client's reader sees end of file now, not after the cache write
            deferred.run_deferred()
            _tell_server(cache_paths_to_server)
        finally:
            os._exit(0)


def _tell_server(fd: int) -> None:
    """Which cache files this run read (and wrote): the server reads them ahead for the next run."""
    from cslint.cache import loaded_paths

    lines = "".join(f"{path}\n" for path in dict.fromkeys(loaded_paths))
    if lines:
        os.write(fd, lines.encode("utf-8", "surrogateescape"))


def _run(argv: list[str]) -> int:
    from cslint.cli import main

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
