"""Which files to lint: the paths given, directories walked, excluded names skipped."""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable
from pathlib import Path

from cslint.config import ConfigError, Settings
from cslint.sources import safe_resolve

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")  # notebooks too, as ruff does by default


def _any_of(patterns: Iterable[str]) -> re.Pattern[str] | None:
    translated = [f"(?:{fnmatch.translate(p)})" for p in patterns]
    return re.compile("|".join(translated)) if translated else None


class Excluder:
    """Whether a path is excluded: its name, or its path relative to the project root, matches a pattern
    (a directory pattern also excludes everything below it). Patterns are compiled once, and real paths
    are derived from the walked directory's, so walking a large tree resolves no file one by one."""

    def __init__(self, patterns: tuple[str, ...], root: Path | None) -> None:
        self.names = _any_of(patterns)
        self.relatives = _any_of([*patterns, *(p.rstrip("/") + "/*" for p in patterns)])
        self.root = str(safe_resolve(root)) + os.sep if root is not None else None

    def __call__(self, name: str, real: str) -> bool:
        if self.names is None:
            return False
        if self.names.match(name):
            return True
        if self.root is None or not real.startswith(self.root):
            return False
        relative = real[len(self.root):].replace(os.sep, "/")
        return self.relatives.match(relative) is not None  # type: ignore[union-attr]


def collect_files(paths: list[Path], settings: Settings) -> list[Path]:
    """Python files under `paths`. A missing path is a ConfigError; files named explicitly are kept."""
    excluded = Excluder(settings.exclude + settings.extend_exclude, settings.project_root)
    found: list[Path] = []
    seen: set[str] = set()
    for path in paths:
        if not path.exists() and not path.is_symlink():
            raise ConfigError(f"{path}: no such file or directory")
        if path.is_dir():
            _walk(str(path), str(safe_resolve(path)), excluded, seen, found)
        else:
            key = str(safe_resolve(path))
            if key not in seen:
                seen.add(key)
                found.append(path)
    return found


def _walk(directory: str, real: str, excluded: Excluder, seen: set[str], found: list[Path]) -> None:
    """Depth first in name order, like sorted `os.walk`; symbolic links to directories are not followed."""
    try:
        with os.scandir(directory) as listing:
            entries = sorted(listing, key=lambda e: e.name)
    except OSError:
        return
    subdirs = []
    for entry in entries:
        name = entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
        except OSError:
            continue
        entry_real = os.path.join(real, name)
        if is_dir:
            if not excluded(name, entry_real):
                subdirs.append((entry.path, entry_real))
            continue
        if not name.endswith(PYTHON_SUFFIXES):
            continue
        if entry.is_symlink():
            entry_real = str(safe_resolve(Path(entry.path)))
        if excluded(name, entry_real) or entry_real in seen:
            continue
        seen.add(entry_real)
        found.append(Path(entry.path))
    for sub, sub_real in subdirs:
        _walk(sub, sub_real, excluded, seen, found)
