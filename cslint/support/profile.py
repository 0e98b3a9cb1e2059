"""Where a run's time goes: seconds per phase and per rule, printed by `cslint check --profile`."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

_UNTIMED = nullcontext()


class Profile:
    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.phases: dict[str, float] = {}
        self.rules: dict[str, float] = {}
        self.counts: dict[str, int] = {}
        self._nested: list[float] = []  # for each open phase, the seconds spent in phases opened inside it

    def phase(self, name: str) -> AbstractContextManager[None]:
        """Time what runs inside as phase `name` (nothing to time when profiling is off: opened for
        every traced function)."""
        return self._timed(name) if self.enabled else _UNTIMED

    @contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        self._nested.append(0.0)
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            own = elapsed - self._nested.pop()  # a parse inside the analysis counts as parsing, once
            self.phases[name] = self.phases.get(name, 0.0) + own
            if self._nested:
                self._nested[-1] += elapsed

    def add_rule_time(self, code: str, seconds: float) -> None:
        self.rules[code] = self.rules.get(code, 0.0) + seconds

    def count(self, name: str, n: int = 1) -> None:
        if self.enabled:
            self.counts[name] = self.counts.get(name, 0) + n

    def merge(self, other: dict[str, dict[str, float]]) -> None:
        """Add a worker process's figures (its `as_dict()`)."""
        for name, seconds in other.get("phases", {}).items():
            self.phases[name] = self.phases.get(name, 0.0) + seconds
        for code, seconds in other.get("rules", {}).items():
            self.add_rule_time(code, seconds)
        for name, n in other.get("counts", {}).items():
            self.counts[name] = self.counts.get(name, 0) + int(n)

    def as_dict(self) -> dict[str, dict[str, float]]:
        return {"phases": dict(self.phases), "rules": dict(self.rules),
                "counts": {k: float(v) for k, v in self.counts.items()}}

    def report(self, wall: float) -> str:
        lines = [f"cslint profile: {wall:.2f} s wall"]
        if self.counts:
            lines.append("  " + ", ".join(f"{k}: {v}" for k, v in sorted(self.counts.items())))
        lines.append("  phase (seconds of its own, not of the phases run inside it; summed over worker processes):")
        for name, seconds in sorted(self.phases.items(), key=lambda kv: -kv[1]):
            lines.append(f"    {name:<36} {seconds:8.2f}")
        if self.rules:
            lines.append("  rule (seconds inside its handlers; part of 'rules'):")
            for code, seconds in sorted(self.rules.items(), key=lambda kv: -kv[1]):
                lines.append(f"    {code:<36} {seconds:8.3f}")
        return "\n".join(lines) + "\n"
