"""Which target each traced root is checked for (docs/targets.md, "A target per root").

A root that a platform's own call makes traces on that platform whatever the run's target: a function
`torch.compile` decorates or wraps (`@torch.compile`, a module-level `torch.compile(fn)` of a function the
project defines) is a `compile` root, a `@cstorch.trace` function a `wsc` root, a `torch_xla.compile`
function or a training loop ending its steps with `xm.mark_step()` an `xla` root, the model and optimizer
a SambaNova script hands `samba.utils.trace_graph` `rdu` roots. Every other root (a `forward`, an
optimizer's `step`, a `--trace-roots` match, a library entry point) takes the run's target. A run whose roots
have several targets checks each target's roots under that target (engine/runner.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cslint.analysis.xla_loops import LOOP_REASON
from cslint.core.targets import TARGETS

if TYPE_CHECKING:
    from cslint.analysis.traced import Root


def root_target(root: Root, run_target: str) -> str:
    """The target `root` is checked for in a run for `run_target` (the roots' reasons: analysis/traced.py,
    platforms.py, xla_loops.py)."""
    func, reason, _ = root
    for target in TARGETS.values():
        if any(wrapper in func.decorators or reason == f"passed to {wrapper}()" for wrapper in target.wrappers) \
                or any(reason.endswith(f", passed to {call}()") for call in target.script_calls) \
                or target.step_calls and reason.startswith(LOOP_REASON):
            return target.name
    return run_target


def roots_by_target(roots: list[Root], run_target: str) -> dict[str, list[Root]]:
    """The roots of each target, in their order; the run's target first, present even with no roots."""
    found: dict[str, list[Root]] = {run_target: []}
    for root in roots:
        found.setdefault(root_target(root, run_target), []).append(root)
    return found
