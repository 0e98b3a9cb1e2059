"""cslint never imports from the repository it lints.

Python looks for modules in the working directory when it is on `sys.path`: `python -m` and `python -c`
put it there (as the directory, or as `''`, which follows every `chdir`), and so does a relative
`PYTHONPATH` entry. In a repository that ships `selectors.py` or `json/`, the standard library's modules
would then come from the repository. So every cslint process drops those entries before it imports
anything that is not loaded already, and every interpreter cslint starts (the worker pool, the server)
starts without them.
"""

from __future__ import annotations

import os
import sys  # nothing else: this module is imported before the path is cleaned

# the directory cslint is imported from: kept, so a source checkout run as `python -m cslint` still works
HOME = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Python 3.11+: `-P` / PYTHONSAFEPATH start an interpreter without the working directory on sys.path
SAFE_PATH_FLAG = sys.version_info >= (3, 11)


def keep_repository_off_path(path: list[str] | None = None) -> None:
    """Remove from `path` (default `sys.path`) the entries that resolve against the working directory
    (`''` and other relative ones) and the working directory itself."""
    path = sys.path if path is None else path
    try:
        here = os.path.realpath(os.getcwd())
    except OSError:
        here = None
    path[:] = [entry for entry in path if os.path.isabs(entry)
               and (entry == HOME or os.path.realpath(entry) != here)]


def python_command(code: str, *args: str) -> list[str]:
    """A command line running `code` in a Python that puts no working directory on `sys.path`."""
    if SAFE_PATH_FLAG:
        return [sys.executable, "-P", "-c", code, *args]
    return [sys.executable, "-c", "import sys; del sys.path[0]; " + code, *args]  # `-c` put '' first


class isolated_workers:  # noqa: N801 - used as a context manager, like contextlib's
    """`with isolated_workers() as method:` the start method for a process pool whose processes import
    nothing from the working directory.

    Spawned interpreters (the workers, and multiprocessing's resource tracker) start as `python -c ...`
    in this directory: with PYTHONSAFEPATH set they do not look in it, and they then take this process's
    `sys.path`, which `keep_repository_off_path` has cleaned. Where that setting does not exist (before
    Python 3.11) or is ignored (`-E`), the workers are forked instead."""

    def __enter__(self) -> str:
        self.before = os.environ.get("PYTHONSAFEPATH")
        if sys.flags.safe_path:
            return "spawn"
        if not SAFE_PATH_FLAG or sys.flags.ignore_environment:
            return "fork"
        os.environ["PYTHONSAFEPATH"] = "1"
        return "spawn"

    def __exit__(self, *exc: object) -> None:
        if self.before is None:
            os.environ.pop("PYTHONSAFEPATH", None)
        else:
            os.environ["PYTHONSAFEPATH"] = self.before
