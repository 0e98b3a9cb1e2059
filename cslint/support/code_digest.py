"""Which cslint made an answer kept on disk: a digest of the installed package's own files.

Every checkout and every install from a git URL calls itself the same version, so a cache keyed by the
version alone would serve an upgraded cslint the reports (or library summaries) of the code it replaced: a
file the old rules passed would stay "clean". The digest names each file of the package by its path, size
and modification time (a stat each, no reading), so any install or edit of cslint starts its caches afresh.
"""

from __future__ import annotations

import hashlib
import os
from functools import lru_cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent
_KINDS = (".py", ".json")


@lru_cache(maxsize=1)
def code_digest() -> str:
    entries: list[str] = []
    for directory, subdirectories, files in os.walk(PACKAGE):
        subdirectories[:] = sorted(d for d in subdirectories if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(_KINDS):
                path = os.path.join(directory, name)
                try:
                    status = os.stat(path)
                except OSError:
                    continue
                entries.append(f"{os.path.relpath(path, PACKAGE)}\0{status.st_size}\0{status.st_mtime_ns}")
    return hashlib.blake2b("\n".join(entries).encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()
