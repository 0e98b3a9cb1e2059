"""Python values in traced code are not tensors: containers, flags, host constants, narrowed values.

Each negative test is a false alarm seen on real model and optimizer libraries (written anew here);
each has a positive twin where the same shape does hold a tensor, in every target where the rule runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import codes

TARGETS = ("wsc", "compile")


@pytest.mark.parametrize("target", TARGETS)
def test_containers_of_inputs_are_python_questions(lint, target):
    code = """
    import torch
    from torch import nn

    class Seq2Seq(nn.Module):
        def forward(self, batch, features, cache=None, **kwargs):
            cache = cache or {}
            if "labels" in batch:
                labels = batch["labels"]
            if len(features) > 0:
                hidden = self.encoder(batch["input_ids"])
            if "past" in cache:
                hidden = hidden + cache["past"]
            encoder_kwargs = {k[len("encoder_"):]: v for k, v in kwargs.items() if k.startswith("encoder_")}
            out = self.decoder(hidden, **encoder_kwargs)
            if isinstance(out, dict):
                out = out["logits"]
            if batch.get("mask") is None:
                return out
            return out * batch["mask"]
    """
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_a_tensor_parameter_still_branches(lint, target):
    code = """
    import torch
    from torch import nn

    class Gate(nn.Module):
        def forward(self, scores, cache=None):
            if scores.sum() > 0:
                scores = scores * 2
            cache = cache or {}
            if "k" in cache and scores.max() > 1:
                scores = scores + cache["k"]
            return scores
    """
    assert [c for c, _ in codes(lint(code, target=target))] == ["WSC101", "WSC101"]


@pytest.mark.parametrize("target", TARGETS)
def test_parameters_annotated_as_containers_of_tensors_are_containers(lint, target):
    code = """
    from typing import Dict, List, Optional
    import torch
    from torch import nn

    class UpBlock(nn.Module):
        def forward(self, hidden: torch.Tensor, conv_cache: dict[str, torch.Tensor] | None = None,
                    extras: Optional[Dict[str, torch.Tensor]] = None, skips: "List[torch.Tensor]" = ()):
            conv_cache = conv_cache or {}
            extras = extras or {}
            if "scale" in extras:
                hidden = hidden * extras["scale"]
            if skips:
                hidden = hidden + skips[-1]
            for key in conv_cache:
                hidden = hidden + conv_cache[key]
            return hidden
    """
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_tensors_inside_annotated_containers_still_branch(lint, target):
    code = """
    import torch
    from torch import nn

    class UpBlock(nn.Module):
        def forward(self, hidden: torch.Tensor, conv_cache: dict[str, torch.Tensor] | None = None,
                    scale: Optional[torch.Tensor] = None):
            conv_cache = conv_cache or {}
            if conv_cache["resnet_0"].sum() > 0:
                hidden = hidden * 2
            return hidden if scale is None else hidden * (scale or 1.0)
    """
    assert [c for c, _ in codes(lint(code, target=target))] == ["WSC101", "WSC105"]


@pytest.mark.parametrize("target", TARGETS)
def test_helpers_returning_torch_mode_predicates_are_python_bools(lint, target):
    code = """
    import torch
    from torch import nn

    def autocast_on(device: str = "cuda"):
        try:
            return torch.is_autocast_enabled(device)
        except TypeError:
            if device == "cpu":
                return torch.is_autocast_cpu_enabled()
            return torch.is_autocast_enabled()

    def needs_overflow_guard(x):
        return x.abs().max() > 65504

    class FastLayerNorm(nn.LayerNorm):
        def forward(self, x):
            if autocast_on(x.device.type):
                x = x.float()
            if torch.is_inference_mode_enabled() or torch.is_conj(x):
                x = x.detach()
            if needs_overflow_guard(x):
                x = x.clamp(-65504, 65504)
            return super().forward(x)
    """
    assert [c for c, _ in codes(lint(code, target=target))] == ["WSC101"]


@pytest.mark.parametrize("target", TARGETS)
def test_flag_parameters_passed_python_values(lint, target):
    code = """
    from torch import nn

    class DecoderLayer(nn.Module):
        def forward(self, hidden, layer_type, mask=None, output_attentions=None):
            if layer_type == "sliding":
                hidden = hidden * 0.5
            if output_attentions:
                return hidden, hidden
            return hidden

    class Decoder(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.first = DecoderLayer()
            self.second = DecoderLayer()

        def forward(self, hidden, mask):
            hidden = self.first(hidden, "full", mask)
            return self.second(hidden, "sliding", mask, output_attentions=False)

    class Inner(nn.Module):
        def forward(self, x, use_cache):
            if use_cache:
                return x
            return x + 1
    """
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_callers_passing_tensors_win_over_the_default(lint, target):
    code = """
    from torch import nn

    class Router(nn.Module):
        def forward(self, hidden, threshold):
            if threshold > 0.5:
                hidden = hidden * 2
            return hidden

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.router = Router()

        def forward(self, hidden):
            return self.router(hidden, hidden.mean())
    """
    assert codes(lint(code, target=target)) == [("WSC101", 5)]


@pytest.mark.parametrize("target", TARGETS)
def test_callers_passing_python_values_win_over_the_default(lint, target):
    code = """
    from torch import nn

    class Pool(nn.Module):
        def forward(self, hidden, size):
            if size > 1:
                hidden = hidden[:, :size]
            return hidden

    class Block(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.pool = Pool()
            self.size = config.pool_size

        def forward(self, hidden):
            return self.pool(hidden, self.size) + self.pool(hidden, 4)
    """
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_host_constants_are_known_values(lint, target):
    code = """
    import torch

    class Lion(torch.optim.Optimizer):
        @torch.no_grad()
        def step(self, closure=None):
            beta1 = torch.tensor(0.9)
            beta2 = torch.tensor(0.99, device="cpu")
            for group in self.param_groups:
                for p in group["params"]:
                    state = self.state[p]
                    exp_avg = state["exp_avg"]
                    exp_avg.mul_(beta1).add_(p.grad, alpha=1.0 - beta1)
                    exp_avg.lerp_(p.grad, 1.0 - beta2)
    """
    assert codes(lint(code, target=target)) == []


def test_a_device_tensor_is_not_a_host_constant(lint):
    code = """
    import torch

    class Lion(torch.optim.Optimizer):
        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    beta1 = torch.tensor(0.9, device=p.device)
                    self.state[p]["exp_avg"].mul_(beta1).add_(p.grad, alpha=1.0 - beta1)
    """
    assert [c for c, _ in codes(lint(code))] == ["WSC401"]


@pytest.mark.parametrize("target", TARGETS)
def test_tensor_predicates_narrow_both_branches(lint, target):
    code = """
    import torch

    class ScaledSGD(torch.optim.Optimizer):
        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                lr = group["lr"]
                for p in group["params"]:
                    if torch.is_tensor(lr):
                        p.add_(p.grad * -lr)
                    else:
                        p.add_(p.grad, alpha=-lr)
                    if not isinstance(lr, torch.Tensor):
                        p.add_(p.grad, alpha=-lr)
                    step = lr.item() if torch.is_tensor(lr) else lr
    """
    found = codes(lint(code, target=target))
    assert found == [("WSC201", 15)], found  # only the .item() under the tensor branch


def test_the_tensor_branch_still_reports(lint):
    code = """
    import torch

    class ScaledSGD(torch.optim.Optimizer):
        @torch.no_grad()
        def step(self, closure=None):
            for group in self.param_groups:
                lr = group["lr"]
                for p in group["params"]:
                    if isinstance(lr, torch.Tensor):
                        p.add_(p.grad, alpha=-lr)
    """
    assert [c for c, _ in codes(lint(code))] == ["WSC401"]


def test_python_values_outside_traced_code_stay_quiet(lint):
    code = """
    import torch

    def collate(batch, cache=None, saved: dict[str, torch.Tensor] | None = None, **kwargs):
        def count(n):
            return int(n / 2)

        cache = cache or {count(len(batch)): None}
        saved = saved or {}
        if "labels" in batch and torch.is_tensor(batch["labels"]):
            return batch["labels"].item()
        return {k: v for k, v in kwargs.items() if k.startswith("x")}
    """
    assert codes(lint(code)) == []


EVAL_LOOP = """
import torch
from myframework.utils import is_torch_xla_available

if is_torch_xla_available():
    import torch_xla.core.xla_model as xm


def evaluate(model, loader):
    total = 0.0
    for batch in loader:
        logits = model(batch["input_ids"])
        total += logits.sum().item()
        if {guard}:
            xm.mark_step()
    return total
"""


@pytest.mark.parametrize("target", ("wsc", "xla"))
def test_a_loop_that_marks_steps_only_when_xla_is_there_is_not_a_step(lint, target):
    assert codes(lint(EVAL_LOOP.format(guard="is_torch_xla_available()"), target=target)) == []


@pytest.mark.parametrize("target", ("wsc", "xla"))
def test_a_loop_that_marks_steps_under_its_own_condition_is_a_step(lint, target):
    found = codes(lint(EVAL_LOOP.format(guard="total > 0"), target=target))
    assert ("WSC201", 12) in found, found


@pytest.mark.parametrize("target", TARGETS)
def test_a_kwargs_wrapper_passes_its_callers_kinds(lint, target):
    code = """
    from torch import nn

    class Attention(nn.Module):
        def forward(self, hidden, threshold=None, scale=None):
            if threshold > 0:
                hidden = hidden.clamp(min=threshold)
            if scale > 0:
                hidden = hidden * scale
            return hidden

    class Checkpointed(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Attention()

        def forward(self, *args, **kwargs):
            return self.inner(*args, **kwargs)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = Checkpointed()

        def forward(self, hidden):
            return self.attn(hidden, threshold=0.5, scale=hidden.std())
    """
    assert codes(lint(code, target=target)) == [("WSC101", 7)]


@pytest.mark.parametrize("target", TARGETS)
def test_a_wrapper_root_spreading_args_does_not_turn_options_into_tensors(lint, target):
    code = """
    import torch
    from torch import nn

    class Decoder(nn.Module):
        def forward(self, input_ids, attention_mask, past_key_values=None, use_cache=None, threshold=None):
            hidden = self.embed(input_ids) * attention_mask
            if use_cache and past_key_values is None:
                past_key_values = {}
            if attention_mask.sum() > 0:
                hidden = hidden + 1
            return hidden, (past_key_values if use_cache else None)

    class DecoderWrapper(nn.Module):
        def __init__(self):
            super().__init__()
            self.decoder = Decoder()

        def forward(self, *args, **kwargs):
            return self.decoder(*args, **kwargs)
    """
    assert codes(lint(code, target=target)) == [("WSC101", 9)]


@pytest.mark.parametrize("target", TARGETS)
def test_a_local_function_takes_the_kinds_it_is_called_with(lint, target):
    code = """
    import torch
    from torch import nn

    class SpecAugment(nn.Module):
        def forward(self, features, mask_prob: float = 0.05, mask_length: int = 10):
            batch, length = features.shape[0], features.shape[-1]

            def span_count(input_length):
                count = int(mask_prob * input_length / mask_length)
                return max(count, 1)

            def gate(x):
                return x * (x.mean() > 0)

            def checkpointed(x):
                if x.sum() > 0:
                    x = x * 2
                return x

            spans = [span_count(length) for _ in range(batch)]
            hidden = torch.utils.checkpoint.checkpoint(checkpointed, features)
            if gate(features).sum() > 0:
                hidden = hidden + 1
            return hidden, spans
    """
    assert codes(lint(code, target=target)) == [("WSC101", 16), ("WSC101", 22)]


TRANSFORM = """
import torch
from torch import nn


class RandomCropOrPad(nn.Module):
    def forward(self, img):
        h = int(torch.randint(0, img.shape[-1], (1,)).item())
        if img.mean() > 0.5:
            img = img.flip(-1)
        return img[..., :h]
"""


@pytest.mark.parametrize("path", ["mylib/data/transforms.py", "mylib/transforms.py", "mylib/augmentations/crop.py",
                                  "mylib/naflex_transforms.py"])
def test_data_pipeline_modules_are_not_roots(lint, path):
    packages = {str(Path(path).parent / "__init__.py"): "", "mylib/__init__.py": ""}
    assert codes(lint({path: TRANSFORM, **packages})) == []


def test_a_transform_a_model_calls_is_traced(lint):
    model = """
    from torch import nn
    from mylib.data.transforms import RandomCropOrPad

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.crop = RandomCropOrPad()

        def forward(self, x):
            return self.crop(x)
    """
    found = codes(lint({"mylib/data/transforms.py": TRANSFORM, "mylib/model.py": model,
                        "mylib/__init__.py": "", "mylib/data/__init__.py": ""}))
    assert ("WSC101", 8) in found, found


def test_the_same_transform_in_a_model_package_is_a_root(lint):
    assert ("WSC101", 8) in codes(lint({"mylib/layers/crop.py": TRANSFORM, "mylib/__init__.py": "",
                                  "mylib/layers/__init__.py": ""}))


STARRED = """
import torch


class Adan(torch.optim.Optimizer):
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                grad, lr, beta1, beta2, state = p.grad, group["lr"], *group["betas"], self.state[p]
                if len(state) == 0:
                    state["exp_avg"] = torch.zeros_like(p)
                state["exp_avg"].mul_(beta1).add_(grad, alpha=1 - beta1)
                first, *middle, last = grad, beta1, beta2, state
                if last["exp_avg"].sum() > 0:
                    p.add_(first, alpha=middle[0])
"""


def test_starred_unpacking_maps_both_ends(lint):
    found = codes(lint(STARRED))
    assert ("WSC301", 10) in found and ("WSC101", 14) in found, found
    assert not [c for c in found if c[0] == "WSC401"], found  # beta1 and middle[0] are Python numbers


def test_starred_unpacking_outside_traced_code_stays_quiet(lint):
    assert codes(lint(STARRED.replace("torch.optim.Optimizer", "object"))) == []


@pytest.mark.parametrize("target", TARGETS)
def test_callers_passing_tensors_win_over_a_number_annotation_and_the_message_says_so(lint, target):
    code = """
    import torch
    from torch import nn

    class Scheduler:
        def step(self, model_output, timestep: int, sample):
            if timestep > 0:
                sample = sample - 0.1 * model_output
            return sample * self.alphas[timestep]

        def scale(self, sample, sigma: float = 1.0):
            if sigma > 0:
                sample = sample / sigma
            return sample

    class Denoiser(nn.Module):
        def __init__(self):
            super().__init__()
            self.scheduler = Scheduler()

        def forward(self, noisy, timesteps):
            out = self.unet(noisy, timesteps)
            out = self.scheduler.scale(out, sigma=2.0)
            return self.scheduler.step(out, timesteps[0], noisy)
    """
    found = lint(code, target=target)
    assert codes(found) == [("WSC101", 6)]
    assert "`timestep` is annotated `int`, but the traced callers pass a tensor" in found[0].notes


def test_a_number_annotation_outside_traced_code_stays_quiet(lint):
    code = """
    import torch

    def step(model_output, timestep: int, sample):
        if timestep > 0:
            sample = sample - 0.1 * model_output
        return sample

    def sample_loop(model, x):
        for t in torch.arange(10):
            x = step(model(x), t, x)
        return x
    """
    assert codes(lint(code)) == []


ROPE_GRID = """
import torch
from torch import nn


class RopeGrid(nn.Module):
    def forward(self, x):
        b, c, t, h, w = x.shape
        sizes = (t, h // 2, w // 2)
        grid = torch.stack(torch.meshgrid(
            *[torch.linspace(0, s, s + 1, dtype=torch.float32)[:s] for s in sizes], indexing="ij"))
        longest = int(grid.view(-1).max().item()) + 1
        steps = torch.arange(longest)
        return x * steps.sum().item()
"""


def test_a_grid_of_python_sizes_is_a_host_constant_under_lazy_tracing(lint):
    """Seen in a video transformer's rotary grid (written anew here): linspace/meshgrid/stack of Python sizes
    with no device is an eager CPU tensor under lazy tracing; reading it back reads no traced value."""
    assert [c for c in codes(lint(ROPE_GRID, target="wsc")) if c[0] == "WSC201"] == []


def test_a_grid_of_python_sizes_read_back_breaks_the_compiled_graph(lint):
    """Under torch.compile dynamo traces the same factories: `.item()` of their result is a graph break."""
    found = codes(lint(ROPE_GRID, target="compile"))
    lines = ROPE_GRID.lstrip("\n").splitlines()
    assert ("WSC201", next(i for i, s in enumerate(lines, 1) if "grid.view" in s)) in found
    assert ("WSC201", next(i for i, s in enumerate(lines, 1) if "steps.sum()" in s)) in found


@pytest.mark.parametrize("change", [
    ("dtype=torch.float32)[:s]", "dtype=torch.float32, device=x.device)[:s]"),  # on the device
    ("sizes = (t, h // 2, w // 2)", "sizes = (t, int(x.sum()), w // 2)"),  # a size read from the data
    ("torch.linspace(0, s, s + 1, dtype=torch.float32)[:s]", "torch.rand(s)"),  # not a constant
    ("torch.stack(torch.meshgrid(", "x.flatten(0, 1)[0] + torch.stack(torch.meshgrid("),  # with a traced tensor
])
def test_a_grid_that_is_not_made_of_python_values_is_read_from_the_trace(lint, change):
    code = ROPE_GRID.replace(*change)
    assert code != ROPE_GRID
    lines = code.lstrip("\n").splitlines()
    assert ("WSC201", next(i for i, s in enumerate(lines, 1) if "grid.view" in s)) in codes(lint(code, target="wsc"))


def test_a_host_constant_grid_outside_traced_code_stays_quiet(lint):
    code = ROPE_GRID.replace("class RopeGrid(nn.Module):", "class RopeGrid:")
    assert codes(lint(code, target="compile")) == []


CONFIGURED_GRID = """
import torch
from torch import nn


class RopeGrid(nn.Module):
    def __init__(self, patch_size: list = [1, 2, 2]):
        super().__init__()
        self.patch_size = patch_size

    def rope(self, vis_rope_size: list[int]):
        grid = torch.stack(torch.meshgrid(
            *[torch.linspace(0, s, s + 1, dtype=torch.float32)[:s] for s in vis_rope_size], indexing="ij"))
        return torch.arange(8) + grid.view(-1).max().item() + 1

    def forward(self, x):
        b, c, t, h, w = x.shape
        tt = t // self.patch_size[0]
        return x * self.rope([tt, h // self.patch_size[1], w // self.patch_size[2]]).sum()
"""


def test_a_bare_container_annotation_with_a_literal_default_holds_python_values(lint):
    """`patch_size: list = [1, 2, 2]` (a video transformer's configuration): the annotation says nothing of
    the elements, the default does; sizes divided by them are Python numbers, the grid a host constant."""
    assert [c for c in codes(lint(CONFIGURED_GRID, target="wsc")) if c[0] == "WSC201"] == []
    line = next(i for i, s in enumerate(CONFIGURED_GRID.lstrip("\n").splitlines(), 1) if "grid.view" in s)
    assert ("WSC201", line) in codes(lint(CONFIGURED_GRID, target="compile"))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("change", [
    ("patch_size: list = [1, 2, 2]", "patch_size: list = None"),  # no default to tell
    ("patch_size: list = [1, 2, 2]", "patch_size: list = [torch.ones(1)]"),  # not literals
    ("self.patch_size = patch_size", "self.patch_size = [torch.ones(()), 2, 2]"),  # tensors assigned
])
def test_a_bare_container_without_literal_elements_is_not_known_python(lint, target, change):
    code = CONFIGURED_GRID.replace(*change)
    assert code != CONFIGURED_GRID
    line = next(i for i, s in enumerate(code.lstrip("\n").splitlines(), 1) if "grid.view" in s)
    assert ("WSC201", line) in codes(lint(code, target=target))


@pytest.mark.parametrize("target", TARGETS)
def test_a_class_annotation_wins_over_a_tensor_a_caller_is_only_assumed_to_pass(lint, target):
    """`cache: KVCache | None` given a root's unannotated input (assumed a tensor): a tensor is no `KVCache`, so
    the sizes its methods return stay Python ints, and the test on them is no tensor test (seen on transformers'
    mask helpers in a project: a cache taken for a tensor made every mask length a "tensor")."""
    code = """
    import torch
    from torch import nn

    class KVCache:
        def sizes(self, query_length: int) -> tuple[int, int]:
            return self.seen + query_length, 0

    def pad_mask(mask: torch.Tensor, cache: KVCache | None, query_length: int) -> torch.Tensor:
        total, offset = cache.sizes(query_length) if cache is not None else (query_length, 0)
        if total + offset > mask.shape[-1]:
            mask = torch.nn.functional.pad(mask, (0, total + offset - mask.shape[-1]))
        return mask

    class Decoder(nn.Module):
        def forward(self, hidden, mask, past):
            return hidden * pad_mask(mask, past, hidden.shape[1])[..., None]
    """
    assert codes(lint(code, target=target)) == []


@pytest.mark.parametrize("target", TARGETS)
def test_a_tensor_annotation_takes_a_callers_tensor_as_before(lint, target):
    """The twin: the parameter annotated a tensor is one, and a test of its value still branches on it."""
    code = """
    import torch
    from torch import nn

    def pad_mask(mask: torch.Tensor, lengths: torch.Tensor, query_length: int) -> torch.Tensor:
        if lengths.max() > mask.shape[-1]:
            mask = torch.nn.functional.pad(mask, (0, query_length))
        return mask

    class Decoder(nn.Module):
        def forward(self, hidden, mask, past):
            return hidden * pad_mask(mask, past, hidden.shape[1])[..., None]
    """
    assert codes(lint(code, target=target)) == [("WSC101", 5)]


@pytest.mark.parametrize("target", TARGETS)
def test_a_tensors_membership_in_a_dict_or_a_set_reads_no_value(lint, target):
    """`p not in self.state`, a cache keyed by parameters, a set of seen tensors: Python hashes a tensor by its
    identity, so the test is a Python bool and no value is read (a class of false findings on optimizer
    collections and model code); a tensor's membership in a list compares values (`==`) and still is one."""
    code = """
    import collections
    import torch
    from torch import nn


    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)
            self.scales = {}
            self.seen = set()
            self.order = collections.OrderedDict()

        def forward(self, x):
            w = self.proj.weight
            if w not in self.scales:
                self.scales[w] = 1.0
            if w in self.seen or w in self.order:
                x = x * 2
            visited = {p for p in self.proj.parameters()}
            if self.proj.bias in visited:
                x = x + 1
            return self.proj(x)


    class Lookahead(torch.optim.Optimizer):
        @torch.no_grad()
        def step(self):
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is None or p not in self.state:
                        continue
                    p.add_(p.grad, alpha=-0.1)
    """
    assert [d for d in lint(code, target=target) if d.code == "WSC101"] == []


@pytest.mark.parametrize("target", TARGETS)
def test_a_tensors_membership_in_a_list_or_a_tensor_still_reads_values(lint, target):
    code = """
    import torch
    from torch import nn


    class Picker(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x, ids):
            anchors = [x.mean(), x.max()]
            if x.sum() in anchors:
                x = x * 2
            if 3 in ids.argmax(-1):
                x = x + 1
            return self.proj(x)
    """
    lines = [d.line for d in lint(code, target=target) if d.code == "WSC101"]
    assert len(lines) == 2


@pytest.mark.parametrize("target", TARGETS)
def test_a_value_isinstance_shows_is_a_dtype_is_no_tensor(lint, target):
    """A helper given tensors and dtypes alike (`promote(x)`): past `isinstance(x, torch.dtype) and`, `x` is a
    dtype, and its membership in a tuple of dtypes is a Python question (set 3's F15); the tensor's own
    branch still reads nothing but its dtype, and a value test on a tensor still is one."""
    code = """
    import torch
    from torch import nn


    def promote(x):
        if isinstance(x, torch.dtype) and x in (torch.bfloat16, torch.float16):
            return torch.float32
        if isinstance(x, torch.Tensor) and x.dtype in (torch.bfloat16, torch.float16):
            return x.float()
        return x


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            h = promote(self.proj(x))
            if isinstance(h, torch.Tensor) and h.sum() > 0:
                h = h * 2
            return h.to(promote(x.dtype))
    """
    assert [d.line for d in lint(code, target=target) if d.code == "WSC101"] == [20]


@pytest.mark.parametrize("target", TARGETS)
def test_what_a_constructor_reads_from_tensors_is_a_constant_in_the_step(lint, target):
    """`self.batch_dims = torch.nonzero(...)[:, 0].tolist()` in `__init__`: read before any step runs, so in
    `forward` it is a fixed list of ints and iterating it unrolls nothing that changes (set 3's F1,
    normflows' coupling layers); the same read in `forward` still is one."""
    code = """
    import numpy as np
    import torch
    from torch import nn


    class Coupling(nn.Module):
        def __init__(self, shape):
            super().__init__()
            self.s = nn.Parameter(torch.zeros(shape))
            self.batch_dims = torch.nonzero(torch.tensor(self.s.shape) == 1, as_tuple=False)[:, 0].tolist()
            self.count = int(torch.tensor(shape).prod())

        def forward(self, z):
            if len(self.batch_dims) > 1:
                scale = np.prod([z.size(i) for i in self.batch_dims[1:]])
            else:
                scale = 1
            for _ in range(self.count):
                z = z * 1.0
            live = torch.nonzero(z[0] > 0)[:, 0].tolist()
            for i in live:
                z = z + i
            return z * torch.exp(self.s), scale * torch.sum(self.s)
    """
    found = [(d.code, d.line) for d in lint(code, target=target) if d.code.startswith(("WSC10", "WSC2"))]
    assert found and {line for _, line in found} <= {20, 21}  # the read in forward and the loop over it
