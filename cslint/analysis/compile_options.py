"""How a traced root is compiled by torch.compile, and the functions dynamo is told not to trace.

`@torch.compile(fullgraph=True)` or `torch.compile(step, fullgraph=True)` at module level: a graph break
under that root is an error; compiled without it, a break splits the step into graphs with Python
between them (slower, not an error). `fullgraph=True` also makes dynamo capture scalar reads and
data-dependent output shapes (torch 2.13 `output_graph.py`: `allow_scalar_outputs=one_graph or
config.capture_scalar_outputs`), and a `@torch._dynamo.config.patch(...)` decorator on the root turns
the settings it names on for what the root traces.

`@torch.compiler.disable` / `@torch._dynamo.disable` (and `torch.compiler.disable(fn)`) keep a function
out of dynamo's trace: calling it from compiled code breaks the graph (an error under fullgraph=True)
and it runs eagerly, callees included. With `recursive=False` only its own frame runs eagerly: dynamo
compiles the functions it calls as graphs of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from cslint.analysis.dynamo_config import DYNAMIC_OUTPUT_SHAPES, PATCH, SCALAR_OUTPUTS, SETTINGS
from cslint.analysis.imports import ImportTable
from cslint.analysis.index import FunctionInfo

COMPILE = "torch.compile"
DISABLE_DECORATORS = frozenset({"torch.compiler.disable", "torch._dynamo.disable", "torch._dynamo.eval_frame.disable",
                                "torch._disable_dynamo"})
DEEP, SHALLOW = "deep", "shallow"  # disabled with its callees, or its own frame only (recursive=False)


@dataclass(frozen=True)
class CompileOptions:
    """What a root's `torch.compile` says. `fullgraph` None: not a literal (the cost is not known)."""

    root: str  # the root's name, as findings show it
    fullgraph: bool | None
    captures: frozenset[str] = frozenset()  # dynamo settings on for what it traces

    def cost(self) -> str | None:
        if self.fullgraph is None:
            return None
        if self.fullgraph:
            return f"an error: `{self.root}` is compiled with `fullgraph=True`"
        return f"a graph break, not an error: `{self.root}` is compiled without `fullgraph=True`"


def _fullgraph(call: cst.Call | None) -> bool | None:
    if call is None:
        return False
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "fullgraph":
            value = arg.value
            return {"True": True, "False": False}.get(value.value) if isinstance(value, cst.Name) else None
    return False


def _captures(fullgraph: bool | None, patched: frozenset[str]) -> frozenset[str]:
    return patched | frozenset({SCALAR_OUTPUTS, DYNAMIC_OUTPUT_SHAPES}) if fullgraph else patched


def decorated_options(func: FunctionInfo) -> CompileOptions | None:
    """The options of a `@torch.compile` / `@torch.compile(...)` decorator, with the settings of any
    `@torch._dynamo.config.patch(...)` on the same function."""
    if COMPILE not in func.decorators:
        return None
    imports = func.module.imports
    fullgraph: bool | None = False
    patched: frozenset[str] = frozenset()
    for decorator in func.node.decorators:
        expr = decorator.decorator
        call = expr if isinstance(expr, cst.Call) else None
        name = imports.resolve(call.func if call is not None else expr)
        if name == COMPILE:
            fullgraph = _fullgraph(call)
        elif name == PATCH and call is not None:
            patched |= patched_settings(call)
    return CompileOptions(func.display_name, fullgraph, _captures(fullgraph, patched))


def wrapper_options(call: cst.Call, func: FunctionInfo, imports: ImportTable) -> CompileOptions | None:
    """The options of a module-level `torch.compile(fn, ...)` call."""
    if imports.resolve(call.func) != COMPILE:
        return None
    fullgraph = _fullgraph(call)
    patched: frozenset[str] = frozenset()
    for decorator in func.node.decorators:
        expr = decorator.decorator
        if isinstance(expr, cst.Call) and func.module.imports.resolve(expr.func) == PATCH:
            patched |= patched_settings(expr)
    return CompileOptions(func.display_name, fullgraph, _captures(fullgraph, patched))


def disabled(func: FunctionInfo) -> str | None:
    """DEEP or SHALLOW when a decorator keeps the function out of dynamo's trace, else None."""
    if not any(name in DISABLE_DECORATORS for name in func.decorators):
        return None
    imports = func.module.imports
    for decorator in func.node.decorators:
        expr = decorator.decorator
        call = expr if isinstance(expr, cst.Call) else None
        if imports.resolve(call.func if call is not None else expr) not in DISABLE_DECORATORS:
            continue
        if call is not None and any(
                arg.keyword is not None and arg.keyword.value == "recursive" and isinstance(arg.value, cst.Name)
                and arg.value.value == "False" for arg in call.args):
            return SHALLOW
        return DEEP
    return None


def patched_settings(call: cst.Call) -> frozenset[str]:
    """The settings a `torch._dynamo.config.patch(...)` call turns on: `patch(capture_scalar_outputs=True)`,
    `patch("capture_scalar_outputs", True)` or `patch({"capture_scalar_outputs": True})`."""
    on: set[str] = set()
    args = list(call.args)
    if len(args) == 2 and args[0].keyword is None and _string(args[0].value) in SETTINGS and _true(args[1].value):
        on.add(_string(args[0].value))  # type: ignore[arg-type]
    for arg in args:
        if arg.keyword is not None and arg.keyword.value in SETTINGS and _true(arg.value):
            on.add(arg.keyword.value)
        elif arg.keyword is None and isinstance(arg.value, cst.Dict):
            for element in arg.value.elements:
                if isinstance(element, cst.DictElement) and _string(element.key) in SETTINGS \
                        and _true(element.value):
                    on.add(_string(element.key))  # type: ignore[arg-type]
    return frozenset(on)


def _string(node: cst.BaseExpression) -> str | None:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"
