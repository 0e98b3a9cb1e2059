"""WSC1xx: Python control flow that depends on tensor values."""

from __future__ import annotations

import libcst as cst

from cslint.analysis.libraries import BRANCH
from cslint.analysis.held_distributions import held_distribution_tested
from cslint.analysis.torch_api import VALIDATING_DISTRIBUTIONS
from cslint.fixers.checks import keep_assert, keep_raising_check
from cslint.fixers.expert_loops import dense_expert_loop
from cslint.fixers.fast_paths import skip_fast_path
from cslint.fixers.masked_block import masked_block
from cslint.fixers.first_match import first_match
from cslint.fixers.layer_drop import run_and_select, skip_rest_of_loop
from cslint.fixers.masked_tail import early_return
from cslint.fixers.memo_cache import recompute_memo
from cslint.fixers.noop_store_guard import drop_noop_store_guard
from cslint.fixers.switched_entries import switched_entry
from cslint.fixers.where import if_to_where, ifexp_to_where, inplace_if_to_where
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix
from cslint.rules.base import Rule

FROZEN = "the first step's branch is frozen into the graph"
UNROLLED = "unrolled to the first step's count"


class TensorIf(Rule):
    code = "WSC101"
    graph_break = "GB0170"  # Data-dependent branching
    target_advice = {"compile": "`torch.cond(pred, true_fn, false_fn, operands)` also keeps both branches in one graph."}
    name = "tensor-if"
    summary = "Checks for `if`/`elif` statements whose condition is a tensor value in traced code."
    why = (
        "A static-graph trace records tensor operations, not Python control flow. To choose a branch, "
        "Python needs the condition's value, which does not exist while tracing: the trace fails, or the "
        "branch taken on the first step is baked into the graph and replayed for every later step."
    )
    example = """
def forward(self, x):
    if x.max() > 0:
        y = x * 2
    else:
        y = x
    return y
"""
    use_instead = """
def forward(self, x):
    y = torch.where(x.max() > 0, x * 2, x)
    return y
"""
    fix_safety = (
        "Safe when every branch only assigns names from side-effect-free tensor expressions. Unsafe when a "
        "branch calls modules or helpers, draws random numbers, divides or takes logs (inf/NaN and NaN "
        "gradients on the side the condition excluded), or turns a Python number into a tensor. Branches "
        "that return, raise or do anything but assign are reported without a fix, except an if/else whose "
        "two branches each update the same tensor in place (`if c: buf.copy_(x) else: buf.mul_(b).add_(g)`): "
        "that becomes `buf.copy_(torch.where(c, x, buf.mul(b).add(g)))` (unsafe: both updates are computed)."
        " An `if` guarding a block of assignments, augmented assignments and in-place tensor "
        "updates (`if group_lr > 0.0: num += ...; s.add_(g); sk += (s * s).sum()`) becomes a masked update: "
        "the block runs every step under fresh names and `torch.where` keeps its results where the condition "
        "holds, in-place updates through `copy_` (through `.data.copy_` where the block updated `.data`); "
        "`elif` and `else` branches of the same kind are masked in turn, each by its own test and the negation "
        "of the tests before it (unsafe: every outcome is computed, updates become "
        "out-of-place values selected afterwards). An `if` on a Python value nested in the block (`if beta1 > 0:`, "
        "`if fsdp_in_use:`) stays, each of its branches masked the same way; a nested `if` on a tensor gets its "
        "own fix first, the block in the next pass. An `if` without else that ends in `continue`, directly in a "
        "loop body, is masked as an if/else whose else is the rest of the loop body. Inside the block, a store "
        "into an entry the function reads before it (`group[\"lr\"] = x`) becomes `torch.where(torch.reshape(c, "
        "()), x, group[\"lr\"])` (an `if`'s condition has one element; taken without dimensions it does not give "
        "the entry one), `torch.max(m, v, out=m)` is an in-place update of `m`, an in-place update of a state "
        "entry (`state[\"scale\"].mul_(b)`) is selected back through `copy_`, `a, b = x, y` is two assignments, "
        "a name bound to another (`grad = buf`) follows it, so `grad.mul_(c)` updates `buf`'s tensor, and "
        "`x.allclose(y, ...)` in the test becomes `torch.isclose(x, y, ...).all()`. No fix when the block calls "
        "unknown code, draws random numbers, loops or returns, when which tensor a name holds depends on a "
        "Python branch inside the block and it is then updated in place, or when an entry updated in place is "
        "also held by a name (`avg = state[\"avg\"]`)."
        " A param-group entry switched by a tensor test between Python literals (SWATS: `group[\"phase\"] = "
        "\"SGD\"` under `if ... corrected_exp_avg > 0:`, read by `if group[\"phase\"] == \"SGD\": ...; continue`) "
        "becomes a tensor code: strings numbered in the order they appear (`phase=\"ADAM\"` in the defaults "
        "becomes `phase=0`, the switch `group[\"phase\"] = 1`, the test `group[\"phase\"] == 1`), bools and ints "
        "their own codes (a truth test `!= 0`), made a tensor on the parameters' device in `preinitialize()`, "
        "where a test of the entry guarding state creation goes (the state must exist whichever value the step "
        "switches to); the masked fixes then take the switch and every `if` reading it, in the next passes "
        "(unsafe: code outside the class that reads the entry, and a checkpoint saved before the fix, see or hold "
        "the Python value). No fix when the entry's initial value is not a literal in `__init__`, it is stored "
        "a non-literal, read other than by `==`/`!=` against its literals (or, for bools and ints, a truth "
        "test), or the class has no `preinitialize()` looping over `self.param_groups` (the state fixes make "
        "one for lazily created state)."
        " An early return on a tensor in the step's own body (`if sk_l1 == 0: return loss`, D-Adaptation, "
        "Prodigy) becomes `proceed = torch.logical_not(...)` and the rest of the step runs every time, keeping "
        "what it leaves behind only where `proceed` holds: in-place tensor updates through `copy_(torch.where"
        "(proceed, new, old))`, stored entries and attributes through `torch.where` (an entry the step never "
        "reads through `.get(key, new)`, as it may not exist yet); loops and `if`s on Python values stay. "
        "Unsafe: the rest is computed on every step, stored Python numbers (a counter in a param group) "
        "become tensors, and log lines in the rest are written also on the steps the original ended early. "
        "No fix when the function does not end by returning the same value, or the rest calls unknown code, "
        "updates state in place through a name, or loops on a tensor; an `if` on a tensor in the rest gets "
        "its own fix first."
        " A return from inside a loop over a static sequence on a tensor test (AdamP's projection: the first "
        "view whose similarity is small) becomes a masked update per iteration: `found` is the test and no "
        "earlier match, the block's results are kept where `found` holds, and the function's final `return` "
        "of the same value stays (unsafe: every iteration runs, including the statements before the test "
        "after a match, which may call the class's own helpers the loop iterates over)."
        " A fast path on a tensor's value after the function's own tracing guard (`if is_exporting() or "
        "(mask is not None and is_tracing(mask)): return False`, then `if mask is None or mask.all(): return "
        "True`, the function ending `return False`; or a `not (<guard>)` conjunct of the shortcut's own test) "
        "loses every part of its test that reads a tensor, so the function takes the general path, as the "
        "guard does under torch.compile (unsafe: the general path computes what the shortcut skipped, also "
        "when run eagerly, the same numbers only when the shortcut is an optimisation). No fix when the "
        "dropped test modifies state, draws random numbers or skips a Python call."
        " Layer-drop: an `if` without else on flags (not/and/or of boolean tensor conditions, local flags "
        "only ever bound to bools, Python values: `if not to_drop:`, `if not skip_the_layer or synced_gpus:`) "
        "whose body is one `hidden = <tensor>` becomes `hidden = torch.where(<flags as torch.logical_not/or/and>, "
        "<tensor>, hidden)`; `if <flags>: continue` (inside `if`s without else) followed by one such assignment "
        "ending the loop body keeps the condition in a flag (`False` when the enclosing `if`s are not taken) "
        "and selects with it. Unsafe: the call runs every step (compute, and side effects such as a cache it "
        "updates), a dropped layer's parameters get zero gradients instead of none (an optimizer with momentum "
        "or weight decay still moves them), and random numbers it draws shift the random stream. No fix when "
        "the result is not known to be a tensor (a tuple) or `continue` skips more than that assignment."
        " A guard that only skips a masked store which would write nothing (`if X.max() > c: X[X > c] = v`, "
        "`X.min()` with `<`, `if M.any(): Y[M] = v`; a Python value stored, nothing else in the body) loses its "
        "`if`: a false test means an all-false mask. Safe on NumPy arrays of host data; unsafe on a tensor (the "
        "in-place store runs every step, and autograd counts it as a modification even when it writes nothing)."
        " Conditions joined with `and`/`or` whose sides are both boolean tensors become "
        "`torch.logical_and`/`torch.logical_or` (both sides are evaluated, as the tensors have no side "
        "effects)."
        " A cache keyed by a tensor (RAdam's rectification terms: `entry = cache[int(step % 10)]`, `if step == "
        "entry[0]: rho, scale = entry[1], entry[2]`, else compute them and store the key and each into its slot) "
        "becomes its miss branch without the stores, and the line picking the entry goes (unsafe: the values "
        "are recomputed on every call, the same numbers only when the cache memoises a function of its key). "
        "No fix when the hit branch does more than read the entry, a stored value is not the name the hit "
        "branch reads, or anything else in the function reads the entry."
        " A check that only raises (`if group_lr not in [lr, 0.0]: raise RuntimeError(...)`) is never removed: "
        "under torch.compile it becomes `torch._assert_async(<tensor that holds when the check passes>, message)`,"
        " leading Python-valued conditions (`labels is not None and ...`) staying as its `if` (unsafe: the "
        "check raises RuntimeError, on an accelerator when the value is computed). On the lazy-tensor targets "
        "(wsc, rdu, xla) no device-side assertion is documented, so the check gets no fix: move it to where "
        "the data is loaded."
        " A condition that may be a Python value when the step runs eagerly on CPU/GPU (an unannotated input "
        "such as `step`, or `group[\"lr\"]`) is wrapped in `torch.as_tensor(...)`, so the fixed code runs "
        "with a Python number and with a tensor; a division by such a value in a branch becomes a tensor "
        "division (`1.0 / torch.as_tensor(lr)`, so the side not taken cannot raise ZeroDivisionError), which "
        "makes the fix unsafe: float32 instead of Python\'s float64."
    )
    VALID = [
        """
import torch
from torch import nn

class Head(nn.Module):
    def __init__(self, dim, use_bias=True):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        if torch.cuda.is_available() and dim > 0:
            self.scale = 2.0

    def forward(self, x, mask=None):
        if mask is not None:
            x = x * mask
        if x.shape[-1] != 4 and self.training:
            x = self.proj(x)
        if x.dim() == 3 and isinstance(x, torch.Tensor):
            x = x.flatten(1)
        return x
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Clamp(nn.Module):
    def forward(self, x):
        if x.max() > 1.0:  # expect: WSC101
            x = x / x.max()
        return x
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        ctx.report_library_effects(node, BRANCH, "branches on a tensor", FROZEN)

    def visit_If(self, node: cst.If, ctx: RuleContext) -> None:
        elifs = ctx.scratch.setdefault("elif_nodes", set())
        if isinstance(node.orelse, cst.If):
            elifs.add(id(node.orelse))
        if not ctx.truth_is_data_dependent(node.test):
            return
        keyword = "elif" if id(node) in elifs else "if"
        fix: Fix | None = None if keyword == "elif" else \
            drop_noop_store_guard(node, ctx) or recompute_memo(node, ctx) or if_to_where(node, ctx) or inplace_if_to_where(node, ctx) or \
            run_and_select(node, ctx) or switched_entry(node, ctx) or \
            masked_block(node, ctx) or skip_rest_of_loop(node, ctx) or \
            skip_fast_path(node, ctx) or early_return(node, ctx) or first_match(node, ctx) or \
            keep_raising_check(node, ctx)
        what = ctx.kind(node.test).describe() if ctx.is_data_dependent(node.test) else "computed from a tensor"
        ctx.report(node.test, f"`{keyword} {ctx.code(node.test)}` branches on {what}", fix, consequence=FROZEN)


class TensorWhile(Rule):
    code = "WSC102"
    graph_break = "GB0170"
    name = "tensor-while"
    summary = "Checks for `while` loops whose condition is a tensor value in traced code."
    why = (
        "The trace unrolls a `while` loop for as many iterations as it ran on the first step. Later steps "
        "replay that count whatever their data says, or the trace fails because the condition has no value."
    )
    example = """
def forward(self, x, eps=1e-3):
    while (x.abs() > eps).any():
        x = x / 2
    return x
"""
    use_instead = """
def forward(self, x, eps=1e-3, max_iters: int = 16):
    for _ in range(max_iters):  # static bound; stop changing values once converged
        x = torch.where((x.abs() > eps).any(), x / 2, x)
    return x
"""
    fix_safety = "No fix: the bound of the loop has to be chosen by a person."
    VALID = [
        """
import torch
from torch import nn

class Refine(nn.Module):
    def __init__(self, steps):
        super().__init__()
        self.steps = steps

    def forward(self, x):
        i = 0
        while i < self.steps:
            x = x * 0.5
            i += 1
        return x
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Normalize(nn.Module):
    def forward(self, x, eps: float = 1e-3):
        loss = x.pow(2).mean()
        while loss > eps:  # expect: WSC102
            x = x * 0.5
            loss = x.pow(2).mean()
        return x
""",
    ]

    def visit_While(self, node: cst.While, ctx: RuleContext) -> None:
        if ctx.truth_is_data_dependent(node.test):
            ctx.report(node.test, f"`while {ctx.code(node.test)}` loops on a tensor value", consequence=UNROLLED)


class TensorTernary(Rule):
    code = "WSC103"
    graph_break = "GB0170"
    target_advice = {"compile": "`torch.cond(pred, true_fn, false_fn, operands)` also keeps both branches in one graph."}
    name = "tensor-ternary"
    summary = "Checks for conditional expressions (`a if cond else b`) whose condition is a tensor value."
    why = TensorIf.why
    example = """
def forward(self, a, b, m, k):
    y = a if (m == k).any() else b
    return y
"""
    use_instead = """
def forward(self, a, b, m, k):
    y = torch.where((m == k).any(), a, b)
    return y
"""
    fix_safety = (
        "Safe when both sides are side-effect-free tensor expressions; unsafe when a side calls modules or "
        "helpers, draws random numbers, divides or takes logs, or when both sides are Python numbers "
        "(the result becomes a tensor)."
        " A condition that may be a Python value when the step runs eagerly on CPU/GPU (an unannotated input "
        "such as `step`, or `group[\"lr\"]`) is wrapped in `torch.as_tensor(...)`, so the fixed code runs "
        "with a Python number and with a tensor; a division by such a value in a branch becomes a tensor "
        "division (`1.0 / torch.as_tensor(lr)`, so the side not taken cannot raise ZeroDivisionError), which "
        "makes the fix unsafe: float32 instead of Python\'s float64."
    )
    VALID = [
        """
import torch
from torch import nn

class Pick(nn.Module):
    def forward(self, a, b):
        y = a if self.training else b
        z = a if a.dim() == 2 else a.flatten(1)
        return y + z
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Pick(nn.Module):
    def forward(self, a, b, m, k):
        y = a if (m == k).any() else b  # expect: WSC103
        return y
""",
    ]

    def visit_IfExp(self, node: cst.IfExp, ctx: RuleContext) -> None:
        if ctx.truth_is_data_dependent(node.test):
            ctx.report(node.test, f"ternary on `{ctx.code(node.test)}`, a tensor value", ifexp_to_where(node, ctx),
                       consequence=FROZEN)


class TensorAssert(Rule):
    code = "WSC104"
    name = "tensor-assert"
    summary = "Checks for `assert` statements on tensor values in traced code."
    why = (
        "An assert needs the tensor's value while tracing, which does not exist yet: the trace fails, or "
        "the check runs once on the first step's values and never again."
    )
    example = """
def forward(self, h):
    assert torch.isfinite(h).all()
    return h * 2
"""
    use_instead = """
def forward(self, h):
    return h * 2
# check torch.isfinite(...) on the outputs outside the traced step, e.g. every N steps in the loop
"""
    fix_safety = (
        "Under torch.compile the assert becomes `torch._assert_async(<condition as a tensor>, message)`, which "
        "stays in the graph (unsafe: it raises RuntimeError instead of AssertionError, on an accelerator when "
        "the value is computed). No fix when the condition has a Python-valued part (`mask is None or ...`), "
        "and none on the lazy-tensor targets (wsc, rdu, xla), which document no device-side assertion: move "
        "the check out of the step. A fix never removes the check."
    )
    VALID = [
        """
import torch
from torch import nn

class Block(nn.Module):
    def forward(self, h, mask=None):
        assert h.dim() == 3, "expected (batch, seq, dim)"
        assert mask is None or mask.shape == h.shape[:2]
        return h * 2
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Block(nn.Module):
    def forward(self, h):
        assert torch.isfinite(h).all()  # expect: WSC104
        return h * 2
""",
    ]

    def visit_Assert(self, node: cst.Assert, ctx: RuleContext) -> None:
        if ctx.truth_is_data_dependent(node.test):
            ctx.report(node.test, f"`assert {ctx.code(node.test)}` tests a tensor value", keep_assert(node, ctx),
                       consequence="the value is not known while tracing")


class TensorBoolOp(Rule):
    code = "WSC105"
    graph_break = "GB0170"
    name = "tensor-bool-operator"
    summary = "Checks for `and`/`or`/`not` applied to tensor values outside conditions in traced code."
    why = (
        "`a and b`, `a or b` and `not a` call bool() on the tensor `a`, which needs its value while "
        "tracing; the value chosen on the first step is frozen into the graph."
    )
    example = """
def forward(self, a, b):
    both = (a > 0) and (b > 0)
    return both
"""
    use_instead = """
def forward(self, a, b):
    both = (a > 0) & (b > 0)   # or torch.logical_and / torch.logical_not
    return both
"""
    fix_safety = "No fix: `&`/`|`/`~` are elementwise, which is only the same for one-element boolean tensors."
    VALID = [
        """
import torch
from torch import nn

class Gate(nn.Module):
    def forward(self, a, b, mask=None):
        both = (a > 0) & (b > 0)
        use_mask = mask is not None and self.training
        return both, use_mask
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Gate(nn.Module):
    def forward(self, a, b):
        both = (a > 0).all() and (b > 0).all()  # expect: WSC105
        inverted = not a.any()  # expect: WSC105
        return both, inverted
""",
    ]

    def visit_BooleanOperation(self, node: cst.BooleanOperation, ctx: RuleContext) -> None:
        if not ctx.is_condition_part(node) and ctx.truth_is_data_dependent(node.left):
            op = "and" if isinstance(node.operator, cst.And) else "or"
            ctx.report(node, f"`{op}` calls bool() on `{ctx.code(node.left)}`, a tensor value")

    def visit_UnaryOperation(self, node: cst.UnaryOperation, ctx: RuleContext) -> None:
        if isinstance(node.operator, cst.Not) and not ctx.is_condition_part(node) \
                and ctx.truth_is_data_dependent(node.expression):
            ctx.report(node, f"`not` calls bool() on `{ctx.code(node.expression)}`, a tensor value")


class TensorComprehensionIf(Rule):
    code = "WSC106"
    graph_break = "GB0170"
    name = "tensor-comprehension-if"
    summary = "Checks for comprehension filters (`[... for x in xs if cond]`) whose condition is a tensor."
    why = (
        "Filtering with a tensor condition decides in Python, at trace time, which elements exist: the "
        "first step's choice is frozen and the number of outputs becomes part of the graph."
    )
    example = """
def forward(self, losses):
    kept = [l for l in losses if l > 0]
    return sum(kept)
"""
    use_instead = """
def forward(self, losses):
    stacked = torch.stack(losses)
    return torch.where(stacked > 0, stacked, 0).sum()
"""
    fix_safety = "No fix: the selected elements have to become a mask."
    VALID = [
        """
import torch
from torch import nn

class Sum(nn.Module):
    def forward(self, feats):
        kept = [f for i, f in enumerate(feats) if i % 2 == 0]
        return torch.stack(kept).sum()
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Sum(nn.Module):
    def forward(self, losses):
        kept = [l for l in losses if l > 0]  # expect: WSC106
        return torch.stack(kept).sum()
""",
    ]

    def visit_CompIf(self, node: cst.CompIf, ctx: RuleContext) -> None:
        if ctx.truth_is_data_dependent(node.test):
            ctx.report(node.test, f"comprehension filter `if {ctx.code(node.test)}` tests a tensor value",
                       consequence="which elements exist is frozen")


class TensorTripCount(Rule):
    code = "WSC107"
    builtins = ("range", "len")  # a loop's trip count
    # `range(int(t))`: the int() is an Unsupported Tensor.item() call; dynamo unrolls `for row in t` over t's
    # static length: no break
    construct_graph_breaks = {"int(": "GB0124"}
    name = "tensor-trip-count"
    summary = "Checks for `for` loops whose number of iterations comes from tensor values."
    why = (
        "A traced loop is unrolled: its iteration count is fixed when the step is traced. A count read "
        "from a tensor (`range(int(n))`, `for i in t.nonzero()`, `for v in t.unique().tolist()`) is the "
        "first step's count, replayed forever, or the trace fails because the value does not exist yet. "
        "The list of a tensor whose shape is static (`lengths.tolist()`, one entry per batch row) has the "
        "same length every step: looping over it is not reported here (reading it is, by WSC201)."
    )
    example = """
def forward(self, x, n):
    for _ in range(int(n)):
        x = x * 0.5
    return x
"""
    use_instead = """
def forward(self, x, n, max_n: int = 8):
    for i in range(max_n):  # static upper bound; mask the iterations past n
        x = torch.where(i < n, x * 0.5, x)
    return x
"""
    fix_safety = (
        "Unsafe, for a mixture-of-experts loop over the experts that received tokens "
        "(`for e in hit: a, b = torch.where(mask[e]); out.index_add_(0, tok, expert(x[tok]) * w[tok, slot])`): "
        "every expert runs on every token, weighted by its routing mask (the same values up to float summation "
        "order, num_experts / top_k times the expert compute). No fix otherwise: the static bound has to be "
        "chosen by a person."
    )
    VALID = [
        """
import torch
from torch import nn

class Stack(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.n = len(layers)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        for i in range(x.shape[0]):
            x = x + i
        for row in x:
            x = x + row
        for _ in range(self.n):
            x = x * 0.5
        return x
""",
    ]
    INVALID = [
        """
import torch
from torch import nn

class Repeat(nn.Module):
    def forward(self, x, n):
        for _ in range(int(n)):  # expect: WSC107
            x = x * 0.5
        for i in torch.nonzero(x > 0):  # expect: WSC107
            x = x + 1
        return x
""",
    ]

    def visit_For(self, node: cst.For, ctx: RuleContext) -> None:
        self._check(node.iter, ctx, node)

    def visit_CompFor(self, node: cst.CompFor, ctx: RuleContext) -> None:
        self._check(node.iter, ctx)

    def _check(self, iterable: cst.BaseExpression, ctx: RuleContext, loop: cst.For | None = None) -> None:
        kind = ctx.kind(iterable)
        if isinstance(iterable, cst.Call) and isinstance(iterable.func, cst.Name) and iterable.func.value == "range":
            if any(ctx.is_data_dependent(arg.value) for arg in iterable.args):
                ctx.report(iterable, f"`{ctx.code(iterable)}` takes its trip count from a tensor value",
                           consequence=UNROLLED)
            return
        if kind.length_is_data:
            ctx.report(iterable, f"iterating over `{ctx.code(iterable)}`, whose length depends on tensor values",
                       dense_expert_loop(loop, ctx) if loop is not None else None, consequence=UNROLLED)


class DistributionValidation(Rule):
    code = "WSC108"
    functions = tuple(sorted(VALIDATING_DISTRIBUTIONS))
    quiet_keyword = ("validate_args", "True")
    in_libraries = True
    name = "distribution-validation"
    summary = "Checks for `torch.distributions` distributions made in traced code with argument validation on."
    why = (
        "A distribution made with `validate_args` on (the default, unless Python runs with -O) checks its "
        "parameters when it is made, and every value later given to `log_prob`, `cdf` or `icdf`: inside "
        "torch.distributions, `if not torch._is_all_true(valid): raise ValueError(...)` branches on tensor data. "
        "A lazy-tensor trace reads each checked tensor on the host there, once per distribution and per "
        "`log_prob`, every step. Not under `--target compile`: dynamo's first use in a process turns validation off "
        "for every distribution (`Distribution.set_default_validate_args(False)`, torch 2.13)."
    )
    example = """
def forward(self, x, action):
    dist = Normal(self.mu(x), self.log_std.exp())
    return -dist.log_prob(action).sum(-1).mean()
"""
    use_instead = """
def forward(self, x, action):
    dist = Normal(self.mu(x), self.log_std.exp(), validate_args=False)
    return -dist.log_prob(action).sum(-1).mean()
# or once, outside the step: torch.distributions.Distribution.set_default_validate_args(False)
"""
    fix_safety = (
        "No fix: turning validation off removes the checks that raise on an invalid parameter or value, and a "
        "fix never removes a check that raises. Pass `validate_args=False` where the inputs are known to be "
        "valid, or turn validation off for the whole run with `Distribution.set_default_validate_args(False)` "
        "(a call in the file itself keeps the rule quiet there; one in another file is not read: use "
        "`per-file-ignores`). A distribution whose `validate_args` is anything but a literal `True` is not "
        "reported. One made from Python numbers is: `log_prob` tests the values it is given, which are the step's."
    )
    VALID = [
        """
import torch
from torch import nn
from torch.distributions import Categorical, Normal

class Policy(nn.Module):
    def forward(self, x, action):
        dist = Normal(self.mu(x), self.log_std.exp(), validate_args=False)
        prior = Normal(0.0, 1.0, validate_args=False)
        return dist.log_prob(action).sum() + prior.log_prob(action).sum()


def sample_actions(logits):
    return Categorical(logits=logits).sample()
""",
    ]
    INVALID = [
        """
import torch
from torch import nn
from torch import distributions as D

class Policy(nn.Module):
    def forward(self, x, action):
        dist = D.Normal(self.mu(x), self.log_std.exp())  # expect: WSC108
        pick = D.Categorical(logits=self.head(x), validate_args=True)  # expect: WSC108
        return dist.log_prob(action).sum() + pick.entropy().sum()
""",
    ]

    def visit_Call(self, node: cst.Call, ctx: RuleContext) -> None:
        made = ctx.resolve(node.func)
        if made not in VALIDATING_DISTRIBUTIONS:
            if not self._value_test_of_a_held_distribution(node, ctx):
                ctx.report_library_effects(node, self.code,
                                           "makes or tests a torch distribution with `validate_args` on",
                                           "each test reads a tensor on the host while tracing")
            return
        validate = next((arg.value for arg in node.args if arg.keyword and arg.keyword.value == "validate_args"), None)
        if validate is not None and not (type(validate) is cst.Name and validate.value == "True"):
            return  # off, or what the code decides (not known here)
        if "set_default_validate_args(False)" in ctx.module_text():
            return
        ctx.report(node, f"`{ctx.code(node.func, 40)}(...)` is made with `validate_args` on, so torch.distributions "
                         "tests its arguments' values and every value given to its `log_prob`",
                   consequence="each test reads a tensor on the host while tracing")

    def _value_test_of_a_held_distribution(self, node: cst.Call, ctx: RuleContext) -> bool:
        """`self.distribution.log_prob(actions)` where the instance's class makes that distribution in another
        method (held_distributions.py): the test of `actions` runs here. True if reported."""
        if ctx.project is None:
            return False
        made = held_distribution_tested(ctx.project, ctx.traced.func, node)
        # the module's text is read only for such a call: a finding that reads it is not reused after an edit
        if made is None or "set_default_validate_args(False)" in ctx.module_text():
            return False
        held = node.func.value  # type: ignore[attr-defined]
        ctx.report(node, f"`{ctx.code(node.func, 40)}(...)` tests the value it is given: `{ctx.code(held)}` is a "
                         f"`{made.rsplit('.', 1)[-1]}` made with `validate_args` on",
                   consequence="the test reads a tensor on the host while tracing")
        return True
