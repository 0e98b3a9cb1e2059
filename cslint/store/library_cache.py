"""Summaries of installed libraries' functions (analysis/libraries.py), kept in the cache directory.

One file per distribution and version (`v<cslint>-lib-<name>-<version>.json`): upgrading a library starts
its summaries afresh, and a summary that used another distribution's code records which version it read
(the analysis checks it is still the one installed). Files are kept as cslint/store/memo_file.py keeps memos
beside the cache; one that cannot be read is an empty one.
"""

from __future__ import annotations

import hashlib
import re
from functools import partial
from pathlib import Path
from typing import Any

from cslint import __version__

from cslint.store import memo_file
from cslint.analysis.kinds import BOOL_TENSOR, DYN_TENSOR, HOST, MODULE, STATIC, TENSOR, UNKNOWN, Kind, Tag
from cslint.analysis.call_depth import Reach
from cslint.analysis.library_env import Effect, Summary
from cslint.core.rule_table import BUILTINS, FUNCTIONS, IN_LIBRARIES, TENSOR_METHODS
from cslint.support.code_digest import code_digest

# 11: a tuple's known positions may be a prefix (Kind.prefix), a tensor may be marked as made on the CPU;
# 10: summaries record calls of functions the rule table names (`torch.fft.rfft`: WSC602), and the constructor
# an object built in traced code runs; 9: kinds carry constants and an instance's constructor-decided attributes
# (analysis/constructed.py);
# 8: an effect of a call is its code, and which calls a summary records is the rule table's, whose digest is part
# of the format: a summary made under another table is made again (cslint/core/rule_table.py);
# 7: `complex(t)` is a conversion, as WSC203 says; 6: summaries follow the Nones a call
# passes (none_arguments.py); 5: kinds say when a tensor is a mask (bool dtype); 4: a summary says how deep it
# went and what it asked (call_depth.py); 3: HOST_LIST returns


def format_for(tensor_methods: dict[str, str], builtins: dict[str, str], in_libraries: frozenset[str],
               functions: dict[str, str] | None = None) -> str:
    table = repr((sorted(tensor_methods.items()), sorted(builtins.items()), sorted(in_libraries),
                  sorted((functions or {}).items())))
    return "11-" + hashlib.blake2b(table.encode(), digest_size=6).hexdigest()


# the cslint that made the summaries, too: every build calls itself the same version (support/code_digest.py)
FORMAT = f"{format_for(TENSOR_METHODS, BUILTINS, IN_LIBRARIES, FUNCTIONS)}-{code_digest()}"


_active: LibraryCache | None = None


def active() -> LibraryCache | None:
    """The store of the run in progress (set by the command line when the cache is used)."""
    return _active


def use(store: LibraryCache | None) -> None:
    global _active
    _active = store


class LibraryCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self._files: dict[tuple[str, str], dict[str, Any]] = {}
        self._changed: set[tuple[str, str]] = set()

    def file_name(self, distribution: tuple[str, str]) -> str:
        name, version = (re.sub(r"[^\w.+!-]", "_", part) for part in distribution)
        return f"v{__version__}-lib-{name}-{version}.json"

    def _entries(self, distribution: tuple[str, str]) -> dict[str, Any]:
        entries = self._files.get(distribution)
        if entries is None:
            entries = self._files[distribution] = self._read(distribution)
        return entries

    def _read(self, distribution: tuple[str, str]) -> dict[str, Any]:
        return dict(memo_file.read(self.directory, self.file_name(distribution), _summaries) or {})

    def get(self, distribution: tuple[str, str], key: str) -> Summary | None:
        raw = self._entries(distribution).get(key)
        if raw is None:
            return None
        try:
            return _summary(raw)
        except (KeyError, TypeError, ValueError):  # damaged: worked out again, and rewritten
            return None

    def put(self, distribution: tuple[str, str], key: str, summary: Summary) -> None:
        self._entries(distribution)[key] = _summary_json(summary)
        self._changed.add(distribution)

    def save(self) -> None:
        """Writes the distributions with new summaries, with what other processes (the workers of a
        `-j` run) wrote there since this one read it."""
        for distribution in sorted(self._changed):
            ours = self._files[distribution]
            memo_file.update(self.directory, self.file_name(distribution), _summaries, partial(_merged, ours))
        self._changed.clear()


def _summaries(data: Any) -> dict[str, Any]:
    if isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("summaries"), dict):
        summaries: dict[str, Any] = data["summaries"]
        return summaries
    return {}


def _merged(ours: dict[str, Any], theirs: dict[str, Any] | None) -> dict[str, Any]:
    """The file's data with these summaries added to those other processes wrote."""
    return {"format": FORMAT, "summaries": {**(theirs or {}), **ours}}


def _kind_json(kind: Kind) -> Any:
    out: dict[str, Any] = {"t": int(kind.tag)}
    if kind.dynamic_shape:
        out["d"] = True
    if kind.role:
        out["r"] = kind.role
    if kind.cls:
        out["c"] = kind.cls
    if kind.elem is not None:
        out["e"] = _kind_json(kind.elem)
    if kind.items is not None:
        out["i"] = [_kind_json(k) for k in kind.items]
    if kind.prefix:
        out["p"] = True
    if kind.rank is not None:
        out["n"] = kind.rank
    if kind.boolean:
        out["b"] = True
    if kind.value is not None:
        out["v"] = kind.value
    if kind.attrs:
        out["a"] = [[name, _kind_json(attr)] for name, attr in kind.attrs]
    if kind.on_cpu:
        out["h"] = True
    return out


_COMMON = {kind: kind for kind in (STATIC, UNKNOWN, HOST, TENSOR, DYN_TENSOR, BOOL_TENSOR, MODULE)}


def _kind(raw: Any) -> Kind:
    kind = Kind(Tag(raw["t"]), dynamic_shape=bool(raw.get("d", False)), role=str(raw.get("r", "")),
                cls=str(raw.get("c", "")), elem=_kind(raw["e"]) if "e" in raw else None,
                items=tuple(_kind(k) for k in raw["i"]) if "i" in raw else None, prefix=bool(raw.get("p", False)),
                rank=int(raw["n"]) if "n" in raw else None, boolean=bool(raw.get("b", False)),
                value=_constant(raw["v"]) if "v" in raw else None,
                attrs=tuple((str(name), _kind(attr)) for name, attr in raw["a"]) if "a" in raw else (),
                on_cpu=bool(raw.get("h", False)))
    return _COMMON.get(kind, kind)


def _constant(raw: Any) -> bool | int | float | str:
    if not isinstance(raw, (bool, int, float, str)):
        raise ValueError(raw)
    return raw


def _summary_json(summary: Summary) -> Any:
    assert summary.reach is not None
    return {"returns": _kind_json(summary.returns), "uses": list(summary.uses),
            "effects": [[e.what, e.text, list(e.via), e.path, e.line] for e in summary.effects],
            "possible": [[e.what, e.text, list(e.via), e.path, e.line] for e in summary.possible],
            "height": summary.reach.height, "asked": sorted(map(str, summary.reach.asked))}


def _summary(raw: Any) -> Summary:
    reach = Reach(int(raw["height"]), frozenset(map(str, raw["asked"]))) if "height" in raw else None
    return Summary(_kind(raw["returns"]), _effects(raw["effects"]), tuple(map(str, raw["uses"])), reach,
                   _effects(raw.get("possible", [])))


def _effects(raw: Any) -> tuple[Effect, ...]:
    return tuple(Effect(str(what), str(text), tuple(map(str, via)), str(path), int(line))
                 for what, text, via, path, line in raw)
