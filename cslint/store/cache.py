"""The results cache in `.cslint_cache/`: a file's report, reused while nothing it depends on changed.

One JSON file per cslint version and effective configuration (selected rules, target, trace roots,
per-file ignores, ...), so changing either starts from an empty cache. Each entry belongs to one file
and holds its content hash, the modules it imports, the files whose traced code can change what is
inferred in it, a digest of the content hashes of every file its report depended on, and the report
itself. An entry is reused only when all of those hashes still match (see `incremental.py`). A cache
that cannot be read, of whatever kind of damage, is ignored and rewritten; writes go through a
temporary file and a rename. The file is sealed with this user's key (cslint/store/sealed.py): one that
cslint did not write for this user (a repository's own `.cslint_cache`, force-added and cloned) is
ignored the same way, so an entry saying a file has no findings is believed only from this user's runs.

cslint writes and deletes only its own files, and only in a directory that is its own: a real directory
(not a symbolic link), owned by this user, that cslint created (it holds cslint's `.gitignore`) or found
empty. A repository that ships `.cslint_cache` as a link to `../elsewhere`, or a `--cache-dir` full of
other files, gets a one-line warning and a run without the cache; `cslint clean` refuses it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import sys
from contextlib import suppress
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, overload

from cslint import __version__

from cslint.store import sealed
from cslint.core.config import Settings
from cslint.core.json_shape import ABSENT, matches
from cslint.core.report import Diagnostic
from cslint.support.code_digest import code_digest

CACHE_DIR_NAME = ".cslint_cache"
FORMAT = 5  # 5: a diagnostic keeps its cell, graph break, assumption and targets (core/report.py, Diagnostic.as_json)


@dataclass
class Entry:
    hash: str
    mtime_ns: int
    size: int
    module: str
    imports: list[str]
    reach: list[str] = field(default_factory=list)  # files whose traced code can change what it infers
    deps: str = ""  # digest of the paths and content hashes of every file its report depended on
    # None: imports known, report not computed. Read back with the file's key as their path: the run
    # reports them under the path it was given (incremental.py)
    diagnostics: list[Diagnostic] | None = None
    hints: list[Any] | None = None  # incremental.GroupHints, as JSON
    # the roots it defines that are checked for another target than the run's: [target, function] each
    roots: list[list[str]] = field(default_factory=list)

    @classmethod
    def from_json(cls, data: Any, path: Path) -> Entry:
        """An entry as written by `save` for the file at `path`; ValueError for anything else (a damaged
        or edited cache file)."""
        if not isinstance(data, dict) or \
                not all(matches(data.get(name, ABSENT), kind, _EXTRA) for name, kind in _ENTRY.items()):
            raise ValueError("malformed cache entry")
        entry = cls(**{name: data[name] for name in _ENTRY if name in data})
        if entry.diagnostics is not None:
            entry.diagnostics = [Diagnostic.from_json(path, d) for d in entry.diagnostics]
        return entry

    def as_json(self) -> dict[str, Any]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.diagnostics is not None:
            out["diagnostics"] = [d.as_json() for d in self.diagnostics]
        return out


# The schema of a cache entry: each field's kind ("?" after it: may be absent, for its default).
_ENTRY = {"hash": "str", "mtime_ns": "int", "size": "int", "module": "str", "imports": "[str]",
          "reach": "[str]?", "deps": "str?", "diagnostics": "[dict]|None?", "hints": "hints|None?",
          "roots": "roots?"}


def _hints(value: Any) -> bool:  # incremental.GroupHints: [roots, torch, base class names]
    return isinstance(value, list) and len(value) == 3 and all(isinstance(v, bool) for v in value[:2]) \
        and matches(value[2], "[str]")


def _roots(value: Any) -> bool:  # Entry.roots: [[target, function], ...]
    return isinstance(value, list) and all(matches(v, "[str]*2") for v in value)


_EXTRA = {"hints": _hints, "roots": _roots}


def settings_key(settings: Settings, codes: list[str]) -> str:
    """A digest of everything in the configuration that changes a report."""
    relevant = {
        "version": __version__, "code": code_digest(), "format": FORMAT, "codes": sorted(codes), "target": settings.target,
        "trace_roots": list(settings.trace_roots), "cerebras_version": settings.cerebras_version,
        "per_file_ignores": {k: list(v) for k, v in sorted(settings.per_file_ignores.items())},
        "unsafe_fixes": settings.unsafe_fixes, "project_root": str(settings.project_root or ""),
        "fixable": [list(settings.fixable), list(settings.extend_fixable), list(settings.unfixable)],
        "project_packages": sorted(settings.project_packages) if settings.project_packages is not None else None,
        "dynamo_config": list(settings.dynamo_config), "entry_points": settings.entry_points,
        "include_uncertain": settings.include_uncertain,
        "libraries": _libraries_key(settings),
        # the limits that decide whether a file is analysed at all (max-file-size: in the file's hash)
        "max_file_tokens": settings.max_file_tokens, "analysis_budget": settings.analysis_budget,
    }
    return hashlib.blake2b(json.dumps(relevant, sort_keys=True).encode(), digest_size=12).hexdigest()


def _libraries_key(settings: Settings) -> str:
    """The installed distributions and versions the report may read functions from (analysis/libraries.py):
    installing or upgrading one can change what a traced call does."""
    from cslint.analysis.library_env import LibraryPathError, environment_for

    try:
        environment = environment_for(settings.python)
    except LibraryPathError:
        return "unreadable"
    if environment is None:
        return ""
    root = str(settings.project_root) if settings.project_root else None
    return hashlib.blake2b(environment.digest_text(root).encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


class Cache:
    def __init__(self, directory: Path, key: str) -> None:
        self.directory = directory
        self.path = directory / f"v{__version__}-{key}.json"
        self.entries: dict[str, Entry] = {}
        self._loaded: dict[str, tuple[Entry, dict[str, Any]]] = {}  # entries as read, and their JSON
        self.read_ahead = False  # taken from the server's memory, not read from disk
        self.refused: str | None = None  # why the directory is not cslint's to use

    def load(self) -> Cache:
        try:
            directory = open_cache_directory(self.directory, create=False)
        except CacheDirectoryError as exc:
            self.refused = str(exc)
            print(f"cslint: warning: not using the cache: {exc}", file=sys.stderr)
            return self
        except OSError:
            return self  # cannot be opened: nothing to read; saving will say whether it can be written
        if directory is None:
            return self
        key = os.path.abspath(self.path)
        loaded_paths.append(key)
        preloaded = _preloaded.get(key)
        try:
            found = sealed.load(self.path.name, _parse, directory, preloaded)
        except Exception:  # damaged in any way: start again; the next save replaces it
            found = None
        finally:
            os.close(directory)
        if found is not None:
            self.entries, self._loaded = found[1]
            self.read_ahead = found is preloaded
            if self.read_ahead:  # the server's copy is shared: this run's changes go to its own
                self.entries, self._loaded = dict(self.entries), dict(self._loaded)
        return self

    def save(self) -> None:
        if self.refused:
            return
        try:
            directory = open_cache_directory(self.directory, create=True)
        except OSError:
            return  # a read-only checkout still gets its report; it just is not cached
        try:
            payload = {"format": FORMAT, "version": __version__,
                       "files": {path: self._as_json(path, entry) for path, entry in self.entries.items()}}
            text = json.dumps(payload, separators=(",", ":"))  # one call: json.dump encodes piece by piece
            data = sealed.seal(self.path.name, text)
            if data is not None:  # without this user's key nothing written could be believed
                write_new(directory, self.path.name, data)
                prune_reports(directory, self.path.name)
        except OSError:
            pass
        finally:
            os.close(directory)

    def read_only(self) -> Cache:
        """A copy to read from that is never saved: for runs over text that is not on disk (engine/overlay.py)."""
        copy = ReadOnlyCache.__new__(ReadOnlyCache)
        copy.__dict__.update(self.__dict__)
        copy.entries = dict(self.entries)
        return copy

    def _as_json(self, path: str, entry: Entry) -> dict[str, Any]:
        """An entry read from the file is written back as read (a run changes only its file times in
        place; a new report is a new entry): converting thousands of unchanged entries is most of a save."""
        loaded = self._loaded.get(path)
        if loaded is None or loaded[0] is not entry:
            return entry.as_json()
        raw = loaded[1]
        raw["mtime_ns"], raw["size"] = entry.mtime_ns, entry.size
        return raw


class ReadOnlyCache(Cache):
    def save(self) -> None:
        return None


# Cache files read ahead by the server (cslint/server/): a child forked from it reuses one while the
# file on disk is still the one that was read. Writes replace the file, so its inode changes with them.
Parsed = tuple[dict[str, Entry], dict[str, tuple[Entry, Any]]]
_preloaded: dict[str, tuple[sealed.Signature, Parsed]] = {}
PRELOADED_LIMIT = 4
PRELOADED_MAX_BYTES = 16_000_000  # a cache file takes several times its size in memory once read
loaded_paths: list[str] = []  # absolute paths of what this process loaded: the server's child tells the server


def preload(path: str) -> None:
    _preloaded.pop(path, None)
    try:
        found = sealed.load(path, _parse, limit=PRELOADED_MAX_BYTES)
    except Exception:
        return
    if found is None:
        return
    _preloaded[path] = found
    while len(_preloaded) > PRELOADED_LIMIT:
        del _preloaded[next(iter(_preloaded))]


def _parse(data: Any) -> Parsed:
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), dict):
        return {}, {}
    entries: dict[str, Entry] = {}
    loaded: dict[str, tuple[Entry, Any]] = {}
    for key, raw in data["files"].items():
        try:
            entries[key] = Entry.from_json(raw, Path(key))
        except ValueError:  # damaged: that file is checked again, and its entry rewritten
            continue
        loaded[key] = (entries[key], raw)
    return entries, loaded


def default_cache_dir(settings: Settings) -> Path:
    configured = os.environ.get("CSLINT_CACHE_DIR")
    if configured:
        return Path(configured)
    # next to the pyproject.toml that configured the run (like ruff), else in the current directory
    return (settings.config_path.parent if settings.config_path else Path.cwd()) / CACHE_DIR_NAME


class CacheDirectoryError(OSError):
    """A cache directory that is not cslint's to write to or delete from; the message says why."""


