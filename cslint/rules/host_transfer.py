"""WSC2xx: reading tensor values back to the host inside a traced step."""

from __future__ import annotations

import libcst as cst

from cslint.analysis.dynamo_config import SCALAR_OUTPUTS
from cslint.analysis.syntax import string_value
from cslint.analysis.kinds import Tag
from cslint.analysis.placement import COPIES
from cslint.fixers.host import (
    builtin_over_iterable, builtin_to_clamp, builtin_to_torch, drop_conversion, feeds_tensor_arithmetic,
    keep_bookkeeping_on_device, keep_tensor_name, math_to_torch,
)
from cslint.fixers.numpy_draws import scalar_draw
from cslint.fixers.summaries import log_call_kind
from cslint.rule_api.context import RuleContext
from cslint.rules.base import Rule
from cslint.analysis.walk import visit

NO_VALUE = "no value while tracing"
XLA_READ_NOTE = {"xla": "on XLA it runs the graph so far"}
XLA_READ_ADVICE = {"xla": "this forces a graph execution and a device-to-host copy before `xm.mark_step()`."}
ARITHMETIC_KEY = "host.arithmetic_operands"


def _note_arithmetic(node: cst.BinaryOperation | cst.AugAssign, ctx: RuleContext) -> None:
    """Remember conversions that only feed tensor arithmetic: those can stay tensors (visited first)."""
    ctx.scratch.setdefault(ARITHMETIC_KEY, set()).update(id(c) for c in feeds_tensor_arithmetic(node, ctx))


def _captured_note(what: str) -> str:
    return (f"Under `--target compile` {what} only feeding tensor arithmetic is not reported where dynamo keeps "
            "it in the graph as a symbolic number: when the project sets `torch._dynamo.config."
            "capture_scalar_outputs = True` at module level, under a root decorated with `@torch._dynamo.config."
            "patch(capture_scalar_outputs=True)`, or under a root compiled with `fullgraph=True` (which turns the "
            "setting on, torch 2.13). A read that a condition, a size or Python code uses is still reported: "
            "dynamo cannot decide a branch on it. The lazy targets (wsc, xla, rdu) read the value whatever "
            "dynamo's settings.")


def _captured(read: cst.Call, ctx: RuleContext) -> bool:
    """A read dynamo captures as a symbolic number (`capture_scalar_outputs`): one only feeding tensor
    arithmetic, which then stays in the graph. A read a condition, a size or Python code uses still
    breaks it (a branch on it cannot be decided while tracing), so it is reported."""
    return id(read) in ctx.scratch.get(ARITHMETIC_KEY, ()) and ctx.captures(SCALAR_OUTPUTS)


def _is_builtin(func: cst.BaseExpression, names: tuple[str, ...] | set[str], ctx: RuleContext) -> str | None:
    if isinstance(func, cst.Name) and func.value in names and func.value not in ctx.module.imports.names:
        return func.value
    return None


