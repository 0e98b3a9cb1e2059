"""`--compare-static`: static and runtime findings side by side, per line: seen by both, static only
(reported but never happened when the step ran) and runtime only (the static pass missed it)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from cslint.runtime.findings import RuntimeReport
from cslint.runtime.targets import split_target

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


def compare_with_static(report: RuntimeReport) -> Comparison:
    """Match by file, line and family: the runtime names the family, the static rule the exact shape."""
    from cslint.config import load_settings
    from cslint.runner import Linter
    from cslint.selection import enabled_rules

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
    rows = []
    for key in sorted(set(static) | set(runtime)):
        verdict = BOTH if key in static and key in runtime else STATIC_ONLY if key in static else RUNTIME_ONLY
        rows.append(Row(_relative(key[0]), key[1], static.get(key, ""), runtime.get(key, ""), verdict))
    return Comparison(rows)
