"""Run a host helper eagerly under torch.compile: a function the step calls that draws from NumPy's or Python's
random generator and returns no tensor gets `@torch.compiler.disable`.

Such a helper (span masks drawn with `np.random`, a random crop size) is host code: dynamo breaks the graph
at every draw inside it, and again at every loop iteration it resumes in. Kept out of the trace, it runs as
it does without compile (the same generator, the same numbers, the same result) and the caller's graph
breaks once, at the call. The draws stay host draws: a static graph still needs the mask computed outside
the step (in the data loader) or drawn with torch on the device, which a person chooses.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.kinds import Kind, Tag
from cslint.analysis.signatures import annotation_kind
from cslint.core.targets import get_target
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix

_HOST_TAGS = (Tag.STATIC, Tag.HOST)


def run_eagerly(ctx: RuleContext) -> Fix | None:
    """`@torch.compiler.disable` on the traced function, when it is a helper that returns no tensor."""
    traced = ctx.traced
    node = traced.func.node
    if not get_target(ctx.settings.target).has_graph_breaks or traced.parent is None or traced.eager or \
            not isinstance(node, cst.FunctionDef) or node.name.value in ("forward", "__call__", "step") or \
            node.asynchronous is not None or _is_generator(ctx) or not _returns_host_values(node, ctx):
        return None
    torch, imports = ctx.torch_name()
    decorator = cst.Decorator(cst.parse_expression(f"{torch}.compiler.disable"))
    name = node.name.value
    return Fix("safe", f"Run `{name}` eagerly (`@{torch}.compiler.disable`): it draws on the host and returns no "
                       "tensor, so it computes the same values outside the graph; the step breaks once at each call "
                       "instead of at every draw (still a break: compute its result in the data loader for a whole "
                       "graph)",
               [(node, node.with_changes(decorators=[*node.decorators, decorator]))], imports)


def _is_generator(ctx: RuleContext) -> bool:
    return any(isinstance(inner, (cst.Yield, cst.Await))
               for inner in ctx.walk(prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)))


def _returns_host_values(node: cst.FunctionDef, ctx: RuleContext) -> bool:
    """The return annotation says a Python or NumPy value (believed: under compile the engine takes NumPy
    arrays for tensors, as dynamo traces them), or, without one, what the function returns is one on
    evidence."""
    declared = annotation_kind(node.returns)
    if declared is not None:
        return _holds_host_values(declared)
    return ctx.analysis.returns_value and _holds_host_values(ctx.analysis.return_kind)


def _holds_host_values(kind: Kind) -> bool:
    """No tensor and nothing unknown anywhere in it."""
    if kind.tag in _HOST_TAGS:
        return True
    if kind.tag is Tag.SEQUENCE:
        parts = [*(kind.items or ()), *([kind.elem] if kind.elem is not None else [])]
        return all(_holds_host_values(part) for part in parts)
    return False