MARKER_NAME = ".gitignore"
MARKER = "# created by cslint\n*\n"  # written first into a cache directory cslint creates
# `Cache.path`'s name, a report cache: a version has no hyphen, so a library's summaries
# (`v<cslint>-lib-<name>-<version>.json`, whose version may be hex digits alone) never match
_REPORT_NAME = r"v[\w.+!]+-[0-9a-f]+\.json"
_CACHE_FILE = re.compile(_REPORT_NAME + r"|v[\w.+!-]+-(?:(?:imports|tree)\.memo|lib-[\w.+!-]+\.json)"
                         r"|\.tmp-[\w-]+\.json")
NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
NO_BLOCK = getattr(os, "O_NONBLOCK", 0)


@overload
def open_cache_directory(directory: Path, create: Literal[True]) -> int: ...


@overload
def open_cache_directory(directory: Path, create: bool) -> int | None: ...


def open_cache_directory(directory: Path, create: bool) -> int | None:
    """A descriptor of `directory` once it is known to be cslint's own (see the module's docstring);
    None when it does not exist and `create` is false. Everything in it is then reached through the
    descriptor, so a directory swapped for a link afterwards is not followed."""
    if create:
        directory.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | NO_FOLLOW)
    except FileNotFoundError:
        if create:
            raise
        return None
    except OSError as exc:
        if os.path.islink(directory):
            raise CacheDirectoryError(f"{directory} is a symbolic link; cslint keeps its cache only in a "
                                      "directory it created") from None
        raise CacheDirectoryError(f"{directory} is not a directory ({exc.strerror})") from None
    try:
        found = os.fstat(fd)
        if found.st_uid != os.geteuid():
            raise CacheDirectoryError(f"{directory} is owned by another user")
        if _read_marker(fd) != MARKER:
            if os.listdir(fd):
                raise CacheDirectoryError(f"{directory} has other files; cslint keeps its cache only in a "
                                          "directory it created (choose a new or empty one)")
            if create:  # an empty directory becomes cslint's
                write_new(fd, MARKER_NAME, MARKER)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_marker(directory: int) -> str | None:
    try:
        fd = os.open(MARKER_NAME, os.O_RDONLY | NO_FOLLOW | NO_BLOCK, dir_fd=directory)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO named .gitignore would never answer
            return None
        return handle.read(len(MARKER) + 1).decode("utf-8", "replace")


