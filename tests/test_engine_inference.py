"""Which values are tensors: sources, propagation, and the static shapes that are never a finding."""

from __future__ import annotations

import pytest

from tests.conftest import codes


def test_static_shapes_are_never_findings(lint):
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self, cfg, layers):
            super().__init__()
            self.cfg = cfg
            self.layers = nn.ModuleList(layers)
            self.eps = 1e-5
            self.use_bias = cfg.use_bias

        def forward(self, x, mask=None, labels=None, scale: float = 1.0, causal: bool = False):
            if mask is None:
                mask = torch.ones_like(x)
            if isinstance(labels, torch.Tensor) and labels is not None:
                x = x + labels
            if x.shape[0] > 1 and x.size(1) == 4 and x.dim() == 2 and x.numel() > 0:
                x = x * 2
            if x.ndim == 3 or x.dtype == torch.float16 or x.device.type == "cpu":
                x = x.float()
            if self.training and self.cfg.dropout > 0 and self.use_bias:
                x = x * 0.9
            if scale != 1.0 and not causal:
                x = x * scale
            for layer in self.layers:
                x = layer(x)
            for i in range(self.cfg.num_layers):
                x = x + i
            for i in range(len(self.layers)):
                x = x * self.eps
            n = x.shape[-1]
            while n > 1:
                n //= 2
            with torch.no_grad():
                y = x.detach()
            return x if torch.jit.is_scripting() else y
    """
    assert lint(code) == []


def test_propagation_through_assignment_unpacking_and_arithmetic(lint):
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("running", torch.zeros(1))
            self.weight = nn.Parameter(torch.ones(3))

        def forward(self, x):
            a, b = x.chunk(2)
            total = a.sum() + 1
            total += b.mean()
            stats = (total, x.shape)
            if stats[0] > 0:
                x = x + 1
            if self.running > 0:
                x = x * 2
            if self.weight[0] < 0:
                x = -x
            return x
    """
    assert codes(lint(code, select=("WSC101",))) == [("WSC101", 15), ("WSC101", 17), ("WSC101", 19)]


def test_flow_sensitivity_rebinding_to_static(lint):
    code = """
    from torch import nn

    class Net(nn.Module):
        def forward(self, x):
            n = x.sum()
            n = x.shape[0]
            if n > 2:
                x = x[:2]
            return x
    """
    assert lint(code) == []


def test_host_values_read_from_tensors_are_data_dependent(lint):
    code = """
    from torch import nn

    class Net(nn.Module):
        def forward(self, x):
            peak = x.max().item()
            if peak > 1.0:
                x = x / peak
            for v in x.unique().tolist():
                x = x + v
            return x
    """
    assert codes(lint(code, select=("WSC1",))) == [("WSC101", 6), ("WSC107", 8)]


def test_helper_parameters_take_the_kinds_callers_pass(lint):
    code = """
    from torch import nn

    def maybe_scale(x, factor):
        if factor > 1:
            x = x * factor
        return x

    class Net(nn.Module):
        def __init__(self, factor):
            super().__init__()
            self.factor = factor

        def forward(self, x):
            return maybe_scale(x, self.factor)
    """
    assert lint(code) == []
    tensor_factor = code.replace("maybe_scale(x, self.factor)", "maybe_scale(x, x.std())")
    assert codes(lint(tensor_factor, select=("WSC101",))) == [("WSC101", 4)]


def test_helper_return_kinds_flow_back_to_callers(lint):
    code = """
    import torch
    from torch import nn

    def energy(x):
        return (x ** 2).sum()

    def width(x):
        return x.shape[-1]

    class Net(nn.Module):
        def forward(self, x):
            if width(x) > 4:
                x = x[..., :4]
            if energy(x) > 1:
                x = x * 0.5
            return x
    """
    assert codes(lint(code, select=("WSC101",))) == [("WSC101", 14)]


