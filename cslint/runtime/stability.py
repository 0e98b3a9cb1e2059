"""Graph stability: the graph traced on each step must equal the first one (the device compiles once)."""

from __future__ import annotations

from typing import Any, Protocol
from collections.abc import Sequence

from cslint.runtime.findings import RuntimeFinding, RuntimeReport
from cslint.runtime.wording import op_words


class Op(Protocol):
    op: str
    path: str
    line: int
    args: tuple[Any, ...]


def _first_difference(first: Sequence[Any], other: Sequence[Any]) -> tuple[int, str, bool] | None:
    """Where the graphs part ways, what changed there (said of "this line"), and whether the ops themselves
    differ (not only their Python arguments)."""
    for index, (a, b) in enumerate(zip(first, other)):
        if a.op != b.op or (a.path, a.line) != (b.path, b.line):
            return index, f"this line runs {op_words(b.op)} where the first step ran {op_words(a.op)}", True
        if a.args != b.args:
            changed = [f"{x!r} -> {y!r}" for x, y in zip(a.args, b.args) if x != y]
            return index, f"{op_words(a.op)} on this line gets a different Python value ({', '.join(changed)})", \
                False
    if len(first) != len(other):
        index = min(len(first), len(other))
        return max(index - 1, 0), f"this line traces {len(other)} ops where the first step traced {len(first)}", True
    return None


def graphs_differ(first: Sequence[Any], other: Sequence[Any]) -> bool:
    return _first_difference(first, other) is not None


_VALUE_READ = "aten._local_scalar_dense.default"


def _cause(ops: Sequence[Any], index: int, report: RuntimeReport) -> tuple[Any, str] | None:
    """The branch on a tensor value that chose which ops came next: the last value read before the graphs
    part ways whose line is a control-flow finding (WSC1xx)."""
    for op in reversed(ops[:index]):
        if op.op == _VALUE_READ:
            code = next((f.code for f in report.findings
                         if (f.path, f.line) == (op.path, op.line) and f.code.startswith("WSC1")), None)
            if code is not None:
                return op, code
    return None


def compare_steps(per_step: list[list[Op]], report: RuntimeReport) -> None:
    """Report the first place where a later step's graph differs from the first step's.

    When the ops differ (not only their Python arguments), a tensor value read before that point chose the
    path (`if t.sum() > 0:`): the change is put on that read's line and code, not on the first changed op.
    """
    if len(per_step) < 2:
        return
    first = per_step[0]
    for number, ops in enumerate(per_step[1:], start=2):
        found = _first_difference(first, ops)
        if found is None:
            continue
        index, what, ops_differ = found
        where = ops[index] if index < len(ops) else first[index]
        cause = _cause(ops, index, report) if ops_differ else None
        if cause is not None:
            read, code = cause
            report.add(RuntimeFinding(
                code, read.path, read.line, f"the traced graph changes between step 1 and step {number}: a "
                "tensor value read on the host here chose which ops run next", "stability"))
            return
        report.add(RuntimeFinding(
            "WSC703", where.path, where.line,
            f"the traced graph changes between step 1 and step {number}: {what}; a Python value "
            "that changes per step feeds the graph and forces a recompile (keep it in a tensor buffer)",
            "stability"))
        return
