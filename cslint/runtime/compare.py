"""`--compare-static`: static and runtime findings side by side, per line: seen by both, static only
(reported but never happened when the step ran) and runtime only (the static pass missed it)."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path

from cslint.runtime.findings import RuntimeReport
from cslint.runtime.step_factory import split_target

BOTH, STATIC_ONLY, RUNTIME_ONLY = "both", "static only (not seen at runtime)", "runtime only (static pass missed)"


@dataclass(frozen=True)
class Row:
    path: str  # relative to the current directory when below it
    line: int
    static: str  # "WSC101 message" or ""
    runtime: str  # "WSC101 [lazy] message" or ""
    verdict: str


@dataclass
class Comparison:
    rows: list[Row] = field(default_factory=list)

    @property
    def missed(self) -> list[Row]:
        return [r for r in self.rows if r.verdict == RUNTIME_ONLY]

    @property
    def not_seen(self) -> list[Row]:
        return [r for r in self.rows if r.verdict == STATIC_ONLY]

    def render(self) -> str:
        if not self.rows:
            return ""
        where = [f"{r.path}:{r.line}" for r in self.rows]
        width = max(len(w) for w in where)
        code = max(len(_code(r.static)) for r in self.rows)
        lines = ["static vs runtime, per line:",
                 f"  {'location':<{width}}  {'static':<{max(code, 6)}}  {'runtime':<16}  verdict"]
        for row, location in zip(self.rows, where):
            runtime = row.runtime.split("] ")[0] + "]" if row.runtime else "-"
            lines.append(f"  {location:<{width}}  {_code(row.static) or '-':<{max(code, 6)}}  {runtime:<16}  "
                         f"{row.verdict}")
        counts = {v: sum(r.verdict == v for r in self.rows) for v in (BOTH, STATIC_ONLY, RUNTIME_ONLY)}
        lines.append(f"  {counts[BOTH]} both, {counts[STATIC_ONLY]} static only, {counts[RUNTIME_ONLY]} runtime only")
        return "\n".join(lines) + "\n"

    def to_json(self) -> list[dict[str, object]]:
        return [{"path": r.path, "line": r.line, "static": r.static, "runtime": r.runtime, "verdict": r.verdict}
                for r in self.rows]


def _code(text: str) -> str:
    return text.split(" ", 1)[0] if text else ""


def _relative(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


Key = tuple[str, int, str]  # (path, line, rule family)


def compare_with_static(report: RuntimeReport) -> Comparison:
    """Match by file, line and family: the runtime names the family, the static rule the exact shape."""
    from cslint.core.config import load_settings
    from cslint.engine.runner import Linter
    from cslint.engine.selection import enabled_rules

    files = {Path(f.path) for f in report.findings if Path(f.path).is_file()}
    location, _ = split_target(report.target)
    if location.endswith(".py") and Path(location).is_file():
        files.add(Path(location).resolve())
    if not files:
        return Comparison()
    settings = load_settings(None, sorted(files)[0])
    result = Linter(settings, enabled_rules(settings)).run(sorted(files))
    static = {(str(d.path.resolve()), d.line, d.code[:4]): f"{d.code} {d.message}" for d in result.diagnostics}
    runtime = {(str(Path(f.path).resolve()), f.line, f.code[:4]): f"{f.code} [{f.backend}] {f.message}"
               for f in report.findings}
    for static_key, runtime_key in _inside_the_static_block(static, runtime):
        text = runtime.pop(runtime_key)
        runtime[static_key] = f"{runtime[static_key]}; {text}" if static_key in runtime else text
    rows = []
    for key in sorted(set(static) | set(runtime)):
        verdict = BOTH if key in static and key in runtime else STATIC_ONLY if key in static else RUNTIME_ONLY
        rows.append(Row(_relative(key[0]), key[1], static.get(key, ""), runtime.get(key, ""), verdict))
    return Comparison(rows)


def _inside_the_static_block(static: dict[Key, str], runtime: dict[Key, str]) -> list[tuple[Key, Key]]:
    """One problem reported at several lines: the static rule at an `if`/`for`/`while`/`with` header (the
    `if "step" not in state:` guard), the runtime at the lines inside that block that did it (each
    assignment that made state). Pairs each runtime finding with no static one of its family at its own line
    with the innermost such header of its family in its file that no runtime finding matches."""
    headers = [key for key in static if key not in runtime]
    ends: dict[str, dict[int, int]] = {}
    pairs = []
    for key in sorted(k for k in runtime if k not in static):
        around = [h for h in headers if h[0] == key[0] and h[2] == key[2]
                  and h[1] < key[1] <= ends.setdefault(h[0], _block_ends(h[0])).get(h[1], 0)]
        if around:
            pairs.append((max(around, key=lambda h: h[1]), key))
    return pairs


def _block_ends(path: str) -> dict[int, int]:
    """For each line that starts an `if`/`for`/`while`/`with` block in the file, the block's last line."""
    try:
        return block_ends(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def block_ends(text: str) -> dict[int, int]:
    """For each line that starts an `if`/`for`/`while`/`with` block in `text`, the block's last line."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    blocks = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith)
    return {node.lineno: node.end_lineno or node.lineno for node in ast.walk(tree) if isinstance(node, blocks)}
