"""The `cslint` command. A `check --server` run goes to the server when one is up, before the rest of
cslint (and libcst) is imported; anything else, or no server, runs here. Before either, the working
directory leaves the import path: nothing is imported from the repository being linted."""

from __future__ import annotations

import sys

from cslint.support.isolation import keep_repository_off_path


def main(argv: list[str] | None = None) -> int:
    keep_repository_off_path()
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--server" in argv:
        from cslint.server.client import run_on_server, wanted

        if wanted(argv):
            code = run_on_server(argv)
            if code is not None:
                return code
    from cslint.cli.main import main as run_here

    return run_here(argv)