class TensorItem(Rule):
    code = "WSC201"
    tensor_methods = ("item", "tolist", "numpy")
    in_libraries = True
    graph_break = "GB0124"
    construct_graph_breaks = {".tolist()": "GB0109", ".numpy()": None}  # Tensor.tolist() with non-integer tensor
    target_notes = XLA_READ_NOTE
    target_advice = XLA_READ_ADVICE
    name = "tensor-item"
    summary = "Checks for `.item()`, `.tolist()` and `.numpy()` on tensors in traced code."
    why = (
        "These read a tensor's values into Python. While a step is traced the values do not exist yet: "
        "the trace fails or forces a device-to-host sync, and the number read on the first step is "
        "frozen into the graph as a constant for every later step. "
    ) + _captured_note("`t.item()`")
    example = """
def forward(self, x):
    norm = x.norm()
    return x / norm.item()
"""
    use_instead = """
def forward(self, x):
    norm = x.norm()
    return x / norm.detach()   # stays a tensor; .detach() keeps .item()'s cut of the gradient
"""
    fix_safety = (
        "When `t.item()` is an operand of tensor arithmetic (`x * t.item()`, `x /= t.item()`) it is replaced "
        "by `t.detach()`. Safe when `t` is certainly zero-dimensional (a full reduction such as `x.norm()`, "
        "or a name only bound to one): a 0-dim tensor broadcasts and promotes like a Python number. Unsafe "
        "otherwise, since a one-element tensor with dimensions changes broadcasting and dtype promotion. "
        "When `t.item()` is assigned to a name whose every use takes a tensor (arithmetic with a tensor, a "
        "positional argument of a tensor op such as `torch.maximum`/`.mul_`, a return), the name keeps the "
        "tensor: `scale = t.detach()`; safe under the same zero-dimensional condition. A use as an if/while "
        "condition makes it unsafe (the test becomes a tensor condition, which WSC101's torch.where fix then "
        "rewrites). Python bookkeeping (`num += r * t.item()`, `d = t.sum().item()` later used in Python "
        "arithmetic, an if, max/min or a format string, `state[\"v\"] += t.item()`), where the read reaches "
        "the assignment only through arithmetic: the read is dropped the same way, unsafe: float64 Python "
        "arithmetic becomes float32 tensor arithmetic (the last bits drift, and an adaptive step size "
        "amplifies them), and each later use reads a tensor, which its own rule then reports and fixes. No "
        "fix when a use of the name needs a Python integer (an index or slice, `range`, `int`, a size "
        "argument of `view`/`reshape`/`zeros`...). `.item()` of a one-element NumPy draw "
        "(`np.random.rand(1).item()`, `np.random.uniform(a, b, size=1).item()`) becomes the scalar draw "
        "(`np.random.rand()`): the same number from the same generator call, safe; the draw itself stays a "
        "WSC704 finding. `.tolist()`, `.numpy()` and other uses of `.item()` are reported without a fix."
    )
    VALID = [
        """
import torch
from torch import nn

class Scale(nn.Module):
    def forward(self, x, temperature: float = 1.0):
        norm = x.norm()
        n = x.shape[0]
        return x / norm.detach() * temperature / n


def evaluate(model, loader):
    total = 0.0
    for x, y in loader:
        total += model(x).sub(y).abs().mean().item()
    return total, model(x).tolist()
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Scale(nn.Module):
    def forward(self, x):
        norm = x.norm()
        y = x / norm.item()  # expect: WSC201
        ids = x.argmax(-1).tolist()  # expect: WSC201
        return y, self._stats(x), ids

    def _stats(self, x):
        return x.mean(0).numpy()  # expect: WSC201
""",
    ]

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx: RuleContext) -> None:
        _note_arithmetic(node, ctx)

    def visit_AugAssign(self, node: cst.AugAssign, ctx: RuleContext) -> None:
        _note_arithmetic(node, ctx)

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if ctx.report_library_effects(node, self.code, "reads tensor values into Python", NO_VALUE):
            return
        func = node.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in self.tensor_methods:
            return
        if not ctx.is_tensor(func.value) or _in_failure_message(node, ctx):  # an error message reads only when it fails
            return
        method = func.attr.value
        if method == "item" and _captured(node, ctx):
            return
        if method in COPIES and ctx.kind(func.value).on_cpu:
            return  # a copy of a tensor made on the CPU in the step reads nothing from the device
        fix = scalar_draw(node, ctx) or (drop_conversion(node, ctx) if id(node) in ctx.scratch.get(ARITHMETIC_KEY, ())
                                         else keep_tensor_name(node, ctx) or keep_bookkeeping_on_device(node, ctx))
        ctx.report(node, f"`{ctx.code(node)}` reads tensor values into Python", fix, consequence=NO_VALUE)