def test_unannotated_flags_and_annotated_python_numbers_are_static(lint):
    code = """
    from typing import Optional
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x, use_cache=None, return_dict=None, eps: float = 1e-6,
                    mode: str = "sum", k: Optional[int] = None, temperature=1.0):
            if use_cache and return_dict:
                x = x * 2
            if eps > 0 and mode == "sum" and k is not None and temperature != 1.0:
                x = x / temperature
            return x
    """
    assert lint(code) == []


def test_optimizer_lr_is_a_tensor_but_other_hyperparameters_are_not(lint):
    code = """
    import torch
    from torch.optim import Optimizer

    class SGD(Optimizer):
        def step(self, closure=None):
            for group in self.param_groups:
                if group["momentum"] > 0 and group["nesterov"]:
                    pass
                for p in group["params"]:
                    if p.grad is None:
                        continue
                    if group["lr"] > 0.5:
                        p.mul_(0.5)
    """
    assert codes(lint(code, select=("WSC101",))) == [("WSC101", 12)]


def test_imports_anywhere_in_the_module_are_resolved(lint):
    code = """
    from typing import TYPE_CHECKING
    from torch import nn

    if TYPE_CHECKING:
        import numpy as np

    class Net(nn.Module):
        def forward(self, x):
            try:
                import torch.nn.functional as F
            except ImportError:
                raise
            y = F.relu(x)
            if y.mean() > 0:
                y = -y
            return y
    """
    assert codes(lint(code, select=("WSC101",))) == [("WSC101", 14)]


def test_isinstance_narrows_optional_tensor_parameters_to_objects(lint):
    code = """
    import torch
    from torch import nn
    from .cache_utils import EncoderDecoderCache

    class Attention(nn.Module):
        def forward(self, hidden, past_key_values=None, mask=None):
            is_updated = False
            if isinstance(past_key_values, EncoderDecoderCache):
                is_updated = past_key_values.is_updated.get(0)
            if is_updated and past_key_values is not None:
                hidden = hidden * 2
            if isinstance(mask, torch.Tensor) and mask.any():
                hidden = hidden * mask
            return hidden
    """
    assert codes(lint(code, select=("WSC101",))) == [("WSC101", 12)]


@pytest.mark.parametrize("target", ("wsc", "compile"))
def test_methods_called_through_a_dict_of_methods_are_traced(lint, target):
    code = """
    import torch
    from torch import nn

    class MultiLoss(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.kind = kind
            self.loss_map = {"ce": self.cross_entropy, "focal": self.focal}
            self.reduce = self.mean_of

        def cross_entropy(self, logits, labels):
            return torch.nn.functional.cross_entropy(logits, labels)

        def focal(self, logits, labels):
            p = logits.softmax(-1)
            if p.max() > 0.99:
                p = p.clamp(max=0.99)
            return -(1 - p).pow(2).mean()

        def mean_of(self, loss):
            return loss.mean().item()

        def unused(self, logits):
            return logits.sum().item()

        def forward(self, logits, labels):
            return self.reduce(self.loss_map[self.kind](logits, labels))
    """
    assert codes(lint(code, target=target)) == [("WSC101", 16), ("WSC201", 21)]


REGISTRY = """
from collections.abc import MutableMapping


class FunctionRegistry(MutableMapping):
    _global_mapping = {}

    def __init__(self):
        self._local_mapping = {}

    def __getitem__(self, key):
        if key in self._local_mapping:
            return self._local_mapping[key]
        return self._global_mapping[key]

    def __setitem__(self, key, value):
        self._local_mapping[key] = value

    def __delitem__(self, key):
        del self._local_mapping[key]

    def __iter__(self):
        return iter({**self._global_mapping, **self._local_mapping})

    def __len__(self):
        return len(self._global_mapping.keys() | self._local_mapping.keys())
"""

