"""Which files to lint: the paths given, directories walked, excluded names skipped."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import stat
from dataclasses import dataclass
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING

from cslint.core.file_times import settled
from cslint.core.config import ConfigError, Settings
from cslint.core.sources import TEMP_SUFFIX, file_kind, remove_stale_temp_files, safe_resolve

if TYPE_CHECKING:
    from cslint.store.tree_memo import Listings, TreeMemo

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")  # notebooks too, as ruff does by default


@lru_cache(maxsize=16)
def _any_of(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    """One expression for the glob patterns (kept: a hook server compiles the default ones once)."""
    translated = [f"(?:{fnmatch.translate(p)})" for p in patterns]
    return re.compile("|".join(translated)) if translated else None


class Excluder:
    """Whether a path is excluded: its name, or its path relative to the project root, matches a pattern
    (a directory pattern also excludes everything below it). Patterns are compiled once, and real paths
    are derived from the walked directory's, so walking a large tree resolves no file one by one."""

    def __init__(self, patterns: tuple[str, ...], root: Path | None) -> None:
        self.patterns = list(patterns)
        self.names = _any_of(tuple(patterns))
        self.relatives = _any_of((*patterns, *(p.rstrip("/") + "/*" for p in patterns)))
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


PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", ".git")


def find_project_root(path: Path) -> Path | None:
    """The project a path belongs to: the nearest directory at or above it holding pyproject.toml,
    setup.cfg or .git; None when there is none (then only the files named are analysed: walking, say,
    a home directory or /tmp for context would read anything there)."""
    directory = _directory_of(path)
    for candidate in (directory, *directory.parents):
        if any(os.path.lexists(candidate / marker) for marker in PROJECT_MARKERS):
            return candidate
    return None


def _directory_of(path: Path) -> Path:
    """The path itself when it is a directory, else the directory holding it."""
    start = safe_resolve(path)
    try:
        return start if start.is_dir() else start.parent
    except OSError:  # inside a directory we may not search: the path's own error is reported when it is read
        return start.parent


def project_roots(paths: list[Path]) -> list[Path]:
    """The projects of the paths named, each once, in the order first named."""
    return list(dict.fromkeys(root for root in map(find_project_root, paths) if root is not None))


def import_roots(paths: list[Path]) -> list[Path]:
    """Where imports resolve from (as `sys.path` entries, with their `src/`): each path's project root;
    for a path in no project, the working directory when the path is inside it, else its directory."""
    cwd = safe_resolve(Path.cwd())
    roots = []
    for path in paths:
        root = find_project_root(path)
        if root is None:
            directory = _directory_of(path)
            root = cwd if directory == cwd or cwd in directory.parents else directory
        roots.append(root)
    return list(dict.fromkeys(roots))


def force_excluded(path: Path, settings: Settings) -> bool:
    """Whether `exclude`/`extend-exclude` exclude a path named on the command line (pre-commit names
    every staged file): the path itself or a directory above it, up to the project root."""
    excluded = Excluder(settings.exclude + settings.extend_exclude, settings.project_root)
    real = safe_resolve(path)
    root = safe_resolve(settings.project_root) if settings.project_root else None
    for candidate in (real, *real.parents):
        if root is not None and (candidate == root or root not in candidate.parents):
            break
        if excluded(candidate.name, str(candidate)):
            return True
    return False


@dataclass(frozen=True)
class Skipped:
    """A path not linted, and why. Paths named on the command line are errors; found in a walk, warnings."""

    path: str
    reason: str
    named: bool

    def __str__(self) -> str:
        return f"{self.path}: {self.reason}"


