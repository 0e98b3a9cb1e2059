"""PyTorch's graph-break registry: each id's type, explanation and hints, as the runtime prints them.

Read from `torch/_dynamo/graph_break_registry.json` of the torch the project's libraries come from (found as
the library index finds modules, without importing torch); when that torch has none, from the trimmed copy
cslint ships (cslint/data/), which holds the ids cslint maps.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import TYPE_CHECKING

from cslint.core.graph_break_ids import GraphBreak

if TYPE_CHECKING:
    from cslint.core.report import Diagnostic

SHIPPED = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "graph_break_registry.json")


@dataclass(frozen=True)
class Registry:
    source: str  # the file read
    torch_version: str
    entries: dict[str, GraphBreak]
    by_type: dict[str, str]  # every gb_type the registry has held for an id (its history too) -> id

    def id_of(self, gb_type: str) -> str | None:
        return self.by_type.get(gb_type)


def installed_registry_path(python: str | None = None) -> tuple[str, str] | None:
    """(registry file, torch version) of the torch the `python` setting's libraries hold, or None."""
    from cslint.analysis.library_env import LibraryPathError, environment_for

    try:
        environment = environment_for(python)
    except LibraryPathError:
        return None
    found = environment.find("torch") if environment is not None else None
    if found is None:
        return None
    path = os.path.join(os.path.dirname(found[0]), "_dynamo", "graph_break_registry.json")
    distribution = environment.distribution("torch") if environment is not None else None
    return (path, distribution[1] if distribution else "") if os.path.isfile(path) else None


def load(python: str | None = None) -> Registry:
    """The installed torch's registry; the shipped copy when torch, or its registry, is absent or unreadable."""
    installed = installed_registry_path(python)
    if installed is not None:
        registry = _read(*installed)
        if registry is not None:
            return registry
    shipped = _read(SHIPPED, "")
    if shipped is None:  # the package itself is broken: say so, never report without ids silently
        raise RuntimeError(f"cslint's graph-break registry {SHIPPED} is unreadable; reinstall cslint")
    return shipped


def with_graph_breaks(diagnostics: list[Diagnostic], python: str | None) -> list[Diagnostic]:
    """The diagnostics, each that is a graph break under dynamo with its registry entry (--target compile)."""
    from cslint.core.graph_break_ids import graph_break_id

    registry: Registry | None = None
    out = []
    for d in diagnostics:
        if d.targets and "compile" not in d.targets:  # a finding of a lazy target's roots breaks no dynamo graph
            out.append(d)
            continue
        gb_id = graph_break_id(d.code, d.message)
        if gb_id is not None:
            registry = registry or load(python)
            d = replace(d, graph_break=registry.entries.get(gb_id) or GraphBreak(gb_id, "", "", ""))
        out.append(d)
    return out


@lru_cache(maxsize=4)
def _read(path: str, torch_version: str) -> Registry | None:
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    version = str(data.pop("torch_version", torch_version) or torch_version)
    entries: dict[str, GraphBreak] = {}
    by_type: dict[str, str] = {}
    for gb_id, history in data.items():
        if not (isinstance(history, list) and history and all(isinstance(e, dict) for e in history)):
            continue
        current = history[0]
        hints = current.get("Hints") or []
        entries[gb_id] = GraphBreak(gb_id, str(current.get("Gb_type", "")), str(current.get("Explanation", "")),
                                    str(hints[0]).strip() if hints else "")
        for entry in history:
            by_type.setdefault(str(entry.get("Gb_type", "")), gb_id)
    return Registry(path, version, entries, by_type)
