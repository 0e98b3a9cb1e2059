"""`--compare-static`: what the static pass missed, and what it reported that never happened at runtime."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from cslint.runtime.findings import RuntimeReport
from cslint.runtime.targets import split_target


@dataclass
class Comparison:
    missed: list[str] = field(default_factory=list)  # runtime findings the static pass did not report
    not_seen: list[str] = field(default_factory=list)  # static findings that never happened at runtime

    def render(self) -> str:
        lines = [f"static pass missed: {m}" for m in self.missed]
        lines += [f"static only (not seen at runtime): {s}" for s in self.not_seen]
        return "\n".join(lines) + ("\n" if lines else "")

    def to_json(self) -> dict[str, list[str]]:
        return {"missed": self.missed, "not_seen": self.not_seen}


def compare_with_static(report: RuntimeReport) -> Comparison:
    """Match by file, line and family: the runtime names the family, the static rule the exact shape."""
    from cslint.config import load_settings
    from cslint.runner import Linter
    from cslint.selection import enabled_rules

    files = {Path(f.path) for f in report.findings if Path(f.path).is_file()}
    location, _ = split_target(report.target)
    if location.endswith(".py") and Path(location).is_file():
        files.add(Path(location).resolve())
    comparison = Comparison()
    if not files:
        return comparison
    settings = load_settings(None, sorted(files)[0])
    result = Linter(settings, enabled_rules(settings)).run(sorted(files))
    static = {(str(d.path.resolve()), d.line, d.code[:4]): f"{d.path}:{d.line}: {d.code} {d.message}"
              for d in result.diagnostics}
    runtime = {(str(Path(f.path).resolve()), f.line, f.code[:4]): f"{f.location()}: {f.code} {f.message}"
               for f in report.findings}
    comparison.missed = [text for key, text in sorted(runtime.items()) if key not in static]
    comparison.not_seen = [text for key, text in sorted(static.items()) if key not in runtime]
    return comparison