def write_new(directory: int, name: str, content: str | bytes) -> None:
    """Write `name` in the directory whole: a new temporary file (never an existing one, nor through a
    link), renamed over `name`."""
    temporary = f".tmp-{os.urandom(8).hex()}.json"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NO_FOLLOW, 0o644, dir_fd=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content.encode("utf-8") if isinstance(content, str) else content)
        os.replace(temporary, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary, dir_fd=directory)
        raise


REPORTS_KEPT = 8  # report caches kept in a directory: one per cslint build and configuration in use
_REPORT_FILE = re.compile(_REPORT_NAME)


def prune_reports(directory: int, written: str) -> None:
    """Remove all but the `REPORTS_KEPT` most recently written report caches (`written` among them): each
    cslint build and each configuration writes its own, and the others would stay forever. A run that
    still wanted one removed starts from an empty cache, as after `cslint clean`."""
    found = []
    with os.scandir(directory) as entries:
        for entry in entries:
            if entry.name != written and _REPORT_FILE.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                with suppress(OSError):
                    found.append((entry.stat(follow_symlinks=False).st_mtime_ns, entry.name))
    for _, name in sorted(found, reverse=True)[REPORTS_KEPT - 1:]:
        with suppress(OSError):
            os.unlink(name, dir_fd=directory)


def clean(directory: Path) -> int:
    """Remove cslint's files from its cache directory, and the directory once nothing else is in it;
    returns how many files were removed. Raises CacheDirectoryError for a directory that is not cslint's."""
    fd = open_cache_directory(directory, create=False)
    if fd is None:
        return 0
    try:
        removed = 0
        for name in os.listdir(fd):
            if _CACHE_FILE.fullmatch(name):
                os.unlink(name, dir_fd=fd)
                removed += 1
        if os.listdir(fd) == [MARKER_NAME]:  # nothing of anyone else's is left
            os.unlink(MARKER_NAME, dir_fd=fd)
            os.rmdir(directory)
            removed += 1
    finally:
        os.close(fd)
    return removed
