"""WSC7xx: side effects and Python state in a traced step (they happen once, while tracing)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from cslint.analysis.xla_loops import LoopStep

from cslint.analysis.imports import dotted_name
from cslint.analysis.syntax import path_key, string_value
from cslint.analysis.compile_options import DEEP, disabled
from cslint.analysis.kinds import Tag
from cslint.fixers.buffers import counter_to_buffer
from cslint.fixers.eager_host_function import run_eagerly
from cslint.fixers.grad_switch import skip_switch_under_compile
from cslint.fixers.log_guard import guard_under_compile
from cslint.fixers.summaries import data_dependent_parts, log_call_kind, report_through_summaries
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix
from cslint.rules.base import Rule
from cslint.rules.optimizer_state import made_by_first_step, python_counter
from cslint.core.targets import get_target
from cslint.analysis.walk import child_nodes, iter_nodes, visit

if TYPE_CHECKING:
    from cslint.analysis.traced import TracedFunction

ONCE = "runs once, at trace time, not every step"
BREAKS = "a graph break under torch.compile"
GUARDED = "torch.compile recompiles the step when it changes"
FIRST_VALUE = "its first value is frozen into the graph"
SEED_FUNCTIONS = frozenset({
    "torch.manual_seed", "torch.seed", "torch.random.manual_seed", "torch.random.seed",
    "torch.cuda.manual_seed", "torch.cuda.manual_seed_all", "torch.cuda.seed", "torch.cuda.seed_all",
    "torch.set_rng_state", "torch.random.set_rng_state",
})


class LogTensor(Rule):
    code = "WSC701"
    graph_break = "GB0059"  # print
    construct_graph_breaks = {"log": "GB0291"}  # logging.Logger method not supported
    target_notes = {"xla": "on XLA it runs the graph so far, on every step"}
    target_advice = {
        "rdu": "read outputs on the host after `samba.session.run(...)` returns instead.",
        "xla": "print after `xm.mark_step()` or with `xm.add_step_closure`.",
        "compile": "log outside the compiled function.",
    }
    name = "print-tensor"
    summary = ("Checks for `print`, `logging` and `warnings.warn` calls that take tensor values in traced code "
               "(under `--target compile`, every such call).")
    why = (
        "A traced step runs its Python once, to record the graph; later steps replay the graph without "
        "running Python. A print or log of a tensor inside the step therefore runs once, on values that "
        "do not exist yet (it forces a sync or prints a placeholder), and never again. Under torch.compile "
        "any print, log or warning in the compiled function is a graph break, whatever it prints."
    )
    example = """
def forward(self, x, y):
    loss = (x - y).pow(2).mean()
    print(f"loss {loss}")
    return loss
"""
    use_instead = """
def forward(self, x, y):
    loss = (x - y).pow(2).mean()
    cstorch.step_closure(lambda loss: print(f"loss {loss}"))(loss)   # cerebras-version >= 2.1
    # cstorch.summarize_scalar("loss", loss)                          # cerebras-version < 2.1
    return loss
"""
    fix_safety = (
        "Unsafe, and the target depends on the `cerebras-version` setting (docs/summaries.md). From 2.1 "
        "(default 2.4) the call is wrapped in a `cstorch.step_closure` taking the printed tensors, which "
        "runs it after every step with their values; offered when every tensor it reads is a local name. "
        "Before 2.1 it becomes `cstorch.summarize_scalar` (for `.item()`/`float()` or a full reduction) or "
        "`cstorch.summarize_tensor`, when exactly one tensor is printed. Plain messages are not reported. "
        "Offered only on the wsc target and when the file or the project already imports cerebras.pytorch: a "
        "fix never adds an import of a package the project does not import. Under `--target compile` (any "
        "call, tensors or not) the statement is guarded with `if not torch.compiler.is_compiling():`, which "
        "dynamo answers while tracing, so the call is dead in the graph: unsafe, the message is not logged in "
        "compiled runs (eager runs are unchanged); offered when the call is a statement of its own."
    )
    VALID = [
        """
import logging
import torch
from torch import nn

logger = logging.getLogger(__name__)

class Net(nn.Module):
    def forward(self, x):
        print("starting forward")
        logger.info("shape %s dtype %s", tuple(x.shape), x.dtype)
        return x * 2


def train(model, loader, opt):
    for step, (x, y) in enumerate(loader):
        loss = model(x).sub(y).pow(2).mean()
        loss.backward()
        opt.step()
        print(f"step {step} loss {loss.item():.4f}")
        logger.info("loss %s", loss)