MASKS = """
import torch

from attn.registry import FunctionRegistry


def dense_mask(padding_mask, length):
    if padding_mask.all():
        return None
    return padding_mask[:, None, :length]


def blocked_mask(padding_mask, length):
    return padding_mask.float().cumsum(-1).tolist()


def eager_attention(q, k, v, mask):
    return (q @ k.transpose(-1, -2)).softmax(-1) @ v


def chunked_attention(q, k, v, mask):
    n = int(mask.sum())
    return eager_attention(q[:, :n], k[:, :n], v[:, :n], None)


class MaskRegistry(FunctionRegistry):
    _global_mapping = {"dense": dense_mask, "blocked": blocked_mask}

    def get_interface(self, name, default):
        if name is None:
            raise KeyError(name)
        return super().get(name, default)


MASK_FUNCTIONS: MaskRegistry = MaskRegistry()
ATTENTION_FUNCTIONS = {"chunked": chunked_attention}


def sliding_mask(padding_mask, length):
    return padding_mask.nonzero()
"""


@pytest.mark.parametrize("target", ("wsc", "compile"))
def test_functions_called_through_a_module_level_registry_are_traced(lint, target):
    """`MASK_FUNCTIONS[config.kind](...)` on a registry object built at module level (its class keeps a dict of
    functions) and `ATTENTION_FUNCTIONS[name](...)` on a module-level dict, both imported by the model:
    every function the registry holds is traced (#24 item 9, module-level registries)."""
    model = """
    import torch
    from torch import nn

    from attn.masks import ATTENTION_FUNCTIONS, MASK_FUNCTIONS, eager_attention


    class Attention(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.qkv = nn.Linear(config.hidden, 3 * config.hidden)

        def forward(self, x, padding_mask):
            mask = MASK_FUNCTIONS[self.config.mask_kind](padding_mask, x.shape[1])
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            attention = ATTENTION_FUNCTIONS.get(self.config.attention, eager_attention)
            return attention(q, k, v, mask)
    """
    found = lint({"attn/__init__.py": "", "attn/registry.py": REGISTRY, "attn/masks.py": MASKS, "model.py": model},
                 target=target)
    assert sorted((d.path.name, d.code, d.line) for d in found) == [
        ("masks.py", "WSC101", 7), ("masks.py", "WSC201", 13), ("masks.py", "WSC203", 21)]


def test_a_registry_lookup_method_traces_the_registry_and_the_default(lint):
    """`MASK_FUNCTIONS.get_interface(name, default)`, whose body is `super().get(name, default)`: the
    registry's functions and the default."""
    model = """
    from torch import nn

    from attn.masks import MASK_FUNCTIONS, sliding_mask


    class Attention(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.kind = kind

        def forward(self, x, padding_mask):
            mask_fn = MASK_FUNCTIONS.get_interface(self.kind, sliding_mask)
            return x * mask_fn(padding_mask, x.shape[1])
    """
    found = lint({"attn/__init__.py": "", "attn/registry.py": REGISTRY, "attn/masks.py": MASKS, "model.py": model})
    assert sorted((d.path.name, d.code, d.line) for d in found) == [
        ("masks.py", "WSC101", 7), ("masks.py", "WSC201", 13), ("masks.py", "WSC501", 39)]


def test_registry_functions_stay_quiet_when_no_traced_code_looks_them_up(lint):
    """The registry alone, or looked up from a data-loading helper: nothing is traced, nothing reported."""
    loader = """
    from attn.masks import ATTENTION_FUNCTIONS, MASK_FUNCTIONS


    def collate(batch, kind):
        mask = MASK_FUNCTIONS[kind](batch["padding_mask"], 8)
        return ATTENTION_FUNCTIONS["chunked"](batch["q"], batch["k"], batch["v"], mask)
    """
    found = lint({"attn/__init__.py": "", "attn/registry.py": REGISTRY, "attn/masks.py": MASKS, "data.py": loader})
    assert found == []


