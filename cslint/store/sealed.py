"""cslint's files in its cache directory (the results cache and the memos beside it) are sealed: each
carries a MAC (keyed BLAKE2b, with this user's key: cslint/store/user_key.py) of its name and content, and is
believed only when the MAC is right. A file cslint did not write for this user (shipped in a repository,
copied from another machine or user, edited by hand) is none, and what it would have said is worked out
again. The cache is a way to be fast, never a source of answers a repository can supply.

A sealed file is a JSON object whose first member is the MAC: `{"mac":"<64 hex digits>",...}`, the MAC
covering the file's name and every byte after that member, so it stays JSON for anyone reading it.

Reading one cannot hang or exhaust memory whatever is in the directory: it is opened without following
a link and without blocking, and read only when `fstat` says it is a regular file of at most
`MAX_BYTES`; anything else is no file.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from cslint.support import bounded_json

from cslint.store import user_key

T = TypeVar("T")
Signature = tuple[int, int, int]  # inode, size, modification time: a rewrite changes the inode

# Far above what cslint writes for a large project; bounds what a planted file can cost (it is read whole
# before its seal is found wrong).
MAX_BYTES = 64 * 1024 * 1024
_OPEN = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_HEAD = b'{"mac":"'
_BODY = len(_HEAD) + 64 + 2  # where what the MAC covers starts, after `<64 hex>",`


def seal(name: str, text: str) -> bytes | None:
    """The sealed file `name` holding `text` (a JSON object with at least one member); None without a key."""
    key = user_key.key()
    if key is None:
        return None
    assert text.startswith("{") and text != "{}", text[:20]
    body = text[1:].encode("utf-8")
    return b"".join((_HEAD, _mac(key, name, body).encode("ascii"), b'",', body))


def _mac(key: bytes, name: str, body: bytes | memoryview) -> str:
    digest = hashlib.blake2b(name.encode("utf-8", "surrogateescape") + b"\0", key=key, digest_size=32)
    digest.update(body)
    return digest.hexdigest()


def is_sealed(name: str, data: bytes) -> bool:
    """Whether `data` is the file `name` as cslint sealed it for this user."""
    if not data.startswith(_HEAD) or data[_BODY - 2:_BODY] != b'",':
        return False
    key = user_key.key()
    if key is None:
        return False
    return hmac.compare_digest(data[len(_HEAD):_BODY - 2], _mac(key, name, memoryview(data)[_BODY:]).encode("ascii"))


def load(path: str | Path, parse: Callable[[Any], T], directory: int | None = None,
         known: tuple[Signature, T] | None = None, limit: int = MAX_BYTES) -> tuple[Signature, T] | None:
    """The sealed file at `path` (relative to the open `directory`, if given), its JSON `parse`d, with its
    signature; `known` itself while the file is still the one it was read from. None when there is no
    such file, it is not a regular file of at most `limit` bytes, its seal is not right, or `parse`
    raises on it (ValueError, TypeError, KeyError, ...: damaged)."""
    try:
        fd = os.open(path, _OPEN, dir_fd=directory)
    except OSError:  # missing, a link (ELOOP), unreadable
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        signature = (info.st_ino, info.st_size, info.st_mtime_ns)
        if known is not None and known[0] == signature:
            return known
        with os.fdopen(os.dup(fd), "rb") as handle:
            data = handle.read(limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > limit or not is_sealed(os.path.basename(path), data):
        return None
    try:
        return signature, parse(bounded_json.loads(data.decode("utf-8")))  # a planted file may nest deep
    except (ValueError, TypeError, AttributeError, KeyError, IndexError):
        return None
