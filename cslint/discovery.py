"""Which files to lint: the paths given, directories walked, excluded names skipped."""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from cslint.config import ConfigError, Settings
from cslint.sources import safe_resolve


def _excluded(path: Path, patterns: tuple[str, ...], root: Path | None) -> bool:
    name = path.name
    relative = None
    if root is not None:
        try:
            relative = safe_resolve(path).relative_to(safe_resolve(root)).as_posix()
        except ValueError:
            relative = None
    for pattern in patterns:
        if fnmatch.fnmatch(name, pattern):
            return True
        if relative is not None and (fnmatch.fnmatch(relative, pattern)
                                     or fnmatch.fnmatch(relative, pattern.rstrip("/") + "/*")):
            return True
    return False


def collect_files(paths: list[Path], settings: Settings) -> list[Path]:
    """Python files under `paths`. A missing path is a ConfigError; files named explicitly are kept."""
    patterns = settings.exclude + settings.extend_exclude
    found: list[Path] = []
    seen: set[Path] = set()
    for path in paths:
        if not path.exists() and not path.is_symlink():
            raise ConfigError(f"{path}: no such file or directory")
        if path.is_dir():
            for directory, subdirs, files in os.walk(path, followlinks=False):
                base = Path(directory)
                subdirs[:] = sorted(d for d in subdirs if not _excluded(base / d, patterns, settings.project_root))
                for name in sorted(files):
                    candidate = base / name
                    if not name.endswith((".py", ".pyi")) or _excluded(candidate, patterns, settings.project_root):
                        continue
                    key = safe_resolve(candidate)
                    if key not in seen:
                        seen.add(key)
                        found.append(candidate)
        elif safe_resolve(path) not in seen:
            seen.add(safe_resolve(path))
            found.append(path)
    return found
