"""What the checks of the roots of several targets (analysis/root_targets.py) make one report of.

The run's target's roots are traced and checked first, then each other target's roots under that target
(its rules, wording and tracing guards; engine/runner.py). A function reached from roots of several targets
is checked once per target: its findings are one per place and code, with the targets whose roots reach
them, the run's target first, and the run's message and fix.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from cslint.core.report import Diagnostic
from cslint.core.targets import TARGETS

if TYPE_CHECKING:
    from cslint.analysis.traced import TracedFunction, TracedProgram
    from cslint.rule_api.findings import Finding


def other_target_findings(found: list[Finding], traced: TracedFunction, run_program: TracedProgram) -> list[Finding]:
    """`found` (the findings of a function checked for another target than the run's), without their fixes
    when a root of the run's target reaches the function too: only the run's fixes rewrite code both reach,
    so two passes never rewrite one statement."""
    if traced.func.qualname in run_program.functions:
        for finding in found:
            finding.fix = None
    return found


def ordered(targets: Iterable[str], run_target: str) -> tuple[str, ...]:
    """The targets once each: the run's first, then in the order of `TARGETS`."""
    order = {name: i for i, name in enumerate(TARGETS)}
    unique = set(targets)
    return tuple(sorted(unique, key=lambda name: (name != run_target, order.get(name, len(order)), name)))


def merged_by_place(placed: Iterable[Diagnostic], run_target: str) -> list[Diagnostic]:
    """One diagnostic per (code, line, column), in the order first placed, carrying every target whose
    check found it (the run's where none is said): the run's target's own diagnostic when it has one."""
    kept: dict[tuple[str, int, int], Diagnostic] = {}
    for d in placed:
        targets = d.targets or (run_target,)
        key = (d.code, d.line, d.column)
        before = kept.get(key)
        if before is None:
            kept[key] = replace(d, targets=targets) if d.targets != targets else d
            continue
        both = ordered((*before.targets, *targets), run_target)
        if both == before.targets:
            continue
        primary = d if run_target in targets and run_target not in before.targets else before
        kept[key] = replace(primary, targets=both)
    return list(kept.values())