class TensorToHost(Rule):
    code = "WSC202"
    tensor_methods = ("cpu", "to")
    target_notes = XLA_READ_NOTE
    target_advice = XLA_READ_ADVICE
    name = "tensor-to-cpu"
    summary = "Checks for `.cpu()` and `.to(\"cpu\")` (any spelling of the CPU device) on tensors in traced code."
    why = (
        "Moving a tensor to the CPU inside the traced step asks for its values on the host: the graph is "
        "cut at that point and the step syncs with the device, or the trace fails."
    )
    example = """
def forward(self, x):
    probs = x.softmax(-1).cpu()
    return probs
"""
    use_instead = """
def forward(self, x):
    return x.softmax(-1)   # move outputs to the CPU after the step, outside the traced code
"""
    fix_safety = "No fix: where the values are needed on the host has to be decided by a person."
    VALID = [
        """
import torch
from torch import nn

class Head(nn.Module):
    def forward(self, x, mask, device: torch.device):
        mask = mask.to(device)
        y = x.to(torch.bfloat16).to(mask)
        return y.to(x.device)


def collate(batch):
    return torch.stack(batch).cpu()
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Head(nn.Module):
    def forward(self, x):
        a = x.cpu()  # expect: WSC202
        b = x.to("cpu")  # expect: WSC202
        c = x.to(device="cpu", dtype=torch.float32)  # expect: WSC202
        d = x.detach().to(torch.device("cpu"))  # expect: WSC202
        return a, b, c, d
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute) or not ctx.is_tensor(func.value) or ctx.kind(func.value).on_cpu:
            return  # (already on the CPU: made there in the step, placement.py)
        if func.attr.value == "cpu" or (func.attr.value == "to" and any(
                (arg.keyword is None or arg.keyword.value == "device") and _is_cpu(arg.value, ctx)
                for arg in node.args)):
            ctx.report(node, f"`{ctx.code(node)}` copies a tensor to the host in the traced step", consequence=NO_VALUE)


def _is_cpu(expr: cst.BaseExpression, ctx: RuleContext) -> bool:
    text = string_value(expr)
    if text is not None:
        return text.split(":")[0] == "cpu"
    if isinstance(expr, cst.Call) and ctx.resolve(expr.func) == "torch.device" and expr.args:
        return _is_cpu(expr.args[0].value, ctx)
    return False


class PythonNumberConversion(Rule):
    code = "WSC203"
    builtins = ("float", "int", "bool", "complex")
    in_libraries = True
    graph_break = "GB0124"
    target_notes = XLA_READ_NOTE
    target_advice = XLA_READ_ADVICE
    name = "tensor-to-python-number"
    summary = "Checks for `float(t)`, `int(t)`, `bool(t)` and `complex(t)` on tensors in traced code."
    why = (
        "Converting a tensor to a Python number reads its value, which does not exist while the step is "
        "traced: the trace fails or syncs, and the first step's number is frozen into the graph. "
    ) + _captured_note("`float(t)` or `int(t)`")
    example = """
def forward(self, x):
    return x * float(x.mean())
"""
    use_instead = """
def forward(self, x):
    return x * x.mean().detach()
"""
    fix_safety = (
        "When the number is an operand of tensor arithmetic, `float(t)` becomes `t.detach().float()` and "
        "`int(t)` becomes `t.detach().long()` (a float-to-long cast truncates toward zero like int()). Safe "
        "when `t` is certainly zero-dimensional (a full reduction, or a name only bound to one); unsafe "
        "otherwise (broadcasting and dtype promotion of a tensor with dimensions differ). The same holds "
        "when the number is assigned to a name whose every use takes a tensor (see WSC201); Python "
        "bookkeeping on it (`total += float(t)`) gets WSC201's unsafe bookkeeping fix. `bool(t)` and "
        "other uses are reported without a fix."
    )
    VALID = [
        """
import torch
from torch import nn

class Mix(nn.Module):
    def __init__(self, ratio):
        super().__init__()
        self.ratio = float(ratio)

    def forward(self, x, steps: int = 2):
        n = int(x.shape[-1] ** 0.5)
        return x * self.ratio * float(steps) / n


def summarize(losses):
    return [float(l) for l in losses]
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Mix(nn.Module):
    def forward(self, x):
        scale = float(x.mean())  # expect: WSC203
        return self._gate(x) * scale

    def _gate(self, x):
        if bool(x.any()):  # expect: WSC203
            return x * int(x.sum())  # expect: WSC203
        return x
""",
    ]

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx: RuleContext) -> None:
        _note_arithmetic(node, ctx)

    def visit_AugAssign(self, node: cst.AugAssign, ctx: RuleContext) -> None:
        _note_arithmetic(node, ctx)

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if _is_builtin(node.func, {"range"}, ctx):  # range(int(t)) is WSC107's trip-count finding
            ctx.scratch.setdefault("host.range_args", set()).update(id(a.value) for a in node.args)
            return
        if ctx.report_library_effects(node, self.code, "converts a tensor to a Python number", NO_VALUE):
            return
        name = _is_builtin(node.func, self.builtins, ctx)
        if name is None or not node.args or not ctx.is_tensor(node.args[0].value):
            return
        if id(node) in ctx.scratch.get("host.range_args", ()) or _in_failure_message(node, ctx):
            return
        if name in ("float", "int") and _captured(node, ctx):
            return
        fix = scalar_draw(node, ctx) or (drop_conversion(node, ctx) if id(node) in ctx.scratch.get(ARITHMETIC_KEY, ())
                                         else keep_tensor_name(node, ctx) or keep_bookkeeping_on_device(node, ctx))
        ctx.report(node, f"`{ctx.code(node)}` converts a tensor to a Python {name}", fix, consequence=NO_VALUE)


class MathOnTensor(Rule):
    code = "WSC204"
    graph_break = "GB0033"  # Data dependent operator
    name = "math-on-tensor"
    summary = "Checks for `math.*` functions (`math.sqrt(t)`, `math.log(t)`, `math.exp(t)`) applied to tensors."
    why = (
        "The `math` module works on Python floats: it converts the tensor with `float()`, which reads its "
        "value while tracing (a sync, a failure, or a constant frozen from the first step)."
    )
    example = """
def forward(self, x):
    return x / math.sqrt(x.var())
"""
    use_instead = """
def forward(self, x):
    return x / torch.sqrt(x.var())
"""
    fix_safety = (
        "`math.sqrt/exp/log/log1p/expm1/log2/log10/sin/cos/tan/tanh/asin/acos/atan/erf(t)` become the torch "
        "op of the same name (`math.fabs` becomes `torch.abs`), an operand that may be a Python number "
        "through `torch.as_tensor`. Unsafe: the result is a float32 tensor where math gave a float64 Python "
        "float (the last bits differ; later uses read a tensor). Other math functions (`floor`, `ceil`, "
        "`pow`, `isclose`, ...) differ in return types or arguments and have no fix."
    )
    VALID = [
        """
import math
import torch
from torch import nn

class Attn(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.scale = 1 / math.sqrt(dim)

    def forward(self, q, k):
        d = q.shape[-1]
        return q @ k.transpose(-1, -2) * self.scale / math.sqrt(d)
""",
    ]
    INVALID = [
        """
import math
import torch
from torch import nn

class Attn(nn.Module):
    def forward(self, q, k):
        scores = q @ k.transpose(-1, -2)
        return scores / math.sqrt(scores.var())  # expect: WSC204
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        qualified = ctx.resolve(node.func)
        if qualified is None or not qualified.startswith("math."):
            return
        if any(ctx.is_tensor(arg.value) for arg in node.args):
            name = qualified.split(".", 1)[1]
            ctx.report(node, f"`{ctx.code(node)}` applies math.{name} to a tensor, a Python float",
                       math_to_torch(node, name, ctx), consequence=NO_VALUE)


class PythonBuiltinOnTensor(Rule):
    code = "WSC205"
    builtins = ("min", "max", "round", "sum")
    name = "python-builtin-on-tensor"
    summary = "Checks for Python's `min`, `max`, `round` and `sum` applied to tensors in traced code."
    why = (
        "`min`/`max` compare their arguments with Python's `>`, calling bool() on a tensor: the value is "
        "read while tracing and the first step's choice is frozen. `sum(t)` iterates a tensor in Python, "
        "unrolling one addition per row into the graph. `round(t)` raises TypeError (tensors define no "
        "`__round__`). `abs(t)` is not one of them: it runs `Tensor.__abs__`, the op torch.abs, and reads "
        "nothing."
    )
    example = """
def forward(self, x, eps=1e-6):
    scale = max(eps, x.abs().max().item())
    return x / scale
"""
    use_instead = """
def forward(self, x, eps=1e-6):
    scale = torch.clamp(x.abs().max().detach(), min=eps)
    return x / scale
"""
    fix_safety = (
        "`max(c, t)`/`min(c, t)` with a Python number `c` become `torch.clamp(t, min=c)`/`max=c` (through "
        "`t.detach()` when `t` was `.item()`/`float()` of a tensor); with two tensors, torch.maximum/minimum. "
        "Unsafe: the result is a tensor whose dtype and shape follow the tensor. `round(t, n)` -> "
        "`torch.round(t, decimals=n)` is unsafe: the "
        "original raises TypeError. `sum(t)` has no fix. An operand that may be a Python number when the step runs "
        "eagerly (`lr = group[\"lr\"]`, an unannotated input) goes through `torch.as_tensor`, so "
        "`max(lr, group[\"lr_min\"])` becomes `torch.clamp(torch.as_tensor(lr), min=group[\"lr_min\"])` and runs "
        "with a Python-float lr and with a tensor lr; the message then says the comparison runs in float32. "
        "`max(group[\"lr\"] for group in self.param_groups)` or `max([a, b, c])` becomes "
        "`torch.stack([torch.as_tensor(...) ...]).max()` (unsafe: a 0-dim tensor, Python numbers compared as "
        "float32); no fix for a list mixing certain tensors with maybe-Python numbers (a device tensor "
        "stacked with a CPU one fails) or for a generator with nested loops."
    )
    VALID = [
        """
import torch
from torch import nn

class Pool(nn.Module):
    def __init__(self, sizes):
        super().__init__()
        self.width = max(sizes)

    def forward(self, feats, eps: float = 1e-6):
        total = sum(f.mean() for f in feats)
        k = min(self.width, feats[0].shape[-1])
        return torch.clamp(total, min=eps) * k + abs(eps) + abs(feats[0]).mean()


def best_epoch(history):
    return max(history, key=lambda h: h["acc"])
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Pool(nn.Module):
    def forward(self, x, eps: float = 1e-6):
        scale = max(eps, x.abs().max())  # expect: WSC205
        y = x + round(x, 2)  # expect: WSC205
        return self._rows(y) / scale

    def _rows(self, y):
        return sum(y)  # expect: WSC205
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        name = _is_builtin(node.func, self.builtins, ctx)
        if name is None or not node.args:
            return
        values = [arg.value for arg in node.args if arg.keyword is None]
        if name in ("min", "max"):
            converted = [v for v in values if isinstance(v, cst.Call) and _is_conversion(v, ctx)]
            if not any(ctx.is_tensor(v) for v in values) and not converted:
                if not (len(values) == 1 and _iterates_tensors(values[0], ctx)):
                    return
            ctx.report(node, f"`{ctx.code(node)}`: Python's {name}() compares tensor values with bool()",
                       builtin_to_clamp(node, ctx) or builtin_over_iterable(node, ctx), consequence=NO_VALUE)
        elif name == "sum":
            if values and ctx.kind(values[0]).tag is Tag.TENSOR:
                ctx.report(node, f"`{ctx.code(node)}` iterates a tensor in Python",
                           consequence="one addition per row in the graph")
        elif values and ctx.is_tensor(values[0]):
            ctx.report(node, f"`{ctx.code(node)}` applies Python's {name}() to a tensor"
                             + (" (a TypeError: tensors define no __round__)" if name == "round" else ""),
                       builtin_to_torch(node, ctx))


def _is_conversion(call: cst.Call, ctx: RuleContext) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "item":
        return ctx.is_tensor(func.value)
    return bool(_is_builtin(func, {"float", "int"}, ctx)) and bool(call.args) and ctx.is_tensor(call.args[0].value)


def _iterates_tensors(value: cst.BaseExpression, ctx: RuleContext) -> bool:
    kind = ctx.kind(value)
    return kind.tag is Tag.TENSOR or (kind.tag is Tag.SEQUENCE and kind.elem is not None and kind.elem.is_tensor)


class TensorInString(Rule):
    code = "WSC206"
    builtins = ("str", "repr", "format")
    graph_break = "GB0059"  # Failed to trace builtin operator (str)
    construct_graph_breaks = {"f\"": "GB0088", "f'": "GB0088"}  # an f-string raises inside dynamo: Observed exception
    name = "tensor-in-string"
    summary = "Checks for tensors formatted into strings (f-strings, `str(t)`, `.format(t)`, `%`) in traced code."
    why = (
        "Formatting a tensor prints its values, which do not exist while the step is traced: the trace "
        "syncs or fails, and the string is built once, from the first step."
    )
    example = """
def forward(self, x):
    self.last = f"mean={x.mean()}"
    return x
"""
    use_instead = """
def forward(self, x):
    return x   # format values after the step (or in a cstorch.step_closure)
"""
    fix_safety = "No fix. Strings passed to print/logging are WSC701's findings (which has a fix)."
    VALID = [
        """
import torch
from torch import nn

class Block(nn.Module):
    def forward(self, x):
        if x.dim() != 3:
            raise ValueError(f"expected 3 dims, got shape {tuple(x.shape)} ({x.dtype})")
        return x


def report(loss):
    return f"loss={loss:.4f}"
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Block(nn.Module):
    def forward(self, x):
        tag = f"mean={x.mean()}"  # expect: WSC206
        self.notes = "max %s" % x.max()  # expect: WSC206
        return x, tag, "{}".format(x.sum()), str(x)  # expect: WSC206
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if log_call_kind(node, ctx) is not None:
            inside = ctx.scratch.setdefault("host.logged", set())

            class Marker(cst.CSTVisitor):
                def on_visit(self, n: cst.CSTNode) -> bool:
                    inside.add(id(n))
                    return True

            for arg in node.args:
                visit(arg.value, Marker())
            return
        if self._skip(node, ctx):
            return
        func = node.func
        if _is_builtin(func, self.builtins, ctx) and node.args and ctx.is_tensor(node.args[0].value):
            self._report(node, ctx)
        elif isinstance(func, cst.Attribute) and func.attr.value == "format" and \
                isinstance(func.value, (cst.SimpleString, cst.ConcatenatedString)) and \
                any(ctx.is_tensor(arg.value) for arg in node.args):
            self._report(node, ctx)

    def visit_FormattedString(self, node: cst.FormattedString, ctx: RuleContext) -> None:
        if self._skip(node, ctx):
            return
        if any(isinstance(p, cst.FormattedStringExpression) and ctx.is_tensor(p.expression) for p in node.parts):
            self._report(node, ctx)

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx: RuleContext) -> None:
        if not isinstance(node.operator, cst.Modulo) or self._skip(node, ctx):
            return
        if not isinstance(node.left, (cst.SimpleString, cst.ConcatenatedString)):
            return
        right = node.right
        values = [e.value for e in right.elements] if isinstance(right, cst.Tuple) else [right]
        if any(ctx.is_tensor(v) for v in values):
            self._report(node, ctx)

    def _skip(self, node: cst.CSTNode, ctx: RuleContext) -> bool:
        return id(node) in ctx.scratch.get("host.logged", ()) or _in_failure_message(node, ctx)

    def _report(self, node: cst.CSTNode, ctx: RuleContext) -> None:
        ctx.report(node, f"`{ctx.code(node)}` formats a tensor's values into a string", consequence=NO_VALUE)


def _in_failure_message(node: cst.CSTNode, ctx: RuleContext) -> bool:
    """Messages of `raise` statements and of `assert`s are built only when the check before them fails (a
    check on tensor data is its own finding)."""
    key = "host.failure_messages"
    if key not in ctx.scratch:
        parts: set[int] = set()
        for node_ in ctx.walk():
            if type(node_) is cst.Raise and node_.exc is not None:
                parts.update(id(inner) for inner in ctx.walk(node_.exc))
            elif type(node_) is cst.Assert and node_.msg is not None:
                parts.update(id(inner) for inner in ctx.walk(node_.msg))
        ctx.scratch[key] = parts
    return id(node) in ctx.scratch[key]
