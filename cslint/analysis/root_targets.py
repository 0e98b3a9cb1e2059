"""Which target each traced root is checked for (docs/targets.md, "A target per root").

A function that `torch.compile` decorates or wraps (`@torch.compile`, a module-level `torch.compile(fn)` of a
function the project defines) is traced by dynamo whatever the rest of the project runs on: it is a
`compile` root. Every other root (a `forward`, an optimizer's `step`, a `--trace-roots` match, a
`@cstorch.trace` function, a torch_xla loop, a SambaNova graph's model) takes the run's target. A run whose
roots have several targets checks each target's roots under that target (engine/runner.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cslint.analysis.compile_options import COMPILE

if TYPE_CHECKING:
    from cslint.analysis.traced import Root

COMPILE_TARGET = "compile"


def root_target(root: Root, run_target: str) -> str:
    """The target `root` is checked for in a run for `run_target`."""
    func, reason, _ = root
    if COMPILE in func.decorators or reason == f"passed to {COMPILE}()":
        return COMPILE_TARGET
    return run_target


def roots_by_target(roots: list[Root], run_target: str) -> dict[str, list[Root]]:
    """The roots of each target, in their order; the run's target first, present even with no roots."""
    found: dict[str, list[Root]] = {run_target: []}
    for root in roots:
        found.setdefault(root_target(root, run_target), []).append(root)
    return found
