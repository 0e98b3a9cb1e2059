"""Graph stability: the graph traced on each step must equal the first one (the device compiles once)."""

from __future__ import annotations

from typing import Any, Protocol
from collections.abc import Sequence

from cslint.runtime.findings import RuntimeFinding, RuntimeReport


class Op(Protocol):
    op: str
    path: str
    line: int
    args: tuple[Any, ...]


def _first_difference(first: Sequence[Any], other: Sequence[Any]) -> tuple[int, str] | None:
    for index, (a, b) in enumerate(zip(first, other)):
        if a.op != b.op or (a.path, a.line) != (b.path, b.line):
            return index, f"runs `{b.op}` where the first step ran `{a.op}`"
        if a.args != b.args:
            changed = [f"{x!r} -> {y!r}" for x, y in zip(a.args, b.args) if x != y]
            return index, f"`{a.op}` gets a different Python value ({', '.join(changed)})"
    if len(first) != len(other):
        index = min(len(first), len(other))
        return max(index - 1, 0), f"traces {len(other)} ops where the first step traced {len(first)}"
    return None


def compare_steps(per_step: list[list[Op]], report: RuntimeReport) -> None:
    """Report the first place where a later step's graph differs from the first step's."""
    if len(per_step) < 2:
        return
    first = per_step[0]
    for number, ops in enumerate(per_step[1:], start=2):
        found = _first_difference(first, ops)
        if found is None:
            continue
        index, what = found
        where = ops[index] if index < len(ops) else first[index]
        report.add(RuntimeFinding(
            "WSC703", where.path, where.line,
            f"the traced graph changes between step 1 and step {number}: this line {what}; a Python value "
            "that changes per step feeds the graph and forces a recompile (keep it in a tensor buffer)",
            "stability"))
        return
