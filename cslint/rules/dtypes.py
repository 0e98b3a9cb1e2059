"""WSC6xx: dtypes a WSC graph cannot hold (float64, complex)."""

from __future__ import annotations

import libcst as cst

from cslint.analysis.device_guards import which_branch
from cslint.analysis.kinds import Tag, is_float64
from cslint.fixers.dtypes import double_method_fix, dtype_attribute_fix, python_float_dtype_fix
from cslint.rule_api.context import RuleContext
from cslint.rules.base import Rule

SUPPORTED = "WSC computes in float32 and bfloat16/float16"
FLOAT64_NAMES = frozenset({"torch.float64", "torch.double", "torch.DoubleTensor", "torch.cuda.DoubleTensor"})
COMPLEX_DTYPES = frozenset({"torch.complex32", "torch.complex64", "torch.complex128", "torch.cfloat",
                            "torch.cdouble", "torch.chalf"})
COMPLEX_FUNCTIONS = frozenset({"torch.view_as_complex", "torch.complex", "torch.polar", "torch.stft"})
COMPLEX_METHODS = frozenset({"cfloat", "cdouble", "chalf"})
# Functions that only inspect a dtype: naming float64 there creates nothing.
DTYPE_INSPECTORS = frozenset({"torch.finfo", "torch.iinfo", "torch.promote_types", "torch.can_cast",
                              "torch.set_default_dtype", "torch.get_default_dtype"})


def _inspections(ctx: RuleContext) -> set[int]:
    return ctx.scratch.setdefault("dtype_inspections", set())  # type: ignore[no-any-return]


def _mark_inspection(node: cst.CSTNode, ctx: RuleContext) -> None:
    """`x.dtype == torch.float64`, `torch.finfo(torch.float64)`: dtypes compared or inspected, not used."""
    _inspections(ctx).update(id(n) for n in ctx.walk(node) if type(n) is cst.Attribute)


def _mark_if_inspection(node: cst.CSTNode, ctx: RuleContext) -> None:
    if isinstance(node, cst.Comparison):
        _mark_inspection(node, ctx)
    elif isinstance(node, cst.Call):
        qualified = ctx.resolve(node.func)
        if qualified in DTYPE_INSPECTORS - {"torch.set_default_dtype"} or qualified in ("isinstance",):
            _mark_inspection(node, ctx)


def _guarded(ctx: RuleContext, code: str) -> set[int]:
    """The nodes under a device or dtype guard (device_guards.py), for the rule `code`."""
    return ctx.scratch.setdefault(f"dtype_guarded:{code}", set())  # type: ignore[no-any-return]


def _mark_guarded(node: cst.If | cst.IfExp, ctx: RuleContext, code: str, dtypes: frozenset[str]) -> None:
    """The branch of `node` that runs only off the device, or only for a tensor already of one of `dtypes`
    (`if x.device.type == "cpu": x = x.double()`, `if x.dtype == torch.float64:`), makes none of them in
    the traced graph."""
    branch = which_branch(node.test, ctx.resolve, dtypes)
    if branch is None:
        return
    region = getattr(node, branch)
    if region is not None:
        _guarded(ctx, code).update(id(n) for n in ctx.walk(region))


TORCH_DTYPES = frozenset({
    "float16", "half", "bfloat16", "float32", "float", "float64", "double", "int8", "int16", "short", "int32", "int",
    "int64", "long", "uint8", "bool", "complex64", "complex128", "cfloat", "cdouble",
})


def _mark_if_dtype_collection(node: cst.Tuple | cst.List | cst.Set, ctx: RuleContext) -> None:
    """`dtypes=(torch.float32, torch.float64)`: several dtypes named together are a set to test against
    (what a fused or foreach path supports), not a dtype any tensor is made with."""
    names = [ctx.resolve(e.value) or "" for e in node.elements]
    if len(names) >= 2 and all(n.startswith("torch.") and n[len("torch."):] in TORCH_DTYPES for n in names):
        _mark_inspection(node, ctx)