""",
    ]
    INVALID = [
        """
import logging
import warnings
import torch
from torch import nn

logger = logging.getLogger(__name__)

class Net(nn.Module):
    def forward(self, x, y):
        loss = (x - y).pow(2).mean()
        print("loss", loss)  # expect: WSC701
        logger.info(f"loss {loss.item():.3f}")  # expect: WSC701
        self._check(x)
        return loss

    def _check(self, x):
        if x.dim() > 2:
            warnings.warn(f"large activations: {x.abs().max()}")  # expect: WSC701
        logging.debug("mean %s", x.mean())  # expect: WSC701
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        kind = log_call_kind(node, ctx) or _log_once_kind(node)
        if kind is None:
            return
        if not data_dependent_parts(node, ctx):
            if get_target(ctx.settings.target).has_graph_breaks:  # any print or log breaks the graph
                ctx.report(node, f"`{ctx.code(node)}` {'prints' if kind == 'print' else 'logs'} inside the "
                                 "compiled step, whatever it holds", guard_under_compile(node, ctx, kind))
            return
        verb = "prints" if kind == "print" else "logs"
        if get_target(ctx.settings.target).has_graph_breaks:  # no step closure: the tracer's predicate skips it
            ctx.report(node, f"`{ctx.code(node)}` {verb} tensor values inside the compiled step",
                       guard_under_compile(node, ctx, kind))
            return
        fix = report_through_summaries(node, ctx) if kind != "warnings" else None
        ctx.report(node, f"`{ctx.code(node)}` {verb} tensor values in the traced step", fix, consequence=ONCE)


def _log_once_kind(node: cst.Call) -> str | None:
    """`logger.warning_once(...)`, `logger.info_once(...)`: a library logger's deduplicated log."""
    func = node.func
    if isinstance(func, cst.Attribute) and func.attr.value.endswith("_once"):
        receiver = dotted_name(func.value)
        if receiver is not None and "log" in receiver.rsplit(".", 1)[-1].lower():
            return "logging"
    return None


def _mutated_state(ctx: RuleContext) -> tuple[set[str], set[str]]:
    """(attribute paths holding Python values the function mutates, names it declares global/nonlocal)."""
    key = "effects.mutated"
    if key in ctx.scratch:
        return ctx.scratch[key]  # type: ignore[no-any-return]
    attributes: set[str] = set()
    globals_: set[str] = set()

    for node in ctx.walk(prune=(cst.FunctionDef, cst.ClassDef)):
        kind = type(node)
        if kind in (cst.Global, cst.Nonlocal):
            globals_.update(n.name.value for n in node.names)  # type: ignore[attr-defined]
        elif kind is cst.AugAssign:
            target = path_key(node.target)  # type: ignore[attr-defined]
            if target is not None and "." in target and \
                    _is_python_value(node.target, ctx):  # type: ignore[attr-defined]
                attributes.add(target)
        elif kind is cst.Assign:
            for t in node.targets:  # type: ignore[attr-defined]
                target = path_key(t.target)
                if target is not None and "." in target and _is_python_value(t.target, ctx) \
                        and _reads(node.value, {target}, ctx):  # type: ignore[attr-defined]
                    attributes.add(target)  # self.calls = self.calls + 1
    ctx.scratch[key] = (attributes, globals_)
    return attributes, globals_


def _is_python_value(target: cst.BaseExpression, ctx: RuleContext) -> bool:
    """A number/string/host value, not a tensor buffer or an object we know nothing about."""
    tag = ctx.kind(target).tag
    if tag in (Tag.STATIC, Tag.HOST):
        return True
    # A counter's kind joins its literal start with its own update (unknown while the class is being
    # analysed), so look at what the class assigns it.
    return tag is Tag.UNKNOWN and _literal_attribute(target, ctx)


