"""WSC3xx: optimizer state created inside `step()`, and Python-number step counters."""

from __future__ import annotations

import ast
from functools import lru_cache
from typing import TYPE_CHECKING

import libcst as cst

from cslint.analysis.signatures import first_param
from cslint.analysis.kinds import Tag
from cslint.analysis.walk import iter_nodes
from cslint.fixers.preinitialize import (
    SKIPPED_METHODS, ClassFix, _walk, is_emptiness_test, is_lazy_guard, is_state, lazy_guards,
    none_test_name, preinitialize_fix, state_aliases, state_writes,
)
from cslint.analysis.syntax import string_key
from cslint.fixers.state_entries import preinitialized_entry
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix
from cslint.rules.base import Rule

if TYPE_CHECKING:
    from cslint.analysis.index import ClassInfo
    from cslint.analysis.traced import TracedFunction

NO_IDENTITY = "the trace re-creates it every step"


def in_optimizer_step(ctx: RuleContext) -> bool:
    """Is this function `step` of an Optimizer subclass, or called from one? (A step function that calls
    `optimizer.step()` may be the root of the chain, so look at every function along it.)"""
    current: TracedFunction | None = ctx.traced
    while current is not None:
        first = first_param(current.func.node) if current.func.cls is not None else None
        if first is not None and current.params.get(first) is not None and current.params[first].role == "optimizer":
            return True
        current = current.parent
    return False


def _nearest_class(ctx: RuleContext) -> ClassInfo | None:
    """The class of the closest method up the call chain (the optimizer whose step calls this helper)."""
    current = ctx.traced.parent
    while current is not None:
        if current.func.cls is not None:
            return current.func.cls
        current = current.parent
    return None


def _state_aliases(ctx: RuleContext) -> set[str]:
    """`state_aliases` of the traced function, worked out once per check (it walks the whole function, and
    every `if` asks)."""
    aliases = ctx.scratch.get("wsc3_aliases")
    if aliases is None:
        aliases = ctx.scratch["wsc3_aliases"] = state_aliases(ctx.traced.func.node)
    return aliases


def _is_state_expr(ctx: RuleContext, expr: cst.BaseExpression) -> bool:
    aliases = _state_aliases(ctx)
    return is_state(expr, aliases) or (ctx.kind(expr).tag is Tag.OBJECT and ctx.kind(expr).role == "opt_state")


def _binds_tensor(ctx: RuleContext, body: cst.BaseSuite, name: str) -> bool:
    for stmt in body.body if isinstance(body, cst.IndentedBlock) else ():
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign) and ctx.is_tensor(small.value) and any(
                        isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets):
                    return True
    return False


def is_guard(ctx: RuleContext, node: cst.If) -> bool:
    if is_emptiness_test(node.test, lambda e: _is_state_expr(ctx, e)):
        return True
    name = none_test_name(node.test)
    if name is None or not _binds_tensor(ctx, node.body, name):
        return False
    # `norm_sq = None` before the loop, then `if norm_sq is None: norm_sq = p.new_zeros(())`: an accumulator
    # the step makes afresh every time, not state -- unless the guard also stores it into the state
    return not _starts_as_none(ctx, name) or _stores_state(ctx, node.body)


def _starts_as_none(ctx: RuleContext, name: str) -> bool:
    key = f"wsc3_none_locals:{id(ctx.traced.func.node)}"
    if key not in ctx.scratch:
        func = ctx.traced.func.node
        # an optional argument (`source: Tensor | None = None`) is the caller's, given afresh every call
        optional = {p.name.value for p in (*func.params.params, *func.params.kwonly_params)
                    if isinstance(p.default, cst.Name) and p.default.value == "None"}
        ctx.scratch[key] = optional | {target.value for n in iter_nodes(func)
                                       for target in _targets_bound_to_none(n) if isinstance(target, cst.Name)}
    return name in ctx.scratch[key]


