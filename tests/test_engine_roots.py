"""Which code is traced: roots, call-graph propagation, chains; and that untraced code stays quiet."""

from __future__ import annotations

from tests.conftest import codes

MODEL_WITH_HELPERS = """
import torch
from torch import nn

def _check_range(h):
    if h.max() > 10:
        h = h.clamp(max=10)
    return h

class Base(nn.Module):
    pass

class Encoder(Base):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        w = torch.randn(dim)
        if w.std() > 1:  # __init__ is not traced
            w = w / w.std()

    def reset_parameters(self):
        if self.proj.weight.abs().max() > 1:
            nn.init.zeros_(self.proj.weight)

    def _scale(self, x):
        return _check_range(x * 2)

    def forward(self, x):
        return self._scale(self.proj(x))
"""


def test_forward_through_project_base_class_and_helpers(lint):
    found = lint(MODEL_WITH_HELPERS, select=("WSC101",))
    assert codes(found) == [("WSC101", 5)]
    assert found[0].chain == ["model.Encoder.forward", "model.Encoder._scale", "model._check_range"]
    assert found[0].reason == "forward of nn.Module subclass Encoder"


def test_import_aliases_and_from_imports_are_resolved(lint):
    code = """
    import torch as T
    from torch.nn import Module
    import torch.nn.functional as F

    class Gate(Module):
        def forward(self, x):
            y = F.relu(x)
            if T.any(y > 0):  # expect
                y = y + 1
            return y
    """
    assert codes(lint(code)) == [("WSC101", 8)]


def test_optimizer_step_and_init_group_are_roots(lint):
    code = """
    import torch
    from torch.optim import Optimizer

    class Clip(Optimizer):
        def _init_group(self, group):
            for p in group["params"]:
                if p.grad.norm() > 1:
                    p.grad.mul_(0.5)

        def step(self, closure=None):
            for group in self.param_groups:
                if group["lr"] > 0.1:
                    pass
    """
    assert codes(lint(code, select=("WSC101",))) == [("WSC101", 7), ("WSC101", 12)]


def test_decorated_and_wrapped_functions_are_roots(lint):
    code = """
    import cerebras.pytorch as cstorch
    import torch

    @cstorch.trace
    def train_step(x):
        if x.sum() > 0:
            x = x * 2
        return x

    @torch.compile(fullgraph=True)
    def compiled(x):
        return x if x.mean() > 0 else -x

    def plain(x):
        return x if x.mean() > 0 else -x

    wrapped = torch.compile(plain)

    def never_traced(x):
        return x if x.mean() > 0 else -x
    """
    assert codes(lint(code, select=("WSC101", "WSC103"))) == [
        ("WSC101", 6), ("WSC103", 12), ("WSC103", 15)]


def test_trace_roots_patterns_from_settings(lint):
    code = """
    def loss_fn(pred, target):
        if (pred - target).abs().max() > 1:
            pred = pred.clamp(-1, 1)
        return pred

    def other(x):
        if x.sum() > 0:
            x = -x
        return x
    """
    assert codes(lint(code)) == []
    assert codes(lint(code, trace_roots=("model.loss_*",))) == [("WSC101", 2)]
    assert len(lint(code, trace_roots=("*",))) == 2


def test_cross_file_chain_through_package_relative_imports(lint):
    files = {
        "pkg/__init__.py": "",
        "pkg/ops.py": """
            import torch

            def renorm(x):
                if x.norm() > 1:
                    x = x / x.norm()
                return x
        """,
        "pkg/model.py": """
            from torch import nn
            from .ops import renorm

            class Net(nn.Module):
                def forward(self, x):
                    return renorm(x)
        """,
    }
    found = lint(files, select=("WSC101",))
    assert [(d.path.name, d.line) for d in found] == [("ops.py", 4)]
    assert found[0].chain == ["pkg.model.Net.forward", "pkg.ops.renorm"]


def test_reexported_helper_through_package_init(lint):
    files = {
        "lib/__init__.py": "from .ops import renorm\n",
        "lib/ops.py": """
            def renorm(x):
                return x if x.norm() > 1 else x * 2
        """,
        "net.py": """
            import lib
            from torch import nn

            class Net(nn.Module):
                def forward(self, x):
                    return lib.renorm(x)
        """,
    }
    found = lint(files, select=("WSC103",))
    assert [(d.path.name, d.line, d.chain[-1]) for d in found] == [("ops.py", 2, "lib.ops.renorm")]


def test_submodule_instances_reach_their_methods(lint):
    code = """
    import torch
    from torch import nn

    class Rotary:
        def apply(self, x, pos):
            if pos.max() > 2048:
                pos = pos % 2048
            return x * pos

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.rotary = Rotary()

        def forward(self, x, pos):
            return self.rotary.apply(x, pos)
    """
    found = lint(code, select=("WSC101",))
    assert codes(found) == [("WSC101", 6)]
    assert found[0].chain[-1] == "model.Rotary.apply"