PROPERTY_LOSS = """
import logging

import torch
from torch import nn

logger = logging.getLogger(__name__)


def masked_loss(logits, labels):
    valid = labels >= 0
    return nn.functional.cross_entropy(logits[valid], labels[valid])


def plain_loss(logits, labels):
    return nn.functional.cross_entropy(logits, labels)


LOSSES = {"masked": masked_loss, "plain": plain_loss}


class Classifier(nn.Module):
    def __init__(self, loss_type):
        super().__init__()
        self.loss_type = loss_type
        self.proj = nn.Linear(4, 4)

    @property
    def loss_function(self):
        if hasattr(self, "_loss_function"):
            return self._loss_function
        loss_type = self.loss_type
        if loss_type not in LOSSES:
            logger.warning(f"unknown loss {loss_type}, using the plain one")
            loss_type = "plain"
        return LOSSES[loss_type]

    @loss_function.setter
    def loss_function(self, value):
        self._loss_function = value

    def forward(self, x, labels):
        loss = self.loss_function(self.proj(x), labels)
        if loss > 10:
            loss = loss.clamp(max=10)
        return loss
"""


@pytest.mark.parametrize("target", ("wsc", "compile"))
def test_a_property_getter_is_followed_and_its_result_called(lint, target):
    """`self.loss_function(logits, labels)` on a property whose setter is defined after it: the getter (not the
    setter) is traced, and the function it returns is called with the arguments, so the loss is a tensor."""
    found = codes(lint(PROPERTY_LOSS, target=target))
    expected = [("WSC502", 11), ("WSC502", 11), ("WSC101", 43)]
    if target == "compile":  # any log in the compiled step is a graph break
        expected.insert(2, ("WSC701", 33))
    assert found == expected


NUMPY_DRAWS = """
import numpy as np
import torch
from torch import nn


class SpecAugment(nn.Module):
    def __init__(self, mask_prob, mask_length):
        super().__init__()
        self.mask_prob = mask_prob
        self.mask_length = mask_length

    def forward(self, features):
        batch, length = features.shape[0], features.shape[-1]
        epsilon = np.random.rand(1).item()
        spans = int(self.mask_prob * length / self.mask_length + epsilon)
        starts = np.random.randint(0, length - self.mask_length, size=(batch, 4))
        np.random.seed(0)
        return features * (spans > 0), starts
"""


@pytest.mark.parametrize("target", ("wsc", "compile"))
def test_numpy_draws_are_traced_values_under_compile(lint, target):
    """Dynamo traces NumPy as tensors: `np.random.rand(1).item()` in a compiled step is a graph break at the
    `.item()` (#24 item 8). On lazy tensors the draw is a host constant (WSC704) and nothing more; seeding
    is never a traced value."""
    expected = [("WSC704", 14), ("WSC704", 16), ("WSC704", 17)]
    if target == "compile":
        expected.insert(0, ("WSC201", 14))
    assert codes(lint(NUMPY_DRAWS, target=target)) == expected


def test_numpy_draws_stay_quiet_outside_traced_code(lint):
    code = """
    import numpy as np


    def make_masks(batch, length):
        epsilon = np.random.rand(1).item()
        return np.random.randint(0, length, size=(batch, int(4 + epsilon)))
    """
    assert lint(code, target="compile") == []


CLIPPED_SGD = """
import torch
from torch.optim import Optimizer


class ClippedSGD(Optimizer):
    def __init__(self, params, lr=1e-3, max_grad_norm=1.0):
        super().__init__(params, dict(lr=lr, max_grad_norm=max_grad_norm))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            grads = [p.grad for p in group["params"] if p.grad is not None]
            scale = group["max_grad_norm"]
            if scale > 0:
                total = torch.norm(torch.stack([g.norm() for g in grads]))
                scale = torch.clamp(scale / (total + 1e-6), max=1.0)
            if isinstance(scale, torch.Tensor) or scale != 1.0:
                torch._foreach_mul_(grads, scale)
            if torch.is_tensor(scale) and scale < 0.5:
                torch._foreach_mul_(grads, 2.0)
            torch._foreach_add_(group["params"], grads, alpha=-1e-3)
"""


@pytest.mark.parametrize("target", ("wsc", "compile"))
def test_the_right_side_of_and_or_sees_what_the_left_side_decided(lint, target):
    """`isinstance(scale, torch.Tensor) or scale != 1.0` compares only a Python number (the right side runs
    where the left is false); `torch.is_tensor(scale) and scale < 0.5` compares the tensor."""
    assert codes(lint(CLIPPED_SGD, target=target)) == [("WSC101", 19)]