def collect_files(paths: list[Path], settings: Settings, skipped: list[Skipped] | None = None,
                  memo: TreeMemo | None = None) -> list[Path]:
    """Python files under `paths`. A missing path is a ConfigError; files named explicitly are kept.
    Paths that cannot be linted (not regular files, directories that cannot be read or searched) are
    left out and recorded in `skipped`. With a `memo`, the walk of a single directory is reused while its
    directories' listings are unchanged (cslint/store/tree_memo.py)."""
    excluded = Excluder(settings.exclude + settings.extend_exclude, settings.project_root)
    found: list[Path] = []
    seen: set[str] = set()
    notes: list[Skipped] = skipped if skipped is not None else []
    for path in paths:
        try:
            info = os.stat(path)
        except PermissionError:
            notes.append(Skipped(str(path), "permission denied (a directory on its path cannot be searched)", True))
            continue
        except OSError:  # missing, or a symbolic link that leads nowhere (reported when read)
            if not path.is_symlink():
                raise ConfigError(f"{path}: no such file or directory") from None
            info = None
        if info is not None and stat.S_ISDIR(info.st_mode):
            real = str(safe_resolve(path))
            if memo is not None and len(paths) == 1:
                key = json.dumps([str(path), os.getcwd(), real, excluded.patterns, excluded.root])
                found.extend(memo.walk(key, partial(_listed_walk, str(path), real, excluded, notes)))
            else:
                _walk(str(path), real, excluded, seen, found, notes)
        elif info is not None and not stat.S_ISREG(info.st_mode):
            notes.append(Skipped(str(path), f"{file_kind(info.st_mode)}, not a Python file: not read", True))
        else:
            key = os.path.abspath(path)
            if key not in seen:
                seen.add(key)
                found.append(path)
    return found


def _listed_walk(top: str, top_real: str, excluded: Excluder,
                 skipped: list[Skipped]) -> tuple[list[Path], Listings | None]:
    """The files of a walk, and the listings it depended on when it can be reused (see tree_memo)."""
    found: list[Path] = []
    listings: Listings = {}
    noted = len(skipped)
    reusable = _walk(top, top_real, excluded, set(), found, skipped, listings)
    return found, listings if reusable and len(skipped) == noted else None


def _walk(top: str, top_real: str, excluded: Excluder, seen: set[str], found: list[Path],
          skipped: list[Skipped], listings: Listings | None = None) -> bool:
    """Depth first in name order, like sorted `os.walk`; symbolic links to directories are not followed.
    A stack, not recursion: a tree thousands of directories deep is walked like any other. `listings`
    records each directory's modification time before it is listed; the result says whether the walk
    depended on its listings only (no link met, no temporary file removed, every time settled)."""
    reusable = True
    pending = [(top, top_real)]
    while pending:
        directory, real = pending.pop()
        if listings is not None:
            try:
                info = os.lstat(directory)
                listings[directory] = info.st_mtime_ns
                reusable = reusable and settled(info)
            except OSError:
                reusable = False
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(directory, f"cannot read directory: {exc.strerror or exc}; its files are not "
                                              "linted", directory == top))
            continue
        if directory != top and any(entry.name == "pyvenv.cfg" for entry in entries):
            continue  # a virtual environment (installed packages, not the project's code), whatever `exclude` says
        subdirs = []
        temp_names = []
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            entry_real = os.path.join(real, name)
            if listings is not None and entry.is_symlink():
                reusable = False
            if is_dir:
                if not excluded(name, entry_real):
                    subdirs.append((entry.path, entry_real))
                continue
            if name.endswith(TEMP_SUFFIX):
                temp_names.append(name)
                continue
            if not name.endswith(PYTHON_SUFFIXES):
                continue
            if entry.is_symlink():
                entry_real = str(safe_resolve(Path(entry.path)))
            if excluded(name, entry_real) or entry.path in seen:
                continue
            kind = _not_regular(entry)
            if kind is not None:
                skipped.append(Skipped(entry.path, f"{kind}, not a Python file: not read", False))
                continue
            seen.add(entry.path)
            found.append(Path(entry.path))
        if temp_names:
            remove_stale_temp_files(directory, temp_names)
            reusable = False
        pending.extend(reversed(subdirs))
    return reusable


def _not_regular(entry: os.DirEntry[str]) -> str | None:
    """What the entry is when it is not a regular file (following a symbolic link); None for a regular
    file, or a link that leads nowhere (an error when it is read)."""
    try:
        if entry.is_file():
            return None
        mode = entry.stat().st_mode
    except OSError:
        return None
    return file_kind(mode)
