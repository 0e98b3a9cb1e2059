"""The results cache in `.cslint_cache/`: a file's report, reused while nothing it depends on changed.

One JSON file per cslint version and effective configuration (selected rules, target, trace roots,
per-file ignores, ...), so changing either starts from an empty cache. Each entry belongs to one file
and holds its content hash, the modules it imports, the files whose traced code can change what is
inferred in it, a digest of the content hashes of every file its report depended on, and the report
itself. An entry is reused only when all of those hashes still match (see `incremental.py`). A cache
that cannot be read, of whatever kind of damage, is ignored and rewritten; writes go through a
temporary file and a rename.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from cslint import __version__
from cslint.config import Settings

CACHE_DIR_NAME = ".cslint_cache"
FORMAT = 1


@dataclass
class CachedDiagnostic:
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    message: str
    fix: tuple[str, str] | None  # (applicability, message); the edits themselves are not kept
    chain: list[str]
    reason: str
    source_line: str


@dataclass
class Entry:
    hash: str
    mtime_ns: int
    size: int
    module: str
    imports: list[str]
    reach: list[str] = field(default_factory=list)  # files whose traced code can change what it infers
    deps: str = ""  # digest of the paths and content hashes of every file its report depended on
    diagnostics: list[CachedDiagnostic] | None = None  # None: imports known, report not computed
    hints: list[Any] | None = None  # incremental.GroupHints, as JSON

    @classmethod
    def from_json(cls, data: Any) -> Entry:
        """An entry as written by `save`; ValueError for anything else (a damaged or edited cache file)."""
        if not isinstance(data, dict) or not all(_is(data.get(name, _ABSENT), kind) for name, kind in _ENTRY.items()):
            raise ValueError("malformed cache entry")
        entry = cls(**{name: data[name] for name in _ENTRY if name in data})
        if entry.diagnostics is not None:
            entry.diagnostics = [_diagnostic(d) for d in entry.diagnostics]
        return entry


def _diagnostic(data: Any) -> CachedDiagnostic:
    if not isinstance(data, dict) or not all(_is(data.get(name, _ABSENT), kind) for name, kind in _DIAGNOSTIC.items()):
        raise ValueError("malformed cached finding")
    fields_ = {name: data[name] for name in _DIAGNOSTIC}
    return CachedDiagnostic(**{**fields_, "fix": tuple(data["fix"]) if data["fix"] is not None else None})


# The schema of a cache entry: each field's kind ("?" after it: may be absent, for its default).
_ABSENT = object()
_ENTRY = {"hash": "str", "mtime_ns": "int", "size": "int", "module": "str", "imports": "[str]",
          "reach": "[str]?", "deps": "str?", "diagnostics": "[dict]|None?", "hints": "hints|None?"}
_DIAGNOSTIC = {"line": "int", "column": "int", "end_line": "int", "end_column": "int", "code": "str",
               "message": "str", "fix": "pair|None", "chain": "[str]", "reason": "str", "source_line": "str"}


def _is(value: Any, kind: str) -> bool:
    if value is _ABSENT:
        return kind.endswith("?")
    kind = kind.rstrip("?")
    if "|" in kind:
        return any(_is(value, k) for k in kind.split("|"))
    if kind == "None":
        return value is None
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind in ("[str]", "[dict]"):
        item = str if kind == "[str]" else dict
        return isinstance(value, list) and all(isinstance(v, item) for v in value)
    if kind == "pair":  # a fix: (applicability, message)
        return isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)
    if kind == "hints":  # incremental.GroupHints: [roots, torch, base class names]
        return isinstance(value, list) and len(value) == 3 and all(isinstance(v, bool) for v in value[:2]) \
            and _is(value[2], "[str]")
    raise AssertionError(kind)


def settings_key(settings: Settings, codes: list[str]) -> str:
    """A digest of everything in the configuration that changes a report."""
    relevant = {
        "version": __version__, "format": FORMAT, "codes": sorted(codes), "target": settings.target,
        "trace_roots": list(settings.trace_roots), "cerebras_version": settings.cerebras_version,
        "per_file_ignores": {k: list(v) for k, v in sorted(settings.per_file_ignores.items())},
        "unsafe_fixes": settings.unsafe_fixes, "project_root": str(settings.project_root or ""),
        "project_packages": sorted(settings.project_packages) if settings.project_packages is not None else None,
    }
    return hashlib.blake2b(json.dumps(relevant, sort_keys=True).encode(), digest_size=12).hexdigest()


class Cache:
    def __init__(self, directory: Path, key: str) -> None:
        self.directory = directory
        self.path = directory / f"v{__version__}-{key}.json"
        self.entries: dict[str, Entry] = {}
        self._loaded: dict[str, tuple[Entry, dict[str, Any]]] = {}  # entries as read, and their JSON
        self.read_ahead = False  # taken from the server's memory, not read from disk

    def load(self) -> Cache:
        key = os.path.abspath(self.path)
        loaded_paths.append(key)
        signature = _signature(self.path)
        preloaded = _preloaded.get(key)
        if preloaded is not None and signature is not None and preloaded[0] == signature:
            self.entries, self._loaded = dict(preloaded[1]), dict(preloaded[2])
            self.read_ahead = True
            return self
        try:
            self.entries, self._loaded = _read(self.path)
        except FileNotFoundError:
            pass
        except Exception:  # damaged in any way: start again; the next save replaces it
            self.entries, self._loaded = {}, {}
        return self

    def save(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# created by cslint\n*\n", encoding="utf-8")
            payload = {"format": FORMAT, "version": __version__,
                       "files": {path: self._as_json(path, entry) for path, entry in self.entries.items()}}
            text = json.dumps(payload, separators=(",", ":"))  # one call: json.dump encodes piece by piece
            fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temporary, self.path)
        except OSError:
            pass  # a read-only checkout still gets its report; it just is not cached

    def read_only(self) -> Cache:
        """A copy to read from that is never saved: for runs over text that is not on disk (overlay.py)."""
        copy = ReadOnlyCache.__new__(ReadOnlyCache)
        copy.__dict__.update(self.__dict__)
        copy.entries = dict(self.entries)
        return copy

    def _as_json(self, path: str, entry: Entry) -> dict[str, Any]:
        """An entry read from the file is written back as read (a run changes only its file times in
        place; a new report is a new entry): converting thousands of unchanged entries is most of a save."""
        loaded = self._loaded.get(path)
        if loaded is None or loaded[0] is not entry:
            return asdict(entry)
        raw = loaded[1]
        raw["mtime_ns"], raw["size"] = entry.mtime_ns, entry.size
        return raw


class ReadOnlyCache(Cache):
    def save(self) -> None:
        return None


# Cache files read ahead by the server (cslint/server/): a child forked from it reuses one while the
# file on disk is still the one that was read. Writes replace the file, so its inode changes with them.
_preloaded: dict[str, tuple[tuple[int, int, int], dict[str, Entry], dict[str, tuple[Entry, Any]]]] = {}
PRELOADED_LIMIT = 4
PRELOADED_MAX_BYTES = 16_000_000  # a cache file takes some 10x its size in memory once read
loaded_paths: list[str] = []  # absolute paths of what this process loaded: the server's child tells the server


def preload(path: str) -> None:
    signature = _signature(Path(path))
    _preloaded.pop(path, None)
    if signature is None or signature[1] > PRELOADED_MAX_BYTES:
        return
    try:
        entries, loaded = _read(Path(path))
    except Exception:
        return
    _preloaded[path] = (signature, entries, loaded)
    while len(_preloaded) > PRELOADED_LIMIT:
        del _preloaded[next(iter(_preloaded))]


def _read(path: Path) -> tuple[dict[str, Entry], dict[str, tuple[Entry, Any]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("files"), dict):
        return {}, {}
    entries: dict[str, Entry] = {}
    loaded: dict[str, tuple[Entry, Any]] = {}
    for key, raw in data["files"].items():
        try:
            entries[key] = Entry.from_json(raw)
        except ValueError:  # damaged: that file is checked again, and its entry rewritten
            continue
        loaded[key] = (entries[key], raw)
    return entries, loaded


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat.st_ino, stat.st_size, stat.st_mtime_ns


def default_cache_dir(settings: Settings) -> Path:
    configured = os.environ.get("CSLINT_CACHE_DIR")
    if configured:
        return Path(configured)
    # next to the pyproject.toml that configured the run (like ruff), else in the current directory
    return (settings.config_path.parent if settings.config_path else Path.cwd()) / CACHE_DIR_NAME


def clean(directory: Path) -> int:
    """Remove a cache directory's files; returns how many were removed."""
    removed = 0
    if not directory.is_dir():
        return 0
    for item in directory.iterdir():
        if item.is_file():
            item.unlink()
            removed += 1
    directory.rmdir()
    return removed