def _targets_bound_to_none(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """What `x = None` and `x: Tensor | None = None` bind."""
    if isinstance(node, (cst.Assign, cst.AnnAssign)) and isinstance(node.value, cst.Name) \
            and node.value.value == "None":
        return [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
    return []


def _stores_state(ctx: RuleContext, body: cst.BaseSuite) -> bool:
    return any(isinstance(n, cst.Assign) and any(
        isinstance(t.target, cst.Subscript) and _is_state_expr(ctx, t.target.value) for t in n.targets)
        for n in iter_nodes(body))


def _guarded_nodes(ctx: RuleContext) -> set[int]:
    """ids of the statements inside this function's lazy guards."""
    if "wsc3_guarded" not in ctx.scratch:
        inside: set[int] = set()

        class Marker(cst.CSTVisitor):
            def visit_SimpleStatementLine(self, n: cst.SimpleStatementLine) -> None:
                inside.update(id(s) for s in n.body)

        for stmt, _ in _walk(ctx.traced.func.node.body.body, ()):  # type: ignore[arg-type]
            if isinstance(stmt, cst.If) and is_guard(ctx, stmt):
                stmt.body.visit(Marker())
        ctx.scratch["wsc3_guarded"] = inside
    return ctx.scratch["wsc3_guarded"]  # type: ignore[no-any-return]


def shared_class_fix(ctx: RuleContext) -> ClassFix | None:
    """One preinitialize fix per optimizer class, shared by all of its findings. Kept with the class's
    module tree (`tree_data`), so it goes when the tree is given back, and a new tree gets its own."""
    cls = ctx.traced.func.cls
    if cls is None:
        return None
    key = f"preinitialize fix of {cls.qualname}"
    fixes = cls.module.tree_data
    if key not in fixes:
        torch_name, imports = ctx.torch_name()
        fixes[key] = preinitialize_fix(cls, torch_name, imports)
    return fixes[key]  # type: ignore[no-any-return]


def known_state_keys(ctx: RuleContext) -> set[str]:
    """Keys the class creates outside of step: in preinitialize/__init__, or in the guards WSC301 reports."""
    cls = ctx.traced.func.cls or _nearest_class(ctx)
    if cls is None:
        return set()
    keys: set[str] = set()
    for name, method in cls.methods.items():
        aliases = state_aliases(method.node)
        if name in SKIPPED_METHODS:
            writes = state_writes(method.node, aliases)
        else:
            writes = [w for guard, _ in lazy_guards(method.node) for w in state_writes(guard.body, aliases)]
        keys.update(k for target, _ in writes if (k := string_key(target)) is not None)
    return keys


class LazyOptimizerState(Rule):
    code = "WSC301"
    target_advice = {"rdu": "`trace_graph(optim=...)` initialises optimizer state on the device before tracing."}
    name = "lazy-optimizer-state"
    summary = "Checks for optimizer state created the first time `step()` runs, behind a guard."
    why = (
        "A WSC step is traced once and replayed. State such as `exp_avg` or `momentum_buffer` is a weight "
        "kept on the device between steps; when `step()` creates it under `if len(state) == 0`, it has no "
        "identity before the trace, and the trace re-initialises it on every step. Cerebras calls "
        "`preinitialize()` before tracing so every state tensor exists first."
    )
    example = """
def step(self):
    for group in self.param_groups:
        for p in group["params"]:
            state = self.state[p]
            if len(state) == 0:
                state["exp_avg"] = torch.zeros_like(p)
            state["exp_avg"].lerp_(p.grad, 0.1)
"""
    use_instead = """
def __init__(self, params, lr=1e-3):
    super().__init__(params, dict(lr=lr))
    self.preinitialize()

def preinitialize(self):
    for group in self.param_groups:
        for p in group["params"]:
            state = self.state[p]
            state["exp_avg"] = torch.zeros_like(p)

def step(self):
    for group in self.param_groups:
        for p in group["params"]:
            state = self.state[p]
            state["exp_avg"].lerp_(p.grad, 0.1)
"""
    fix_safety = (
        "Safe when every initial value depends only on the parameter's shape and dtype (`zeros_like(p)`; "
        "`zeros_like(grad)` becomes `zeros_like(p)`). Unsafe when it copies values: `buf = grad.clone()` "
        "(or `copy.deepcopy(grad)`) becomes a zero buffer, equal to the original only when the update that "
        "follows starts from zero (SGD with `dampening == 0`); values read from the parameter may change "
        "before the first step "
        "(a checkpoint loaded after the optimizer was built). Python-number state becomes a float32 tensor."
        " A guard with an else branch keeps that branch in `step`; when it also rebinds a name the creating "
        "branch left alone (SWATS's `else: buf = state[\"momentum_buffer\"]; buf.mul_(b).add_(grad); grad = buf`), "
        "an in-place update through that name after the guard (`grad.mul_(1 - b)`) now also changes the state "
        "on the step that created it, so the state differs from the original's from then on: the fix says so."
        " Unsafe when `step` reads empty state as a first-step flag (`first = len(state) == 0` before the "
        "guard): once preinitialize() has created the state that flag would always be False, so it is kept "
        "as `state[\"step\"] == 0` on a counter the guard created at 0 and the step increments after reading "
        "the flag (a tensor test, which WSC101 then reports); without such a counter there is no fix."
        " The group loop may be `for group in self.param_groups` or `for group, x in "
        "zip(self.param_groups, ...)` (the guard must not read `x`); the guard may fill state in a loop of "
        "its own (a dict of buffers, one per coefficient). A guard that tests `grad.is_sparse` tests the "
        "parameter's layout in preinitialize() (unsafe: a dense parameter with sparse gradients, as "
        "nn.Embedding(sparse=True) makes, gets no sparse-only state)."
        " No fix when the guard sits outside the `for group ...: for p in group['params']:` loop nest of "
        "the class's own methods, or the class has no `__init__`."
    )
    VALID = [
        """
import torch
from torch.optim import Optimizer

class Momentum(Optimizer):
    def __init__(self, params, lr=0.1, momentum=0.9):
        super().__init__(params, dict(lr=lr, momentum=momentum))
        self.preinitialize()

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["momentum_buffer"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                buf = self.state[p]["momentum_buffer"]
                buf.mul_(group["momentum"]).add_(p.grad)
                p.sub_(group["lr"] * buf)
""",
    ]
    INVALID = [
        """
import torch
from torch.optim import Optimizer

class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999)):
        super().__init__(params, dict(lr=lr, betas=betas))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:  # expect: WSC301
                    state["exp_avg"] = torch.zeros_like(p)
                    state["exp_avg_sq"] = torch.zeros_like(p)
                state["exp_avg"].lerp_(p.grad, 1 - beta1)
                state["exp_avg_sq"].mul_(beta2).addcmul_(p.grad, p.grad, value=1 - beta2)
                p.sub_(group["lr"] * state["exp_avg"] / (state["exp_avg_sq"].sqrt() + 1e-8))
""",
        """
import torch
from torch.optim import Optimizer

class SGD(Optimizer):
    def __init__(self, params, lr=0.1, momentum=0.9, dampening=0.0):
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                d_p = p.grad
                param_state = self.state[p]
                if "momentum_buffer" not in param_state:  # expect: WSC301
                    buf = param_state["momentum_buffer"] = torch.clone(d_p).detach()
                else:
                    buf = param_state["momentum_buffer"]
                    buf.mul_(group["momentum"]).add_(d_p, alpha=1 - group["dampening"])
                buf = self._maybe_buffer(p)
                if buf is None:  # expect: WSC301
                    buf = torch.zeros_like(p)
                    self.state[p]["slow"] = buf
                p.sub_(group["lr"] * buf)

    def _maybe_buffer(self, p):
        return self.state[p].get("slow")
""",
    ]

    def visit_If(self, node: cst.If, ctx: RuleContext) -> None:
        if not in_optimizer_step(ctx) or not is_guard(ctx, node):
            return
        class_fix = shared_class_fix(ctx)
        aliases = _state_aliases(ctx)
        fixable = class_fix is not None and is_lazy_guard(node, aliases)
        ctx.report(node.test, f"`if {ctx.code(node.test)}` creates optimizer state in step(): {NO_IDENTITY}",
                   class_fix.fix if fixable and class_fix else None)


class OptimizerStateCreatedInStep(Rule):
    code = "WSC302"
    target_advice = {"rdu": "`trace_graph(optim=...)` initialises optimizer state on the device before tracing."}
    name = "optimizer-state-created-in-step"
    summary = "Checks for new optimizer state entries that `step()` creates without a guard (or with `setdefault`)."
    why = (
        "An entry `step()` assigns that nothing created before (no `preinitialize()`, no `__init__`) is "
        "new state: before the first step it does not exist, so it has no identity in the traced graph "
        "and is not carried from one step to the next."
    )
    example = """
def step(self):
    for group in self.param_groups:
        for p in group["params"]:
            buf = self.state[p].setdefault("momentum_buffer", torch.zeros_like(p))
            buf.mul_(0.9).add_(p.grad)
"""
    use_instead = """
def preinitialize(self):
    for group in self.param_groups:
        for p in group["params"]:
            self.state[p]["momentum_buffer"] = torch.zeros_like(p)

def step(self):
    for group in self.param_groups:
        for p in group["params"]:
            buf = self.state[p]["momentum_buffer"]
            buf.mul_(0.9).add_(p.grad)
"""
    fix_safety = (
        "An entry stored on every step (`state[\"trust_ratio\"] = trust_ratio` directly in the loop over "
        "`group[\"params\"]`) whose value is certainly zero-dimensional (a full reduction such as a norm, "
        "or elementwise ops and torch.where over such values) is created as `torch.zeros((), "
        "device=p.device)` in the class's preinitialize() and the step copies into it "
        "(`state[\"trust_ratio\"].copy_(trust_ratio)`); unsafe: the entry exists, as zero, before the first "
        "step. Offered once the class has a preinitialize() (WSC301's fix generates one). An entry started "
        "from the gradient on the first step only (`if state[\"step\"] == 0: state[\"pre_grad\"] = "
        "grad.clone()`, Adan) is created as `torch.zeros_like(p)` in preinitialize() and the step copies "
        "into it where the condition holds (`state[\"pre_grad\"].copy_(torch.where(state[\"step\"] == 0, "
        "grad, state[\"pre_grad\"]))`); unsafe: the entry exists, as zeros, before the first step. Other entries "
        "(`setdefault`, a value whose shape is not known, a store under a condition) have no fix: where "
        "they should be created, and from what, is for a person to decide."
    )
    VALID = [
        """
import torch
from torch.optim import Optimizer

class Lookahead(Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["slow"] = p.detach().clone()

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                state["slow"] = state["slow"] + 0.5 * (p - state["slow"])
                p.copy_(state["slow"])
""",
    ]
    INVALID = [
        """
import torch
from torch.optim import Optimizer

class SGD(Optimizer):
    def __init__(self, params, lr=0.1, momentum=0.9):
        super().__init__(params, dict(lr=lr, momentum=momentum))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                buf = state.setdefault("momentum_buffer", torch.zeros_like(p))  # expect: WSC302
                buf.mul_(group["momentum"]).add_(p.grad)
                state["last_update"] = group["lr"] * buf  # expect: WSC302
                p.sub_(state["last_update"])
""",
    ]

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        if not in_optimizer_step(ctx) or id(node) in _guarded_nodes(ctx):
            return
        for target in node.targets:
            t = target.target
            if isinstance(t, cst.Subscript) and _is_state_expr(ctx, t.value):
                key = string_key(t)
                if key is not None and key not in known_state_keys(ctx):
                    ctx.report(t, f"`{ctx.code(t)}` creates an optimizer state entry in step(): {NO_IDENTITY}",
                               preinitialized_entry(node, t, ctx))

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "setdefault" and in_optimizer_step(ctx) \
                and _is_state_expr(ctx, func.value):
            ctx.report(node, f"`{ctx.code(node)}` creates optimizer state the first time step() runs: {NO_IDENTITY}")


class PythonStepCounter(Rule):
    code = "WSC303"
    name = "python-step-counter"
    summary = ("Checks for optimizer step counters kept as Python numbers (`state[\"step\"] += 1` on an int) "
               "whose value the file reads (a count nothing reads is left to WSC702).")
    why = (
        "A Python number is a constant of the traced graph: the value of the first step (`beta ** 1`) is "
        "frozen into every replay, or each new value changes the graph and forces a recompile. Counters "
        "must be tensors so the increment and what is computed from it (bias corrections) are in the graph."
    )
    example = """
if len(state) == 0:
    state["step"] = 0
state["step"] += 1
bias_correction = 1 - beta1 ** state["step"]
"""
    use_instead = """
# in preinitialize():
state["step"] = torch.tensor(0.0, dtype=torch.float32, device=p.device)
# in step():
state["step"] += 1
bias_correction = 1 - torch.pow(beta1, state["step"])
"""
    fix_safety = (
        "Fixed together with the lazy state that creates the counter (WSC301): the counter becomes a "
        "float32 tensor in preinitialize() and its uses tensor ops (`torch.pow`, `torch.sqrt`); bias "
        "corrections are then computed in float32 instead of float64, so results differ in the last bits. "
        "`1 - beta ** step` becomes `-torch.expm1(torch.log1p(torch.as_tensor(beta - 1)) * step)`: "
        "`1 - torch.pow(beta, step)` in float32 is off by 2e-5 (relative) for beta 0.999, the rewrite by "
        "less than 2e-7; so does `1 - beta2_t` where `beta2_t = beta2 ** step` is bound once (RAdam's "
        "rectification term, `rho_inf - 2 * step * beta2_t / (1 - beta2_t)`, moves by 0.5% at step 6 with the "
        "float32 subtraction). "
        "Counters in `param_groups` or attributes of the optimizer are reported without a fix."
    )
    VALID = [
        """
import torch
from torch.optim import Optimizer

class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999)):
        super().__init__(params, dict(lr=lr, betas=betas))
        self.preinitialize()
        self.steps_taken = 0

    def preinitialize(self):
        for group in self.param_groups:
            for p in group["params"]:
                self.state[p]["step"] = torch.tensor(0.0)
                self.state[p]["exp_avg"] = torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            beta1, _ = group["betas"]
            for p in group["params"]:
                state = self.state[p]
                state["step"] += 1
                state["exp_avg"].lerp_(p.grad, 1 - beta1)
                p.sub_(group["lr"] * state["exp_avg"] / (1 - torch.pow(beta1, state["step"])))

    def train_loop(self, batches):
        for _ in batches:
            self.steps_taken += 1
""",
        """
import torch
from torch.optim import Optimizer

class SGD(Optimizer):
    def __init__(self, params, lr=1e-3):
        super().__init__(params, dict(lr=lr))
        self.calls = 0

    @torch.no_grad()
    def step(self):
        self.calls += 1  # a count nothing reads: no value of it reaches the graph
        for group in self.param_groups:
            for p in group["params"]:
                p.sub_(p.grad * group["lr"])
""",
    ]
    INVALID = [
        """
import math
import torch
from torch.optim import Optimizer

class Adam(Optimizer):
    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999)):
        super().__init__(params, dict(lr=lr, betas=betas))
        self.updates = 0

    @torch.no_grad()
    def step(self):
        self.updates += 1  # expect: WSC303
        for group in self.param_groups:
            group["step"] = group.get("step", 0)
            group["step"] += 1  # expect: WSC303
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p)
                state["step"] += 1  # expect: WSC303
                state["exp_avg"].lerp_(p.grad, 1 - beta1)
                decay = 1 / (1 + 1e-4 * self.updates * group["step"])
                p.sub_(decay * group["lr"] * math.sqrt(1 - beta2 ** state["step"]) * state["exp_avg"])
""",
    ]

    def visit_AugAssign(self, node: cst.AugAssign, ctx: RuleContext) -> None:
        where = python_counter(node, ctx)
        if where is None:
            return
        target = node.target
        key = string_key(target) if isinstance(target, cst.Subscript) else None
        fix: Fix | None = None
        if where == "optimizer state":
            class_fix = shared_class_fix(ctx)
            if class_fix is not None and key is not None and key in class_fix.counters:
                fix = class_fix.fix
        name = target.attr.value if isinstance(target, cst.Attribute) else key
        if name is not None and not _is_read(ctx.module_text(), name, where):
            return  # a count nothing in the file reads (`self.steps_taken += 1`) puts no value in the graph
        ctx.report(target, f"`{ctx.code(target)}` is a Python-number step counter in {where}: frozen into the graph",
                   fix)


def python_counter(node: cst.AugAssign, ctx: RuleContext) -> str | None:
    """`state["step"] += 1` on a Python number in an optimizer's step: where the counter is kept ("optimizer
    state", "a param group", "an optimizer attribute"), else None (a tensor counter, another increment)."""
    if not in_optimizer_step(ctx) or ctx.is_tensor(node.target) or not isinstance(node.value, (cst.Integer,
                                                                                             cst.Float)):
        return None
    target = node.target
    if isinstance(target, cst.Subscript) and _is_state_expr(ctx, target.value):
        return "optimizer state"
    if isinstance(target, cst.Subscript) and ctx.kind(target.value).role == "group":
        return "a param group"
    if isinstance(target, cst.Attribute) and ctx.kind(target.value).role == "optimizer":
        return "an optimizer attribute"
    return None


def made_by_first_step(node: cst.If, ctx: RuleContext) -> bool:
    """`if len(state) == 0:` in an optimizer's step that fills the state the first time the step runs: the class
    does not create that state before (its `__init__`, a method `__init__` calls, or a `preinitialize()`, which
    the Cerebras contract has the framework call before the first step)."""
    if not in_optimizer_step(ctx) or not is_guard(ctx, node):
        return False
    cls = ctx.traced.func.cls or _nearest_class(ctx)
    if cls is None:
        return True
    before: set[str | None] = set()
    for klass in _class_and_local_bases(cls):
        if "preinitialize" in klass.methods:
            return False
        init = klass.methods.get("__init__")
        if init is None:
            continue
        for method in [init, *(klass.methods[m] for m in _methods_called(init.node) if m in klass.methods)]:
            writes = state_writes(method.node, state_aliases(method.node))
            before.update(string_key(target) for target, _ in writes)
    if not before:
        return True
    aliases = _state_aliases(ctx)
    made = {string_key(target) for target, _ in state_writes(node.body, aliases)}
    # an emptiness test (`len(state) == 0`) is false once anything exists; a key test (`"k" not in state`,
    # `state.get("k") is None`) once that key does
    by_key = isinstance(node.test, cst.Comparison) and isinstance(node.test.comparisons[0].operator,
                                                                  (cst.NotIn, cst.Is))
    return by_key and not made <= before


def _class_and_local_bases(cls: ClassInfo) -> list[ClassInfo]:
    """The class and the bases defined in its own file (a rule does not see the project's other files)."""
    local = {c.qualname: c for c in cls.module.classes.values()}
    found: list[ClassInfo] = []
    stack = [cls]
    while stack:
        klass = stack.pop(0)
        if klass not in found:
            found.append(klass)
            stack.extend(local[b] for b in klass.bases if b in local)
    return found


def _methods_called(method: cst.FunctionDef) -> set[str]:
    """`self.<name>(...)` calls in a method (`__init__` calling `self._init_state()`)."""
    return {n.func.attr.value for n in iter_nodes(method) if isinstance(n, cst.Call)
            and isinstance(n.func, cst.Attribute) and isinstance(n.func.value, cst.Name)
            and n.func.value.value == "self"}


# Reads that cannot be of the counter: the optimizer state's `state['step']` is not the param group's
# `group['step']` (a key under a container plainly the other one), an attribute read (`super().step()`) is
# not a dict entry, a subscript (`x['updates']`) not an attribute.
_NOT_READ_BY = {"optimizer state": frozenset({"group", "attribute"}),
                "a param group": frozenset({"state", "attribute"}),
                "an optimizer attribute": frozenset({"group", "state", "key"})}


def _is_read(source: str, name: str, where: str) -> bool:
    reads = _read_names(source)
    if reads is None:  # a file that does not parse: it may read anything
        return True
    other = _NOT_READ_BY.get(where, frozenset())
    return any(how not in other for how in reads.get(name, ()))


@lru_cache(maxsize=64)
def _read_names(source: str) -> dict[str, frozenset[str]] | None:
    """Attribute names and string keys the file reads (`x.name`, `x["name"]`, `x.get("name")` as values),
    where a counter's value could reach a computation, each with how it is read: "attribute" (`x.name`),
    "group" or "state" (a key under a container whose text names one and not the other: `group["step"]`,
    `state.get("step")`), "key" (a key under another container), "" (a call given the name: `getattr`)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names: dict[str, set[str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            names.setdefault(node.attr, set()).add("attribute")
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and \
                isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            names.setdefault(node.slice.value, set()).add(_container(node.value) or "key")
        elif isinstance(node, ast.Call):  # `group.get("step", 0)`, `getattr(self, "updates")`
            container = _container(node.func.value) if isinstance(node.func, ast.Attribute) else ""
            for a in node.args[:2]:
                if isinstance(a, ast.Constant) and isinstance(a.value, str):
                    names.setdefault(a.value, set()).add(container)
    return {name: frozenset(containers) for name, containers in names.items()}


def _container(node: ast.expr) -> str:
    text = ast.unparse(node)
    if ("group" in text) != ("state" in text):
        return "group" if "group" in text else "state"
    return ""