def _literal_attribute(target: cst.BaseExpression, ctx: RuleContext) -> bool:
    """`self.<attr>` assigned only Python literals (and never registered as a buffer) by its class."""
    cls = ctx.traced.func.cls
    if cls is None or not isinstance(target, cst.Attribute) or not isinstance(target.value, cst.Name) \
            or target.value.value != "self":
        return False
    attr = target.attr.value
    values: list[cst.BaseExpression] = []
    registered = False

    class Finder(cst.CSTVisitor):
        def visit_Assign(self, node: cst.Assign) -> None:
            for t in node.targets:
                if isinstance(t.target, cst.Attribute) and isinstance(t.target.value, cst.Name) \
                        and t.target.value.value == "self" and t.target.attr.value == attr:
                    values.append(node.value)

        def visit_Call(self, node: cst.Call) -> None:
            nonlocal registered
            if isinstance(node.func, cst.Attribute) and node.func.attr.value.startswith("register_") \
                    and node.args and string_value(node.args[0].value) == attr:
                registered = True

    for method in cls.methods.values():
        visit(method.node, Finder())
    literal = (cst.Integer, cst.Float, cst.SimpleString, cst.ConcatenatedString)
    return bool(values) and not registered and all(
        isinstance(v, literal) or _reads(v, {f"self.{attr}"}, ctx) or
        (isinstance(v, cst.Name) and v.value in ("True", "False")) or
        (isinstance(v, cst.UnaryOperation) and isinstance(v.expression, literal))
        for v in values)


def _reads(expr: cst.CSTNode, paths: set[str], ctx: RuleContext) -> bool:
    if not paths:
        return False
    return any((type(node) is cst.Name or type(node) is cst.Attribute) and path_key(node) in paths
               for node in ctx.walk(expr))


class PythonStateMutation(Rule):
    code = "WSC702"
    name = "python-state-mutation"
    summary = ("Checks for Python attributes or globals mutated inside traced code (`self.calls += 1`, `global step`; "
               "under `--target compile` also Python-number counters in optimizer state and param groups).")
    why = (
        "Python code in a traced step runs once, while tracing: a counter incremented there counts to one "
        "and stops. If the value is used in the graph, each new value would also be a new graph (a "
        "recompile that the cluster does not allow). Under torch.compile dynamo replays the increment, but "
        "it guards on the number it read: an optimizer's `state[\"step\"] += 1` on a Python int fails the "
        "guard on the next step and the step is compiled again (on lazy-tensor targets WSC303 reports such "
        "counters)."
    )
    example = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x
"""
    use_instead = """
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.tensor(0), persistent=False)

    def forward(self, x):
        self.calls += 1   # an in-place tensor op, replayed every step
        return x
"""
    fix_safety = (
        "Unsafe. For `self.<name> += ...` in an nn.Module whose `__init__` sets `self.<name> = <number>` "
        "once after `super().__init__()` (and no method rebinds it with `=`), the fix registers "
        "`<name>` as a non-persistent tensor buffer; the increment then updates it in place. Everything "
        "that reads `self.<name>` now gets a tensor. Globals and other attributes are reported only."
    )
    VALID = [
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("step", torch.zeros((), dtype=torch.long))
        self.calls = 0

    def forward(self, x):
        self.step += 1
        h = x
        h += 1
        return h * 2


class Trainer:
    def __init__(self, model):
        self.model = model
        self.global_step = 0

    def after_step(self):
        self.global_step += 1
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

STEP = 0

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.seen = 0

    def forward(self, x):
        global STEP
        STEP += 1  # expect: WSC702
        self.calls += 1  # expect: WSC702
        self._count(x)
        return x

    def _count(self, x):
        self.seen = self.seen + x.shape[0]  # expect: WSC702
""",
    ]

    def visit_AugAssign(self, node: cst.AugAssign, ctx: RuleContext) -> None:
        self._check(node, node.target, ctx)
        if get_target(ctx.settings.target).recompiles_on_python_state:  # on lazy tensors WSC303 reports these
            where = python_counter(node, ctx)
            if where in ("optimizer state", "a param group"):  # an optimizer attribute is `_check`'s
                ctx.report(node.target, f"`{ctx.code(node.target)}` is a Python-number step counter in {where}: "
                                        f"{GUARDED}")

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        for target in node.targets:
            self._check(node, target.target, ctx)

    def _check(self, node: cst.AugAssign | cst.Assign, target: cst.BaseExpression, ctx: RuleContext) -> None:
        if isinstance(ctx.traced.root.func, LoopStep):
            return  # XLA re-runs a training loop's Python every step: the counter counts (WSC703 still applies)
        if _builds_its_object(ctx.traced) and isinstance(target, cst.Attribute):
            return  # the object is made afresh in every step: nothing of it persists between steps
        attributes, globals_ = _mutated_state(ctx)
        if not attributes and not globals_:
            return
        key = path_key(target)
        if key is None:
            return
        if isinstance(target, cst.Name) and key in globals_:
            ctx.report(node, f"global `{key}` is assigned in traced code: {ONCE}")
        elif key in attributes and (isinstance(node, cst.AugAssign) or _reads(node.value, {key}, ctx)):
            fix = counter_to_buffer(node, ctx) if isinstance(node, cst.AugAssign) else None
            ctx.report(node, f"Python attribute `{key}` is updated in traced code: {ONCE}", fix)


