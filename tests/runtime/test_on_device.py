"""Ops the TorchScript lazy backend lacks run on the device under the checker, with the op's own values."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

pytest.importorskip("torch")

import torch  # noqa: E402
import torch._lazy.metrics  # noqa: E402

from cslint.runtime.findings import RuntimeReport  # noqa: E402
from cslint.runtime.lazy_backend import Watcher, init, run_lazy  # noqa: E402
from cslint.runtime.step_factory import build, load_factory  # noqa: E402

STEPS = Path(__file__).parent / "targets" / "traced_steps.py"


def on_lazy(fn, *tensors):
    """`fn` under the checker's dispatch mode on lazy copies of `tensors`, brought back to the CPU."""
    init()
    inputs = [t.to("lazy") for t in tensors]  # made before the step, as the checker's batches are
    with Watcher(RuntimeReport("t")):
        out = fn(*inputs)
    return out.to("cpu")


CASES = {
    "lerp scalar": (lambda a, b: torch.lerp(a, b, 0.1), (torch.randn(3, 4), torch.randn(3, 4))),
    "lerp tensor": (lambda a, b: torch.lerp(a, b, torch.full((4,), 0.7, device=a.device)),
                    (torch.randn(3, 4), torch.randn(3, 4))),
    "where broadcast, promoted, inf and nan on the side not chosen": (
        lambda c, a, b: torch.where(c > 0, a, b.double()),
        (torch.tensor([[1.0], [-1.0]]), torch.tensor([1.0, -math.inf, 3.0]), torch.tensor([math.nan, 2.0, math.inf]))),
    "where with -inf chosen": (lambda c, a: torch.where(c > 0, a, torch.zeros_like(a)),
                               (torch.tensor([1.0, -1.0]), torch.tensor([-math.inf, math.nan]))),
    "isneginf": (torch.isneginf, (torch.tensor([-math.inf, math.inf, 0.0, math.nan]),)),
    "all over a dim": (lambda m: m.all(dim=1), (torch.tensor([[True, True], [True, False]]),)),
    "all keepdim on ints": (lambda m: torch.all(m, dim=0, keepdim=True), (torch.tensor([[1, 0], [2, 3]]),)),
    "sin": (torch.sin, (torch.linspace(-10, 10, 50),)),
    "index by token, negative counts from the end": (
        lambda h, t: h[t], (torch.randn(5, 3), torch.tensor([4, 0, -1, 2]))),
    "index by token and slot": (lambda w, t, s: w[t, s],
                                (torch.randn(5, 2, 3), torch.tensor([1, 4, 4]), torch.tensor([0, 1, -2]))),
    "index_put accumulating repeated rows": (
        lambda x, t, v: torch.index_put(x, (t,), v, accumulate=True),
        (torch.zeros(4, 3), torch.tensor([1, 3, 1, -1]), torch.randn(4, 3))),
    "index_put accumulating a broadcast value over two indices": (
        lambda x, t, s, v: torch.index_put(x, (t, s), v, accumulate=True),
        (torch.ones(3, 2, 2), torch.tensor([0, 2, 0]), torch.tensor([1, 1, 1]), torch.randn(2))),
    "index_put replacing": (lambda x, t, v: torch.index_put(x, (t,), v),
                            (torch.zeros(4), torch.tensor([2, 0]), torch.tensor([5.0, 6.0]))),
    "index_put replacing a broadcast value": (lambda x, t, v: torch.index_put(x, (t,), v),
                                             (torch.zeros(4, 2), torch.tensor([3, -4]), torch.tensor([5.0, 6.0]))),
    "index by broadcast indices (a padding mask read per batch and key)": (
        lambda m, b, k: m[b, k], (torch.tensor([[1, 1, 0], [1, 0, 0]]).bool(), torch.arange(2)[:, None, None],
                                  torch.arange(3)[None, None, :])),
    "index_add": (lambda x, t, v: x.index_add(0, t, v, alpha=2),
                  (torch.randn(4, 3), torch.tensor([1, 3, 1]), torch.randn(3, 3))),
    "index_add along the last dim": (lambda x, t, v: x.index_add(-1, t, v),
                                     (torch.randn(2, 4), torch.tensor([0, 0, 2]), torch.randn(2, 3))),
    "one_hot": (lambda t: torch.nn.functional.one_hot(t, 5), (torch.tensor([[0, 4], [2, 2]]),)),
    "scatter a value": (lambda x, t: x.scatter(1, t, -1.5), (torch.randn(2, 4), torch.tensor([[3], [0]]))),
    "scatter src into a larger tensor, inf kept where not written": (
        lambda x, t, v: x.scatter(1, t, v),
        (torch.tensor([[math.inf, 0.0, 1.0], [2.0, math.nan, 3.0]]), torch.tensor([[1, 2], [0, 2]]),
         torch.randn(2, 3))),
    "scatter src on ints": (lambda x, t, v: x.scatter(0, t, v),
                            (torch.zeros(3, 2, dtype=torch.long), torch.tensor([[2, 0]]), torch.tensor([[7, -3]]))),
    "topk's gradient": (lambda x: torch.autograd.grad(x.topk(2, dim=-1).values.sum(), x)[0],
                        (torch.randn(3, 5).requires_grad_(),)),
    "safe softmax with a fully masked row": (
        lambda s: torch.ops.aten._safe_softmax(s, -1),
        (torch.tensor([[0.5, -math.inf, 1.0], [-math.inf, -math.inf, -math.inf]]),)),
    "safe softmax to float32": (lambda s: torch.ops.aten._safe_softmax(s, 0, dtype=torch.float32),
                                (torch.randn(3, 2, dtype=torch.bfloat16),)),
    "copy into a slice (a shifted copy of the ids)": (
        lambda ids: _shift_right(ids), (torch.tensor([[5, 6, 7], [8, 9, 1]]),)),
    "a boolean mask index is the op's own": (lambda x, m: x[m > 0], (torch.randn(4, 2), torch.tensor([1, -1, 1, 0]))),
}


