"""The root parameter kinds of step functions (`@cstorch.trace`) and of training-loop bodies (`LoopStep`)."""

from __future__ import annotations

from cslint.analysis.index import FunctionInfo
from cslint.analysis.kinds import TENSOR, UNKNOWN, Kind
from cslint.analysis.project import Project
from cslint.analysis.step_functions import is_step_function, step_param_kind
from cslint.analysis.xla_loops import LoopStep, loop_step_seeds


def apply_step_params(project: Project, func: FunctionInfo, params: dict[str, Kind]) -> None:
    """Refine the root parameter kinds of a `@cstorch.trace` step function in place. For a training
    loop's body (`LoopStep`), also bind what its names hold when it starts."""
    if not is_step_function(func):
        return
    fallback = UNKNOWN if isinstance(func, LoopStep) else TENSOR
    p = func.node.params
    for param in (*p.posonly_params, *p.params, *p.kwonly_params):
        name = param.name.value
        if name in params:
            params[name] = step_param_kind(project, func, param, params[name], fallback)
    if isinstance(func, LoopStep):
        params.update(loop_step_seeds(project, func, params))
