"""Turn `print`/`logging` of tensors in a traced step into the Cerebras way of reporting values.

Inside a traced step a print runs once, while tracing, on values that do not exist yet. The target
depends on `cerebras-version` (see docs/summaries.md):
- 2.1 and later (default "2.4"): a step closure, which cerebras.pytorch calls after every step with the
  tensors' values fetched: `print(f"loss {loss}")` ->
  `cstorch.step_closure(lambda loss: print(f"loss {loss}"))(loss)`. The print itself is unchanged.
- before 2.1: the summary API, `cstorch.summarize_scalar("loss", loss)` for a value read as a number
  (`loss.item()`, `float(loss)`, a full reduction), `cstorch.summarize_tensor` otherwise.
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.analysis.kinds import Tag
from cslint.fixers.host import conversion_receiver, is_zero_dim
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix

LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "critical", "exception", "log"})
LOGGING_FUNCTIONS = frozenset({f"logging.{m}" for m in LOG_METHODS} | {"warnings.warn"})
CEREBRAS_MODULE = "cerebras.pytorch"
STEP_CLOSURE_SINCE = (2, 1)


def log_call_kind(node: cst.Call, ctx: RuleContext) -> str | None:
    """"print", "logging" or "warnings" when `node` prints or logs; None otherwise."""
    func = node.func
    if isinstance(func, cst.Name) and func.value == "print" and "print" not in ctx.module.imports.names:
        return "print"
    qualified = ctx.resolve(func)
    if qualified in LOGGING_FUNCTIONS:
        return qualified.split(".")[0] if qualified else None
    if isinstance(func, cst.Attribute) and func.attr.value in LOG_METHODS:
        receiver = func.value
        if isinstance(receiver, cst.Call) and ctx.resolve(receiver.func) == "logging.getLogger":
            return "logging"
        dotted = dotted_name(receiver)
        if dotted is not None and "log" in dotted.rsplit(".", 1)[-1].lower():
            return "logging"
    return None


def data_dependent_parts(node: cst.Call, ctx: RuleContext) -> list[cst.BaseExpression]:
    """The outermost argument sub-expressions that are tensors or values read from tensors."""
    found: list[cst.BaseExpression] = []

    class Finder(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if isinstance(n, cst.Lambda):
                return False
            if isinstance(n, cst.BaseExpression) and ctx.is_data_dependent(n):
                found.append(n)
                return False
            # `x.shape`, `x.size(0)`, `x.dtype`: static facts about a tensor, not its values
            return not (isinstance(n, (cst.Attribute, cst.Call, cst.Subscript)) and ctx.kind(n).tag is Tag.STATIC)

    for arg in node.args:
        arg.value.visit(Finder())
    return found


def parse_version(text: str) -> tuple[int, int]:
    parts = [int(p) if p.isdigit() else 0 for p in text.strip().split(".")[:2]]
    while len(parts) < 2:
        parts.append(0)
    return parts[0], parts[1]


def _cerebras(ctx: RuleContext) -> tuple[str, frozenset[str]]:
    alias = ctx.module.imports.local_alias(CEREBRAS_MODULE)
    if alias is not None:
        return alias, frozenset()
    if ctx.module.imports.names.get("cerebras") == "cerebras":  # `import cerebras.pytorch`
        return CEREBRAS_MODULE, frozenset()
    return CEREBRAS_MODULE, frozenset({CEREBRAS_MODULE})


def report_through_summaries(node: cst.Call, ctx: RuleContext) -> Fix | None:
    parts = data_dependent_parts(node, ctx)
    if not parts:
        return None
    if parse_version(ctx.settings.cerebras_version) >= STEP_CLOSURE_SINCE:
        return _step_closure(node, parts, ctx)
    return _summarize(node, parts, ctx)


def _step_closure(node: cst.Call, parts: list[cst.BaseExpression], ctx: RuleContext) -> Fix | None:
    # Only tensors held in local names can be handed to the closure; `self.x` or a value already read
    # with .item() at trace time would still be the trace-time object.
    names: list[str] = []
    for part in parts:
        leaves = _tensor_names(part, ctx)
        if leaves is None:
            return None
        names.extend(n for n in leaves if n not in names)
    if not names:
        return None
    cstorch, imports = _cerebras(ctx)
    params = cst.Parameters(params=[cst.Param(cst.Name(n)) for n in names])
    inner = node.with_changes(lpar=[], rpar=[])
    closure = cst.Call(func=cst.parse_expression(f"{cstorch}.step_closure"),
                       args=[cst.Arg(cst.Lambda(params=params, body=inner))])
    replacement = cst.Call(func=closure, args=[cst.Arg(cst.Name(n)) for n in names])
    replacement = replacement.with_changes(lpar=node.lpar, rpar=node.rpar)
    return Fix("unsafe", f"Print after each step with {cstorch}.step_closure (cerebras-version "
                         f"{ctx.settings.cerebras_version}); unsafe: it prints every step, after the step, "
                         "and only runs under cerebras.pytorch's executor", [(node, replacement)], imports)


def _tensor_names(part: cst.BaseExpression, ctx: RuleContext) -> list[str] | None:
    """Local names of tensors the expression reads; None if it reads a tensor some other way."""
    names: list[str] = []
    ok = True

    class Walker(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            nonlocal ok
            if isinstance(n, cst.Name) and ctx.kind(n).is_data_dependent:
                if not ctx.kind(n).is_tensor:
                    ok = False  # a Python value read from a tensor at trace time
                elif n.value not in names:
                    names.append(n.value)
                return False
            if isinstance(n, cst.Attribute):
                if ctx.kind(n.value).is_data_dependent:
                    n.value.visit(self)
                elif ctx.kind(n).is_data_dependent:
                    ok = False  # self.buffer: the closure would see the attribute, not this step's value
                return False
            return True

    part.visit(Walker())
    return names if ok else None


def _summarize(node: cst.Call, parts: list[cst.BaseExpression], ctx: RuleContext) -> Fix | None:
    if len(parts) != 1:
        return None
    part = parts[0]
    scalar = False
    converted = conversion_receiver(part, ctx) if isinstance(part, cst.Call) else None
    if converted is not None:
        part, scalar = converted[0], True
    elif not ctx.is_tensor(part):
        return None
    scalar = scalar or is_zero_dim(part, ctx)
    label = _label(node, part)
    cstorch, imports = _cerebras(ctx)
    api = "summarize_scalar" if scalar else "summarize_tensor"
    replacement = cst.Call(func=cst.parse_expression(f"{cstorch}.{api}"),
                           args=[cst.Arg(cst.SimpleString(repr(label).replace("'", '"'))), cst.Arg(part)])
    replacement = replacement.with_changes(lpar=node.lpar, rpar=node.rpar)
    return Fix("unsafe", f"Record `{ctx.code(part)}` with {cstorch}.{api} (cerebras-version "
                         f"{ctx.settings.cerebras_version}); unsafe: the value goes to the summary writer, "
                         "not to stdout or the log", [(node, replacement)], imports)


def _label(node: cst.Call, part: cst.BaseExpression) -> str:
    """The summary name: the tensor's own name, else the words of the message."""
    dotted = dotted_name(part)
    if dotted is not None:
        return dotted.rsplit(".", 1)[-1]
    for arg in node.args:
        if isinstance(arg.value, cst.SimpleString):
            text = arg.value.evaluated_value or ""
            if isinstance(text, bytes):  # b"..." holds ASCII characters and escapes only
                text = text.decode("latin-1")
            words = "".join(c if c.isalnum() else " " for c in text).split()
            if words:
                return "_".join(words).lower()
    return "value"