def _builds_its_object(traced: TracedFunction) -> bool:
    """The traced method runs while the step builds its instance: its class's `__init__` (traced where the step
    makes the object, call_inference.`_construct`), or a method that constructor calls on it."""
    cls = traced.func.cls
    current: TracedFunction | None = traced
    while cls is not None and current is not None and current.func.cls is cls:
        if current.func.name == "__init__":
            return True
        current = current.parent
    return False


class PythonStateInGraph(Rule):
    code = "WSC703"
    name = "python-state-in-graph"
    summary = ("Checks for values derived from Python state mutated in traced code that feed tensor operations "
               "(under `--target compile` also optimizer state that `step()` creates on its first run).")
    why = (
        "A Python number that changes between steps (a counter, a global) enters the graph as a constant. "
        "The trace freezes its first value; re-tracing with each new value would be a new graph every step. "
        "Under torch.compile the same holds for a branch on state the step itself fills: "
        "`if len(state) == 0:` in an optimizer's `step()` is taken on the first step only, so the first "
        "graph is traced with the state empty and dynamo compiles the step again on the second (on "
        "lazy-tensor targets WSC301 reports such state). An optimizer that creates its state in `__init__`, "
        "or defines `preinitialize()` (the Cerebras contract), is not reported."
    )
    example = """
def forward(self, x):
    self.calls += 1
    decay = 0.99 ** self.calls
    return x * decay
"""
    use_instead = """
def forward(self, x):
    self.calls += 1            # self.calls a registered tensor buffer
    decay = torch.pow(0.99, self.calls)
    return x * decay
"""
    fix_safety = "No fix: fix the state itself (WSC702 turns a counter into a tensor buffer)."
    VALID = [
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self, decay):
        super().__init__()
        self.decay = decay
        self.register_buffer("steps", torch.zeros(()))

    def forward(self, x):
        self.steps += 1
        scale = self.decay ** 2
        return x * scale * torch.pow(0.99, self.steps)
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        decay = 0.99 ** self.calls
        y = x * decay  # expect: WSC703
        return torch.full_like(y, self.calls) + y  # expect: WSC703
""",
    ]

    def visit_If(self, node: cst.If, ctx: RuleContext) -> None:
        if get_target(ctx.settings.target).recompiles_on_python_state and made_by_first_step(node, ctx):
            ctx.report(node.test, f"`if {ctx.code(node.test)}` creates optimizer state on the first step only: "
                                  "compiled again on the second")

    def visit_BinaryOperation(self, node: cst.BinaryOperation, ctx: RuleContext) -> None:
        derived = _derived(ctx)
        if not derived:
            return
        for side, other in ((node.left, node.right), (node.right, node.left)):
            if ctx.is_tensor(other) and not ctx.is_tensor(side) and _reads(side, derived, ctx):
                ctx.report(node, f"`{ctx.code(side)}` is Python state the traced step changes, fed to a "
                                 "tensor op", consequence=FIRST_VALUE)
                return

    def visit_Subscript(self, node: cst.Subscript, ctx: RuleContext) -> None:
        """`self.sigmas[self._step_index]` with a Python counter the step advances: the index is frozen."""
        if not ctx.is_tensor(node.value):
            return
        derived = _derived(ctx)
        if not derived:
            return
        for element in node.slice:
            part = element.slice
            values = [part.value] if isinstance(part, cst.Index) else \
                [v for v in (part.lower, part.upper, part.step) if v is not None] if isinstance(part, cst.Slice) else []
            for value in values:
                if not ctx.is_tensor(value) and _reads(value, derived, ctx):
                    ctx.report(value, f"`{ctx.code(value)}` is Python state the traced step changes, used as a "
                                      "tensor index", consequence=FIRST_VALUE)
                    return

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        qualified = ctx.resolve(node.func)
        method = isinstance(node.func, cst.Attribute) and ctx.is_tensor(node.func.value)
        if not method and (qualified is None or not qualified.startswith("torch.")):
            return
        derived = _derived(ctx)
        if not derived:
            return
        for arg in node.args:
            if not ctx.is_tensor(arg.value) and _reads(arg.value, derived, ctx):
                ctx.report(arg.value, f"`{ctx.code(arg.value)}` is Python state the traced step changes, fed "
                                      "to a tensor op", consequence=FIRST_VALUE)


def _derived(ctx: RuleContext) -> set[str]:
    """Mutated state paths, and local names computed from them (to a fixed point)."""
    key = "effects.derived"
    if key in ctx.scratch:
        return ctx.scratch[key]  # type: ignore[no-any-return]
    attributes, globals_ = _mutated_state(ctx)
    derived = set(attributes) | set(globals_)
    assigns = [(t.target.value, node.value) for node in ctx.walk() if type(node) is cst.Assign
               for t in node.targets if isinstance(t.target, cst.Name)]
    changed = bool(derived)
    while changed:
        changed = False
        for name, value in assigns:
            if name not in derived and _reads(value, derived, ctx):
                derived.add(name)
                changed = True
    ctx.scratch[key] = derived
    return derived


class SeedInStep(Rule):
    code = "WSC704"
    functions = (*sorted(SEED_FUNCTIONS), "random.", "numpy.random.")
    in_libraries = True
    graph_break = "GB0033"  # np.random.* through torch._numpy
    construct_graph_breaks = {"^random.": "GB0007"}  # Attempted to call function marked as skipped
    name = "rng-seed-in-step"
    summary = "Checks for `torch.manual_seed`, `random.*` and `numpy.random.*` calls inside traced code."
    why = (
        "Seeding inside the step runs once, while tracing, so it does not reseed later steps. Python's "
        "`random` and NumPy draw numbers on the host: the value drawn while tracing becomes a constant "
        "of the graph, the same on every step."
    )
    example = """