def test_untraced_code_is_quiet(lint):
    code = """
    import torch
    from torch import nn

    def init_weights(module):
        if module.weight.std() > 1:
            module.weight.data.normal_()

    def load_batch(path):
        x = torch.load(path)
        while x.numel() > 0 and x.sum() > 0:
            x = x[1:]
        assert torch.isfinite(x).all()
        return x if x.mean() > 0 else -x

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.randn(4))
            if self.w.sum() > 0:
                self.apply(init_weights)

        def forward(self, x):
            return x * self.w

    def evaluate(model, loader):
        for x in loader:
            if model(x).max() > 0:
                print("positive")
    """
    assert lint(code) == []


ROPE = """
from functools import wraps

import torch
from torch import nn


def dynamic_rope_update(rope_forward):
    def dynamic_frequency_update(self, position_ids, device, layer_type=None):
        seq_len = torch.max(position_ids) + 1
        if seq_len > self.max_seq_len_cached:  # expect: WSC101
            self.inv_freq = self.inv_freq / 2
            setattr(self, f"{layer_type}_max_seq_len_cached", seq_len)

    @wraps(rope_forward)
    def wrapper(self, x, position_ids, layer_type=None):
        if "dynamic" in self.rope_type:
            dynamic_frequency_update(self, position_ids, device=x.device, layer_type=layer_type)
        return rope_forward(self, x, position_ids)

    return wrapper


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, rope_type="dynamic"):
        super().__init__()
        self.rope_type = rope_type
        self.max_seq_len_cached = 2048
        self.register_buffer("inv_freq", torch.ones(dim))

    @torch.no_grad()
    @dynamic_rope_update
    def forward(self, x, position_ids):
        freqs = position_ids[..., None].float() * self.inv_freq
        return freqs.cos(), freqs.sin()
"""


def test_a_decorator_wrapping_a_traced_method_is_traced(lint):
    """The wrapper a project decorator returns runs in place of the traced forward, with its arguments: the
    dynamic-RoPE growth check on a tensor is reported; `self.rope_type`, a string, is not (#24 item 9)."""
    found = lint(ROPE)
    expected = [i + 1 for i, line in enumerate(ROPE.lstrip("\n").splitlines()) if "# expect" in line]
    assert [line for code, line in codes(found) if code.startswith("WSC1")] == expected
    assert not [d for d in found if d.code == "WSC206"]  # `layer_type=None` of the wrapper is not a tensor
    finding = next(d for d in found if d.code == "WSC101")
    assert finding.chain == ["model.RotaryEmbedding.forward", "model.dynamic_rope_update"]


def test_a_decorator_of_untraced_code_is_not_traced(lint):
    assert [c for c, _ in codes(lint(ROPE.replace("class RotaryEmbedding(nn.Module):", "class RotaryEmbedding:")))
            if c.startswith("WSC1")] == []


CUSTOM_AUTOGRAD = """
import torch
from torch import nn
from torch.autograd import Function


class ClampedScale(Function):
    @staticmethod
    def forward(ctx, x, scale):
        ctx.save_for_backward(x)
        ctx.scale = scale
        if x.abs().max() > 1e4:  # expect: WSC101
            x = x.clamp(-1e4, 1e4)
        return x * scale

    @staticmethod
    def backward(ctx, grad_output):
        (x,) = ctx.saved_tensors
        grad_scale = None
        if ctx.needs_input_grad[1]:
            grad_scale = (grad_output * x).sum()
        if grad_output.norm() > 1.0:  # expect: WSC101
            grad_output = grad_output / grad_output.norm()
        return grad_output, grad_scale


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return ClampedScale.apply(self.proj(x), 0.5)
"""


def test_a_custom_autograd_function_applied_in_a_traced_forward_is_traced_forward_and_backward(lint):
    """`Fn.apply(x)` runs the static `forward(ctx, x)` in the step and `backward(ctx, grad)` in its backward
    (#37 item 4): a branch on a tensor in either is reported; `ctx.needs_input_grad[1]` is not a tensor."""
    found = lint(CUSTOM_AUTOGRAD)
    expected = [i + 1 for i, line in enumerate(CUSTOM_AUTOGRAD.lstrip("\n").splitlines()) if "# expect" in line]
    assert sorted(line for code, line in codes(found) if code.startswith("WSC1")) == expected
    backward = next(d for d in found if d.line == expected[1])
    assert backward.chain == ["model.Block.forward", "model.ClampedScale.backward"]


def test_a_custom_autograd_function_applied_outside_traced_code_is_not_traced(lint):
    untraced = CUSTOM_AUTOGRAD.replace("class Block(nn.Module):", "class Block:")
    assert [c for c, _ in codes(lint(untraced)) if c.startswith("WSC1")] == []