def _names_float64(node: cst.CSTNode, ctx: RuleContext) -> bool:
    """`torch.float64` is written in `node` (and reported there)."""
    return any(type(n) is cst.Attribute and ctx.resolve(n) in FLOAT64_NAMES for n in ctx.walk(node))


def _bindings(ctx: RuleContext) -> list[tuple[set[str], cst.BaseExpression]]:
    """The names each assignment of this function binds, with the value bound."""
    found: list[tuple[set[str], cst.BaseExpression]] | None = ctx.scratch.get("bindings")
    if found is None:
        found = []
        for stmt in ctx.walk():
            targets: list[cst.BaseExpression]
            if isinstance(stmt, cst.Assign):
                targets = [t.target for t in stmt.targets]
            elif isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
                targets = [stmt.target]
            else:
                continue
            assert stmt.value is not None
            found.append(({n.value for t in targets for n in ctx.walk(t) if type(n) is cst.Name}, stmt.value))
        ctx.scratch["bindings"] = found
    return found


def _float64_locals(ctx: RuleContext) -> set[str]:
    """Names this function binds to a value that writes `torch.float64` (reported where it is written)."""
    return {name for names, value in _bindings(ctx) if _names_float64(value, ctx) for name in names}


def _is_module_constant(node: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A float64 tensor named by a module-level name this function does not bind (`_COEFFS`)."""
    return type(node) is cst.Name and is_float64(ctx.kind(node)) and node.value not in ctx.analysis.params \
        and all(node.value not in names for names, _ in _bindings(ctx))


class Float64(Rule):
    code = "WSC601"
    name = "float64-dtype"
    summary = ("Checks for `torch.float64`/`torch.double`, `.double()` and `dtype=float` (float64 to torch) "
               "in traced code.")
    why = (
        f"{SUPPORTED}. A graph with double-precision tensors does not compile for the wafer; moving such "
        "tensors to the host or emulating them costs far more than the precision buys."
    )
    example = """
def forward(self, logits, labels):
    log_probs = logits.double().log_softmax(-1)
    return F.nll_loss(log_probs, labels).to(torch.float64)
"""
    use_instead = """
def forward(self, logits, labels):
    log_probs = logits.float().log_softmax(-1)
    return F.nll_loss(log_probs, labels).to(torch.float32)
"""
    fix_safety = "Unsafe: float32 replaces float64, so results change in the low-order bits (or more, for long sums)."
    VALID = [
        """
import torch
from torch import nn

class Head(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim).double()
        self.eps = torch.finfo(torch.float64).eps

    def forward(self, x):
        if x.dtype == torch.float64:
            x = x.float()
        tiny = torch.finfo(torch.float64).tiny
        return self.proj(x.to(torch.float32)) + x.half().float() + tiny
""",
    ]
    INVALID = [
        """
import torch
import torch.nn.functional as F
from torch import nn

class StableLoss(nn.Module):
    def forward(self, logits, labels):
        log_probs = logits.double().log_softmax(-1)  # expect: WSC601
        weights = torch.ones(labels.shape, dtype=torch.float64)  # expect: WSC601
        scale = torch.tensor(0.5, dtype=float)  # expect: WSC601
        loss = F.nll_loss(log_probs, labels, reduction="none") * weights * scale
        return loss.mean().to(torch.double)  # expect: WSC601
""",
    ]

    def visit_Comparison(self, node: cst.Comparison, ctx: RuleContext) -> None:
        _mark_if_inspection(node, ctx)

    def visit_Tuple(self, node: cst.Tuple, ctx: RuleContext) -> None:
        _mark_if_dtype_collection(node, ctx)

    def visit_List(self, node: cst.List, ctx: RuleContext) -> None:
        _mark_if_dtype_collection(node, ctx)

    def visit_Set(self, node: cst.Set, ctx: RuleContext) -> None:
        _mark_if_dtype_collection(node, ctx)

    def visit_If(self, node: cst.If, ctx: RuleContext) -> None:
        _mark_guarded(node, ctx, self.code, FLOAT64_NAMES)

    def visit_IfExp(self, node: cst.IfExp, ctx: RuleContext) -> None:
        """`torch.float64 if torch.get_default_dtype() == torch.float64 else torch.float32` follows the
        default dtype: it makes float64 only where everything already is."""
        _mark_guarded(node, ctx, self.code, FLOAT64_NAMES)
        if any(type(n) is cst.Call and ctx.resolve(n.func) == "torch.get_default_dtype"
               for n in ctx.walk(node.test)):
            _mark_inspection(node, ctx)

    def visit_Attribute(self, node: cst.Attribute, ctx: RuleContext) -> None:
        qualified = ctx.resolve(node)
        if qualified not in FLOAT64_NAMES or id(node) in _inspections(ctx) or id(node) in _guarded(ctx, self.code):
            return
        ctx.report(node, f"`{ctx.code(node)}` makes float64 tensors: {SUPPORTED}",
                   dtype_attribute_fix(node))

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        _mark_if_inspection(node, ctx)
        if id(node) in _guarded(ctx, self.code):
            return
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "double" and not node.args \
                and ctx.resolve(func) is None and ctx.kind(func.value).tag in (Tag.TENSOR, Tag.OBJECT):
            ctx.report(node, f"`{ctx.code(node)}` converts to float64: {SUPPORTED}", double_method_fix(node))
            return
        for value in self._python_float_dtypes(node, ctx):
            ctx.report(value, f"`{ctx.code(node)}` passes `float` as a dtype, read as float64: {SUPPORTED}",
                       python_float_dtype_fix(value, ctx))
        self._float64_through_a_value(node, ctx)

    def _float64_through_a_value(self, node: cst.Call, ctx: RuleContext) -> None:
        """`torch.as_tensor(tol, dtype=self.dtype)`, `t.to(time_dtype)` with the dtype a float64 value made outside
        this function (an attribute, a parameter's default, a module-level constant), and `_COEFFS.to(x.device)`
        of a float64 tensor made at import: float64 made or brought into the traced graph here. A dtype bound in
        this function is reported where `torch.float64` is written."""
        func = node.func
        method = func.attr.value if isinstance(func, cst.Attribute) and ctx.resolve(func) is None \
            and ctx.is_tensor(func.value) else None
        if method is None and not (ctx.resolve(func) or "").startswith("torch."):
            return
        for arg in node.args:
            keyword = arg.keyword.value if arg.keyword is not None else None
            value = arg.value
            is_dtype = keyword == "dtype" or keyword is None and method in ("to", "type")
            if not is_dtype or not is_float64(ctx.kind(value)) or ctx.kind(value).tag is not Tag.STATIC:
                continue
            if _names_float64(value, ctx) or type(value) is cst.Name and value.value in _float64_locals(ctx):
                return
            ctx.report(value, f"`{ctx.code(value)}` is torch.float64: `{ctx.code(node)}` makes float64 tensors: "
                       f"{SUPPORTED}")
            return
        if method in ("to", "cuda") and is_float64(ctx.kind(node)) and type(func) is cst.Attribute \
                and _is_module_constant(func.value, ctx):
            ctx.report(node, f"`{ctx.code(func.value)}` is a float64 tensor made at import: `{ctx.code(node)}` "
                       f"brings it into the traced graph: {SUPPORTED}")

    def _python_float_dtypes(self, node: cst.Call, ctx: RuleContext) -> list[cst.Name]:
        qualified = ctx.resolve(node.func)
        func = node.func
        method = func.attr.value if isinstance(func, cst.Attribute) and qualified is None \
            and ctx.is_tensor(func.value) else None
        if method is None and not (qualified or "").startswith("torch."):
            return []
        found = []
        for arg in node.args:
            is_dtype = (arg.keyword is not None and arg.keyword.value == "dtype") or (
                arg.keyword is None and method in ("to", "type") and arg is node.args[0])
            if is_dtype and isinstance(arg.value, cst.Name) and arg.value.value == "float" \
                    and ctx.kind(arg.value).tag is Tag.STATIC:
                found.append(arg.value)
        return found


class ComplexDtype(Rule):
    code = "WSC602"
    functions = ("torch.view_as_complex", "torch.complex", "torch.polar", "torch.stft", "torch.fft.")
    in_libraries = True
    name = "complex-dtype"
    summary = ("Checks for complex dtypes (`torch.complex64`, `.cfloat()` ...) and ops that produce complex "
               "tensors (`torch.view_as_complex`, `torch.polar`, `torch.complex`, `torch.fft.*`, `torch.stft`) "
               "in traced code.")
    why = f"{SUPPORTED}; complex tensors have no representation in a WSC graph."
    example = """
def apply_rotary(x, freqs):
    x_c = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    rotation = torch.polar(torch.ones_like(freqs), freqs)
    return torch.view_as_real(x_c * rotation).flatten(-2)
"""
    use_instead = """
def apply_rotary(x, cos, sin):
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
"""
    fix_safety = "No fix: the computation has to be written with real tensors (pairs of real and imaginary parts)."
    VALID = [
        """
import torch
from torch import nn

class Rotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        freqs = torch.polar(torch.ones(dim // 2), torch.arange(dim // 2).float())
        self.register_buffer("cos", freqs.real)
        self.register_buffer("sin", freqs.imag)

    def forward(self, x):
        if x.is_complex() or x.dtype == torch.complex64:
            x = x.real
        x1, x2 = x[..., ::2], x[..., 1::2]
        return torch.stack((x1 * self.cos - x2 * self.sin, x1 * self.sin + x2 * self.cos), dim=-1).flatten(-2)
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Rotary(nn.Module):
    def forward(self, x, freqs):
        pairs = x.float().reshape(*x.shape[:-1], -1, 2)
        x_c = torch.view_as_complex(pairs)  # expect: WSC602
        rotation = torch.polar(torch.ones_like(freqs), freqs)  # expect: WSC602
        spectrum = torch.fft.rfft(x, dim=-1)  # expect: WSC602
        phase = torch.zeros(4, dtype=torch.cfloat)  # expect: WSC602
        return torch.view_as_real(x_c * rotation).flatten(-2), spectrum.abs(), phase
""",
    ]

    def visit_Comparison(self, node: cst.Comparison, ctx: RuleContext) -> None:
        _mark_if_inspection(node, ctx)

    def visit_If(self, node: cst.If, ctx: RuleContext) -> None:
        _mark_guarded(node, ctx, self.code, COMPLEX_DTYPES)

    def visit_IfExp(self, node: cst.IfExp, ctx: RuleContext) -> None:
        _mark_guarded(node, ctx, self.code, COMPLEX_DTYPES)

    def visit_Attribute(self, node: cst.Attribute, ctx: RuleContext) -> None:
        if ctx.resolve(node) in COMPLEX_DTYPES and id(node) not in _inspections(ctx) \
                and id(node) not in _guarded(ctx, self.code):
            ctx.report(node, f"`{ctx.code(node)}` makes complex tensors: {SUPPORTED}")

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        _mark_if_inspection(node, ctx)
        if id(node) in _guarded(ctx, self.code):
            return
        func = node.func
        qualified = ctx.resolve(func)
        complex_op = qualified in COMPLEX_FUNCTIONS or (qualified or "").startswith("torch.fft.")
        complex_method = qualified is None and isinstance(func, cst.Attribute) \
            and func.attr.value in COMPLEX_METHODS and ctx.is_tensor(func.value)
        if complex_op or complex_method:
            ctx.report(node, f"`{ctx.code(node)}` computes with complex tensors: {SUPPORTED}")
        else:
            ctx.report_library_effects(node, self.code, "computes with complex tensors", SUPPORTED)