def forward(self, x):
    torch.manual_seed(0)
    keep = np.random.rand() > 0.5
    return x
"""
    use_instead = """
torch.manual_seed(0)   # once, before training

def forward(self, x):
    keep = torch.rand(()) > 0.5   # drawn on the device, every step
    return x
"""
    fix_safety = (
        "Under torch.compile, a helper the step calls that draws on the host and returns no tensor (a NumPy span "
        "mask, a random size) gets `@torch.compiler.disable`: it runs eagerly, drawing the same numbers, and the "
        "step breaks once at each call instead of at every draw and loop iteration inside it. Safe: the values "
        "are the original's. The draws stay on the host, so a whole graph (`fullgraph=True`, a lazy-tensor "
        "target) still needs a person: seed once before training, compute the value in the data loader, or draw "
        "it with torch on the device. No fix on the lazy-tensor targets, nor in a `forward`, or a function that "
        "returns a tensor (its compute would leave the graph)."
    )
    VALID = [
        """
import random
import numpy as np
import torch
from torch import nn

class Noise(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p
        self.offset = random.random()

    def forward(self, x):
        return x + torch.randn_like(x) * self.p


def worker_init_fn(worker_id):
    np.random.seed(worker_id)
    random.seed(worker_id)
    torch.manual_seed(worker_id)
""",
    ]
    INVALID = [
        """
import random
import numpy as np
import torch
from torch import nn

class Noise(nn.Module):
    def forward(self, x):
        torch.manual_seed(0)  # expect: WSC704
        if random.random() < 0.5:  # expect: WSC704
            x = x.flip(0)
        return x * self._jitter()

    def _jitter(self):
        return float(np.random.uniform(0.9, 1.1))  # expect: WSC704
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        qualified = ctx.resolve(node.func)
        dynamo = get_target(ctx.settings.target).has_graph_breaks  # it does not trace these: it breaks
        if qualified is None or not qualified.startswith(("torch.", "random.", "numpy.random.")):
            ctx.report_library_effects(node, self.code, "seeds or draws from the host's random generator",
                                       BREAKS if dynamo else "a value drawn while tracing is a constant of the graph")
            return
        if qualified in SEED_FUNCTIONS:
            effect = BREAKS if dynamo else ONCE
            ctx.report(node, f"`{ctx.code(node)}` seeds the generator in the traced step: {effect}", run_eagerly(ctx))
        elif qualified.startswith(("random.", "numpy.random.")):
            effect = BREAKS if dynamo else "its value is a constant of the graph"
            ctx.report(node, f"`{ctx.code(node)}` uses the host's random generator in the traced step: {effect}",
                       run_eagerly(ctx))


class GradModeToggle(Rule):
    code = "WSC705"
    name = "grad-mode-toggle"
    summary = "Checks for `requires_grad_()`, `requires_grad = ...`, `.train()` and `.eval()` inside traced code."
    why = (
        "Which tensors need gradients and whether modules are in training mode shape the graph. Switching "
        "them inside the step happens once, while tracing: later steps replay the first step's choice, "
        "and a change between steps would be a different graph. torch.compile cannot trace a switch of "
        "`requires_grad` at all, on a tensor the step made too (`h.requires_grad = True`, "
        "`torch.zeros(3).requires_grad_()`): each is a graph break."
    )
    example = """
def forward(self, x):
    self.encoder.eval()
    self.encoder.weight.requires_grad_(False)
    return self.encoder(x)
"""
    use_instead = """
model.encoder.eval()                          # before the training loop
model.encoder.weight.requires_grad_(False)

def forward(self, x):
    return self.encoder(x)
"""
    fix_safety = (
        "Under `--target compile`, a switch turning `requires_grad` on for a tensor the step makes (a view of "
        "the input, a new tensor, a buffer of the module) has an unsafe fix: `if not "
        "torch.compiler.is_compiling():` around it. Such switches serve eager autograd (reentrant "
        "checkpointing needs an input that requires grad); the compiled graph differentiates through "
        "checkpoints without it, so the parameters' gradients are unchanged. Unsafe: in compiled runs that "
        "tensor's own gradient is not computed. A switch on a parameter, on the function's input, off, or on "
        "a tensor whose `.grad` the function reads has no fix, nor has any switch on the lazy targets: move "
        "it out of the step, where the training loop sets up the model."
    )
    VALID = [
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.encoder.requires_grad_(False)
        self.encoder.eval()

    def forward(self, x):
        if self.training:
            x = x * 0.9
        with torch.no_grad():
            feats = self.encoder(x)
        return feats.detach()


def evaluate(model, loader):
    model.eval()
    for p in model.parameters():
        p.requires_grad = False
    return [model(x) for x in loader]
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Net(nn.Module):
    def __init__(self, encoder, head):
        super().__init__()
        self.encoder = encoder
        self.head = nn.Linear(4, 4)

    def forward(self, x):
        self.encoder.eval()  # expect: WSC705
        self._freeze()
        return self.head(self.encoder(x))

    def _freeze(self):
        self.head.weight.requires_grad_(False)  # expect: WSC705
        self.head.bias.requires_grad = False  # expect: WSC705
        self.train()  # expect: WSC705
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        func = node.func
        if not isinstance(func, cst.Attribute):
            return
        receiver = ctx.kind(func.value)
        method = func.attr.value
        is_module = receiver.tag is Tag.OBJECT and receiver.role == "module"
        dynamo = get_target(ctx.settings.target).has_graph_breaks
        if method == "requires_grad_" and (is_module or receiver.is_tensor) \
                and (dynamo or not _made_in_step(func.value, ctx, node)):
            turns_on = not node.args or _is_true(node.args[0].value)
            ctx.report(node, f"`{ctx.code(node)}` changes which tensors need gradients in the traced step: "
                             f"{BREAKS if dynamo else ONCE}",
                       _skipped_under_compile(node, func.value, ctx) if dynamo and turns_on and not is_module
                       else None)
        elif method in ("train", "eval") and len(node.args) <= 1 and not receiver.is_tensor \
                and receiver.tag is not Tag.SEQUENCE:  # `self.encoder` may be a constructor argument
            ctx.report(node, f"`{ctx.code(node)}` switches module mode in the traced step: {ONCE}")

    def visit_Assign(self, node: cst.Assign, ctx: RuleContext) -> None:
        for target in node.targets:
            t = target.target
            if not isinstance(t, cst.Attribute) or t.attr.value != "requires_grad":
                continue
            # dynamo cannot trace a switch of any tensor's requires_grad, one the step made included
            if get_target(ctx.settings.target).has_graph_breaks and ctx.kind(t.value).is_tensor:
                ctx.report(node, f"`{ctx.code(t)} = ...` changes which tensors need gradients in the traced "
                                 f"step: {BREAKS}",
                           _skipped_under_compile(node, t.value, ctx) if _is_true(node.value) else None)
            elif not _made_in_step(t.value, ctx, node):
                ctx.report(node, f"`{ctx.code(t)} = ...` changes which tensors need gradients in the traced "
                                 f"step: {ONCE}")


class DisabledCall(Rule):
    code = "WSC707"
    graph_break = "GB0098"  # Skip calling `torch.compiler.disable()`d function
    name = "disabled-call"
    example_target = "compile"
    summary = ("Checks for calls, in code traced under `--target compile`, of a project function that "
               "`@torch.compiler.disable` keeps out of the graph.")
    why = (
        "Dynamo does not trace a function decorated with `@torch.compiler.disable` (or `@torch._dynamo.disable`): "
        "it runs it eagerly, so the compiled step breaks at every call of it, an error under `fullgraph=True`. "
        "That is often the right trade (host code such as a NumPy span mask, and WSC704's fix writes it), but "
        "the break is still there, and a report that says nothing of it would be a clean report that is not."
    )
    example = """
@torch.compiler.disable
def spans(length: int) -> np.ndarray:
    return np.random.rand(length) < 0.1

def forward(self, x):
    keep = torch.as_tensor(spans(x.shape[1]))
    return x * keep
"""
    use_instead = """
# compute the mask where the batch is made (the data loader) and pass it in
def forward(self, x, keep):
    return x * keep
"""
    fix_safety = "No fix: what to trace instead, or where to move the call, is a person's decision."
    VALID = [
        """
import numpy as np
import torch
from torch import nn


@torch.compiler.disable
def spans(length: int) -> np.ndarray:
    return np.random.rand(length) < 0.1


class Masker(nn.Module):
    def forward(self, x, keep):
        return x * keep


def collate(batch):
    return torch.stack(batch), torch.as_tensor(spans(len(batch[0])))
""",
    ]
    INVALID = [
        """
import numpy as np
import torch
from torch import nn


@torch.compiler.disable
def spans(length: int) -> np.ndarray:
    return np.random.rand(length) < 0.1


class Masker(nn.Module):
    def forward(self, x):
        keep = torch.as_tensor(spans(x.shape[1]))  # expect: WSC707
        return x * keep
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        if not get_target(ctx.settings.target).has_graph_breaks:
            return
        callees = ctx.scratch.get("callees")
        if callees is None:
            callees = ctx.scratch["callees"] = {call: site.callee for (call, _), site in ctx.analysis.calls.items()}
        callee = callees.get(id(node))
        if callee is not None and disabled(callee) == DEEP:
            ctx.report(node, f"`{ctx.code(node)}` calls `{callee.name}`, which `torch.compiler.disable` keeps out "
                             f"of the graph: {BREAKS}, where it runs eagerly")


# Context managers that set backend flags for the kernels run inside them, and the registry id of the break
# torch.compile reports on each (it cannot trace the context manager they return).
BACKEND_FLAG_CONTEXTS = {
    "torch.backends.cudnn.flags": "GB0208", "torch.backends.mkldnn.flags": "GB0208",
    "torch.backends.cuda.sdp_kernel": "GB0208", "torch.backends.opt_einsum.flags": "GB0007",
}


class BackendFlagsInStep(Rule):
    code = "WSC706"
    graph_break = "GB0208"  # torch.* op returned non-Tensor (the flags' context manager)
    construct_graph_breaks = {"opt_einsum.flags": "GB0007"}
    name = "backend-flags-in-step"
    example_target = "compile"
    summary = ("Checks for `with torch.backends.cudnn.flags(...)` and the other backend-flag context managers "
               "(`mkldnn.flags`, `cuda.sdp_kernel`, `opt_einsum.flags`) inside traced code (under `--target compile`).")
    why = (
        "These context managers set global flags that choose the CUDA/oneDNN kernels run inside them. "
        "torch.compile cannot trace the context manager they return, so the graph breaks at the `with` "
        "(\"torch.* op returned non-Tensor\") and the step runs as several graphs."
    )
    example = """
def forward(self, x):
    with torch.backends.cudnn.flags(enabled=False):
        return self.rnn(x)
"""
    use_instead = """
torch.backends.cudnn.enabled = False      # before compiling the step: one setting for every step
compiled = torch.compile(model)
"""
    fix_safety = (
        "No fix: dropping the context manager changes which kernels run inside it on GPU (cuDNN off, "
        "deterministic, TF32, which attention backend). Set the flags once before compiling, or run the "
        "region outside the compiled step."
    )
    VALID = [
        """
import torch
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 8)

    def forward(self, x):
        with sdpa_kernel(SDPBackend.MATH):
            x = nn.functional.scaled_dot_product_attention(x, x, x)
        with torch.no_grad():
            h = self.rnn(x)[0]
        return h


def benchmark(model, x):
    with torch.backends.cudnn.flags(enabled=True, benchmark=True):
        return model(x)


model = torch.compile(Encoder())
""",
    ]
    INVALID = [
        """
import torch
from torch import nn
from torch.backends import cudnn

class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 8)

    def forward(self, x):
        with cudnn.flags(enabled=False):  # expect: WSC706
            h = self.rnn(x)[0]
        with torch.no_grad(), torch.backends.cuda.sdp_kernel(enable_flash=False):  # expect: WSC706
            return nn.functional.scaled_dot_product_attention(h, h, h)


model = torch.compile(Encoder())
""",
    ]

    def visit_With(self, node: cst.With, ctx: RuleContext) -> None:
        if not get_target(ctx.settings.target).has_graph_breaks:
            return
        for item in node.items:
            context = item.item
            if isinstance(context, cst.Call) and ctx.resolve(context.func) in BACKEND_FLAG_CONTEXTS:
                ctx.report(node, f"`with {ctx.code(context)}` sets backend flags inside the traced step: {BREAKS}; "
                                 "set the flags before compiling the step")
                return


def _made_in_step(tensor: cst.BaseExpression, ctx: RuleContext, at: cst.CSTNode) -> bool:
    """A tensor the step itself makes (`torch.zeros(...).requires_grad_()`; `bias = torch.zeros(...)` just
    before `bias.requires_grad = True`): its `requires_grad` is recorded with it every step, not a switch of
    a parameter the model keeps. The nearest assignment before `at` in its block or the blocks around it
    decides; a parameter or an alias (`w = self.weight`) is not made in the step."""
    if type(tensor) is cst.Call:
        return True
    value = _last_assigned(tensor, ctx, at) if type(tensor) is cst.Name else None
    return type(value) in (cst.Call, cst.BinaryOperation)


def _skipped_under_compile(switch: cst.CSTNode, tensor: cst.BaseExpression, ctx: RuleContext) -> Fix | None:
    """WSC705's fix under compile, for a switch on a local tensor (never on a model's own attribute)."""
    if type(tensor) is not cst.Name:
        return None
    return skip_switch_under_compile(switch, tensor.value, _last_assigned(tensor, ctx, switch), ctx)


def _last_assigned(name: cst.Name, ctx: RuleContext, at: cst.CSTNode) -> cst.BaseExpression | None:
    """The value of the nearest assignment to `name` before `at`, in its block or the blocks around it
    (None for a parameter, a loop variable or a name bound another way)."""
    for block, index in reversed(_blocks_to(ctx.traced.func.node, at, _holder(ctx, at))):
        around = block[index]
        if type(around) is cst.For and any(type(n) is cst.Name and n.value == name.value
                                           for n in iter_nodes(around.target)):
            return None  # `for p in self.parameters(): p.requires_grad = True`
        for stmt in reversed(block[:index]):
            value = _assigned_value(stmt, name.value)
            if value is not None:
                return value
    return None


def _is_true(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _blocks_to(root: cst.CSTNode, node: cst.CSTNode, holds: Callable[[cst.CSTNode], bool]
               ) -> list[tuple[Sequence[cst.CSTNode], int]]:
    """The statement lists from `root` down to `node`, each with the index of the statement holding it
    (`holds(tree)`: is `node` in `tree`)."""
    path: list[tuple[Sequence[cst.CSTNode], int]] = []
    current: cst.CSTNode = root
    while True:
        body = getattr(current, "body", None)
        statements = body.body if isinstance(body, cst.IndentedBlock) else None
        if statements is None:
            children = [c for c in child_nodes(current) if holds(c)]
            if not children or children[0] is node:
                return path
            current = children[0]
            continue
        index = next((i for i, stmt in enumerate(statements) if holds(stmt)), None)
        if index is None:
            children = [c for c in child_nodes(current) if c is not body and holds(c)]  # an else branch
            if not children:
                return path
            current = children[0]
            continue
        path.append((statements, index))
        if statements[index] is node:
            return path
        current = statements[index]


def _holder(ctx: RuleContext, node: cst.CSTNode) -> Callable[[cst.CSTNode], bool]:
    """Is `node` in a tree: read from the function body's flat walk (a subtree is a range of it), not by
    walking each tree asked about."""
    flat = ctx.body
    target = flat.position(node)

    def holds(tree: cst.CSTNode) -> bool:
        start = flat.position(tree) if target is not None else None
        if start is None or target is None:  # outside the body (or `node` is): walk it
            return tree is node or any(n is node for n in iter_nodes(tree))
        return start <= target < flat.ends[start]

    return holds


def _assigned_value(stmt: cst.CSTNode, name: str) -> cst.BaseExpression | None:
    if type(stmt) is not cst.SimpleStatementLine:
        return None
    for small in stmt.body:
        if type(small) is cst.Assign and any(type(t.target) is cst.Name and t.target.value == name
                                              for t in small.targets):
            return small.value
    return None
