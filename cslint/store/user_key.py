"""This user's secret key, which seals cslint's files in its cache directories (cslint/store/sealed.py).

The key is what a repository cannot ship: it lives outside every working tree, in the user's own cache
home (`$XDG_CACHE_HOME/cslint/cache-key`, else `~/.cache/cslint/cache-key`; `CSLINT_KEY_FILE` names
another file), and is the same for every project of the user, so a cache moved between the user's own
checkouts stays usable while one made elsewhere never is.

It is made on first use: random bytes in a new file of mode 600, linked into place whole (the first
process to link one wins; the others read it). A key file is believed only when it is a regular file (not
a link), owned by this user, closed to everyone else, of the key's size: anything else there is replaced
by a new key (the caches sealed with the old one are then recomputed). Where no key can be kept (no
home, a read-only one), the run says so once and goes on without a cache.
"""

from __future__ import annotations

import os
import stat
import sys
from contextlib import suppress
from pathlib import Path

KEY_BYTES = 32
_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)

_keys: dict[str, bytes | None] = {}  # by key file: read once per process


def key_path() -> Path:
    configured = os.environ.get("CSLINT_KEY_FILE")
    if configured:
        return Path(configured)
    home = os.environ.get("XDG_CACHE_HOME")
    base = Path(home) if home and os.path.isabs(home) else Path.home() / ".cache"
    return base / "cslint" / "cache-key"


def key() -> bytes | None:
    """This user's key, read or made; None (after a one-line warning) when none can be kept."""
    path = key_path()
    if str(path) in _keys:
        return _keys[str(path)]
    try:
        found = _read(path)
        if found is None:
            _make(path)
            found = _read(path)
        if found is None:
            raise OSError(0, "not a private file of this user")
    except OSError as exc:
        reason = exc.strerror or str(exc)
        print(f"cslint: warning: not using the cache: cannot keep its key in {path} ({reason})", file=sys.stderr)
        found = None
    _keys[str(path)] = found
    return found


def _read(path: Path) -> bytes | None:
    """The key in `path`; None when it is missing or not to be believed (the caller makes a new one)."""
    try:
        fd = os.open(path, _FLAGS)
    except FileNotFoundError:
        return None
    except OSError:
        if not os.path.islink(path) and not os.path.exists(path):
            raise
        return None  # a link (O_NOFOLLOW): replaced
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077 \
                or info.st_size != KEY_BYTES:
            return None
        data = os.read(fd, KEY_BYTES + 1)
    finally:
        os.close(fd)
    return data if len(data) == KEY_BYTES else None


def _make(path: Path) -> None:
    """A new key at `path`, replacing whatever is there that `_read` did not believe."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        try:
            os.write(fd, os.urandom(KEY_BYTES))
        finally:
            os.close(fd)
        try:
            os.link(temporary, path)  # never over a key another process just made
        except FileExistsError:
            if _read(path) is None:
                os.replace(temporary, path)
        except OSError:  # a file system without hard links
            os.replace(temporary, path)
    finally:
        with suppress(OSError):
            os.unlink(temporary)
