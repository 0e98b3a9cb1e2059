"""Each runtime event next to the static findings at its line in the project.

An event's site is the innermost frame of its stack in a file checked (a log from another machine or checkout
names the file by a path that ends with the checked file's path). A frame in torch or a library is passed
over: a break inside `optimizer.step()` is at the user's `optimizer.step()` line. The functions that hold an
event's frames are what the log covers: a static finding there that no event confirms is one the run did not
see.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from cslint.core.report import Diagnostic
from cslint.runtime_logs.events import Frame, RuntimeEvent


@dataclass
class Matched:
    event: RuntimeEvent
    site: tuple[Path, int] | None  # the checked file and line; None when no frame is in a checked file
    static: list[Diagnostic] = field(default_factory=list)  # findings at the site (or of the counter's family)
    count: int = 1  # the same event repeated (dynamo logs a break again per compile of the frame)
    sources: list[str] = field(default_factory=list)  # the logs that reported it


@dataclass
class LogReport:
    matched: list[Matched]
    unseen: list[Diagnostic]  # static findings in functions the log covers that no event confirms
    fixed: int = 0  # with --fix: how many confirmed findings were fixed

    @property
    def confirmed(self) -> list[Diagnostic]:
        return [d for m in self.matched if m.site is not None for d in m.static]


class Files:
    """The checked files, found by the paths a log names: the same file, or, for a path that is no file here
    (a log from another machine or checkout), one whose path ends the same way over at least three parts, or
    over the whole path the file was checked under (`model.py` checked in the current directory)."""

    def __init__(self, files: list[Path]) -> None:
        self.by_real = {os.path.realpath(f): f for f in files}
        self.parts = [(_parts(os.path.realpath(f)), len(_parts(str(f))) if not f.is_absolute() else 3, f)
                      for f in files]

    def find(self, path: str) -> Path | None:
        found = self.by_real.get(os.path.realpath(path))
        if found is not None or os.path.exists(path):  # a file here that is not one checked (a library's)
            return found
        logged = _parts(path)
        best: tuple[int, Path] | None = None
        for parts, needed, file in self.parts:
            common = 0
            while common < min(len(parts), len(logged)) and parts[-1 - common] == logged[-1 - common]:
                common += 1
            if common >= min(needed, 3) and (best is None or common > best[0]):
                best = (common, file)
        return best[1] if best else None


def _parts(path: str) -> tuple[str, ...]:
    return tuple(p for p in path.replace("\\", "/").split("/") if p not in ("", ".", ".."))


def match(events: list[RuntimeEvent], diagnostics: list[Diagnostic], files: list[Path]) -> LogReport:
    checked = Files(files)
    at_line: dict[tuple[str, int], list[Diagnostic]] = {}
    for d in diagnostics:
        if d.cell is None:
            at_line.setdefault((os.path.realpath(d.path), d.line), []).append(d)
    matched: dict[tuple[object, ...], Matched] = {}
    by_frame: dict[tuple[str, int, str], Matched] = {}  # every frame of every event, to find a repeat's first
    covered: set[tuple[str, int, int]] = set()
    for event in events:
        site = _site(event.frames, checked)
        for frame in event.frames:
            file = checked.find(frame.path)
            if file is not None:
                covered.update(_function_at(file, frame.line))
        # a guard fails with a new value at each recompile (`calls == 1`, `calls == 2`): one event per line
        summary = "" if event.kind == "recompile" and site is not None else event.summary
        key = (event.kind, summary, event.graph_break, event.code, site or event.frames[-1:])
        # dynamo logs a repeat of a break without its user stack, at the innermost frame (torch's own line)
        earlier = matched.get(key) or (by_frame.get((event.frames[-1].path, event.frames[-1].line, event.summary))
                                       if site is None and len(event.frames) == 1 else None)
        if earlier is not None:
            earlier.count += 1
            if event.source not in earlier.sources:
                earlier.sources.append(event.source)
            continue
        if site is not None:
            static = at_line.get((os.path.realpath(site[0]), site[1]), [])
        else:
            family = event.extra.get("family", "") if event.kind == "counter" else ""
            static = [d for d in diagnostics if family and d.code.startswith(family)]
        matched[key] = Matched(event, site, list(static), sources=[event.source])
        for frame in event.frames:
            by_frame.setdefault((frame.path, frame.line, event.summary), matched[key])
    confirmed = {id(d) for m in matched.values() if m.site is not None for d in m.static}
    unseen = [d for d in diagnostics if id(d) not in confirmed and d.cell is None and any(
        real == os.path.realpath(d.path) and first <= d.line <= last for real, first, last in covered)]
    return LogReport(list(matched.values()), unseen)


def _site(frames: tuple[Frame, ...], checked: Files) -> tuple[Path, int] | None:
    for frame in reversed(frames):
        file = checked.find(frame.path)
        if file is not None:
            return file, frame.line
    return None


def _function_at(file: Path, line: int) -> list[tuple[str, int, int]]:
    """The innermost function holding `line` as (real path, first line, last line); none at module level."""
    tree = _tree(os.path.realpath(file))
    if tree is None:
        return []
    best: tuple[str, int, int] | None = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            last = node.end_lineno or node.lineno
            if first <= line <= last and (best is None or first >= best[1]):
                best = (os.path.realpath(file), first, last)
    return [best] if best else []


_TREES: dict[str, ast.Module | None] = {}


def _tree(path: str) -> ast.Module | None:
    if path not in _TREES:
        try:
            with open(path, encoding="utf-8") as handle:
                _TREES[path] = ast.parse(handle.read())
        except (OSError, SyntaxError, UnicodeDecodeError, ValueError, RecursionError, MemoryError):
            _TREES[path] = None
    return _TREES[path]