def _shift_right(ids):
    shifted = ids.new_zeros(ids.shape)
    shifted[..., 1:] = ids[..., :-1].clone()
    shifted[..., 0] = 3
    return shifted


# A boolean mask's result has a value-dependent shape: the backend runs it on the CPU, and it is a finding.
RUN_BY_THE_BACKEND = {"a boolean mask index is the op's own": {"aten::index.Tensor"}}


@pytest.mark.parametrize("name", list(CASES))
def test_replacement_gives_the_ops_values_on_the_device(name: str) -> None:
    fn, tensors = CASES[name]
    expected = fn(*tensors)
    torch._lazy.metrics.reset()
    got = on_lazy(fn, *tensors)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    assert torch.allclose(got, expected, atol=1e-5, equal_nan=True), (got, expected)
    on_host = {n for n in torch._lazy.metrics.counter_names() if n.startswith("aten::")}
    assert on_host == RUN_BY_THE_BACKEND.get(name, set()), on_host


def test_adamw_step_runs_on_the_device_without_executing_the_graph_per_parameter() -> None:
    """The backend's CPU fallback for `lerp` executed the whole pending graph once per parameter and step."""
    init()
    step = build(load_factory(f"{STEPS}:adamw_step"), "lazy")
    torch._lazy.metrics.reset()
    run_lazy(step, RuntimeReport("adamw"))
    fallbacks = {name: torch._lazy.metrics.counter_value(name) for name in torch._lazy.metrics.counter_names()
                 if name.startswith("aten::")}
    assert set(fallbacks) <= {"aten::_local_scalar_dense"}, fallbacks  # AdamW's `.item()`: a finding of its own


def test_moe_expert_loop_stays_on_the_device_but_for_its_syncs() -> None:
    """`hidden[token]` and its gradient, the router's `one_hot` (a scatter), `out.index_add_` and the gradient
    of `topk` (a scatter) ran on the CPU, each after executing the pending graph; the syncs the loop really
    makes (`nonzero`, the tensor indexes read as ints) are findings and still happen."""
    init()
    step = build(load_factory(f"{STEPS}:mixture_of_experts"), "lazy")
    torch._lazy.metrics.reset()
    run_lazy(step, RuntimeReport("moe"))
    on_host = {n for n in torch._lazy.metrics.counter_names() if n.startswith("aten::")}
    assert on_host == {"aten::nonzero", "aten::_local_scalar_dense"}, on_host


def test_masked_attention_and_shifted_ids_stay_on_the_device() -> None:
    """SDPA's `_safe_softmax`, a padding mask read with broadcast indices and T5's shifted decoder ids
    (`copy` into a slice) ran on the CPU in every transformers family."""
    init()
    step = build(load_factory(f"{STEPS}:masked_attention"), "lazy")
    torch._lazy.metrics.reset()
    run_lazy(step, RuntimeReport("attention"))
    on_host = {n for n in torch._lazy.metrics.counter_names() if n.startswith("aten::")}
    assert not on_host, on_host
