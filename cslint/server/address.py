"""Where the server listens. The socket's name is a digest of what decides how a run behaves: cslint's
source files (their sizes and mtimes), the Python executable and version, and libcst's location."""

from __future__ import annotations

import os
import sys
try:
    from _blake2 import blake2b  # hashlib would also load OpenSSL: a few ms of every run
except ImportError:  # pragma: no cover - Pythons built without it
    from hashlib import blake2b

# os.path, not pathlib: this runs before every `check --server`, and pathlib costs more to import than
# the rest of the client together
PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def code_fingerprint(package: str = PACKAGE) -> str:
    parts = [sys.executable, sys.version]
    for directory, _, names in sorted(os.walk(package)):
        for name in sorted(names):
            if name.endswith(".py"):
                stat = os.stat(os.path.join(directory, name))
                parts.append(f"{directory}/{name}:{stat.st_size}:{stat.st_mtime_ns}")
    for entry in sys.path:
        marker = os.path.join(entry or ".", "libcst", "__init__.py")
        if os.path.exists(marker):
            parts.append(f"{marker}:{os.stat(marker).st_mtime_ns}")
            break
    return blake2b("\n".join(parts).encode("utf-8", "surrogateescape"), digest_size=8).hexdigest()


def server_directory() -> str:
    """A directory only this user can enter: sockets in it cannot be reached by other users."""
    base = os.environ.get("CSLINT_SERVER_DIR") or os.environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return os.path.join(base, f"cslint-{os.getuid()}")


def socket_path(fingerprint: str | None = None) -> str:
    return os.path.join(server_directory(), f"{fingerprint or code_fingerprint()}.sock")


def private_directory(directory: str) -> bool:
    """Create the directory (mode 700) if needed; whether it is ours and closed to others."""
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        stat = os.lstat(directory)
    except OSError:
        return False
    return stat.st_uid == os.getuid() and not stat.st_mode & 0o077 and os.path.isdir(directory) \
        and not os.path.islink(directory)
