"""Whether what is remembered of a file by its size and modification time can be trusted."""

from __future__ import annotations

import os
import time

# A file modified this recently may hide a second edit within the same clock tick: what is remembered of
# it by size and modification time is not trusted; it is read again.
RECENT_SECONDS = 2.0


def settled(stat: os.stat_result, now: float | None = None) -> bool:
    """Whether what is remembered of a file by its size and modification time can be trusted: the file
    was last modified long enough ago that no second edit hides in the same clock tick."""
    return (time.time() if now is None else now) - stat.st_mtime > RECENT_SECONDS
