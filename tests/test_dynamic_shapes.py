"""WSC5xx: value-dependent shapes in realistic model code, their fixed-shape look-alikes, and the fixes."""

from __future__ import annotations

from tests.conftest import codes

MOE_DISPATCH = """
import torch
from torch import nn

class SparseMoE(nn.Module):
    def __init__(self, dim, num_experts):
        super().__init__()
        self.router = nn.Linear(dim, num_experts)
        self.experts = nn.ModuleList(nn.Linear(dim, dim) for _ in range(num_experts))

    def forward(self, h):
        expert_ids = self.router(h).argmax(-1)
        out = torch.zeros_like(h)
        for e, expert in enumerate(self.experts):
            hit = expert_ids == e
            rows = hit.nonzero().squeeze(-1)
            out[rows] = expert(h[hit])
        for e in expert_ids.unique():
            out = out + e
        return out
"""


def test_moe_dispatch_reports_each_selection_once(lint):
    found = codes(lint(MOE_DISPATCH, select=("WSC5", "WSC107")))
    # the op itself (WSC501/502) and the loop over its result (WSC107) are separate findings
    assert sorted(found) == [("WSC107", 17), ("WSC501", 15), ("WSC501", 17), ("WSC502", 16)]


TOPK_ROUTING = """
import torch
import torch.nn.functional as F
from torch import nn

class TopKRouter(nn.Module):
    def __init__(self, dim, num_experts, k=2, capacity=8):
        super().__init__()
        self.gate = nn.Linear(dim, num_experts)
        self.k = k
        self.capacity = capacity

    def forward(self, h, padding_mask):
        logits = self.gate(h)
        logits = logits.masked_fill(padding_mask.unsqueeze(-1), float("-inf"))
        probs = logits.softmax(-1)
        weights, experts = torch.topk(probs, self.k, dim=-1)
        dispatch = F.one_hot(experts, probs.shape[-1]).float()
        position = torch.cumsum(dispatch, dim=1) * dispatch
        in_capacity = position <= self.capacity
        dispatch = torch.where(in_capacity, dispatch, 0)
        tokens = torch.gather(h, 1, experts[..., :1].expand(-1, -1, h.shape[-1]))
        load = dispatch.sum(dim=(0, 1, 2))
        return dispatch * weights.unsqueeze(-1), tokens[experts[:, :1, 0]], load
"""


def test_fixed_shape_routing_is_not_flagged(lint):
    assert lint(TOPK_ROUTING, select=("WSC5",)) == []


ATTENTION = """
import torch
from torch import nn

class MaskedAttention(nn.Module):
    def forward(self, q, k, v, lengths):
        positions = torch.arange(k.shape[-2])
        valid = positions[None, :] < lengths[:, None]
        causal = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).triu(1)
        scores = (q @ k.transpose(-1, -2)).masked_fill(causal, float("-inf"))
        scores = torch.where(valid[:, None, :], scores, float("-inf"))
        kept_scores = scores[valid[:, None, :].expand_as(scores)]
        return scores.softmax(-1) @ v, kept_scores
"""


def test_attention_masks_flag_only_the_selection(lint):
    assert codes(lint(ATTENTION, select=("WSC5",))) == [("WSC502", 11)]


def test_boolean_masks_are_told_from_index_tensors(lint):
    code = """
    import torch
    from torch import nn

    class Gather(nn.Module):
        def forward(self, x, idx, scores):
            order = scores.argsort(-1)
            best = torch.topk(scores, 3).indices
            flags = scores.gt(0)
            both = flags & (scores < 5)
            flags_t = scores.to(torch.bool)
            return x[idx], x[order], x[best], x[flags], x[both], x[~flags], x[flags_t], x[scores > 0, :]
    """
    lines = {line for _, line in codes(lint(code, select=("WSC502",)))}
    assert lines == {11}
    assert len(lint(code, select=("WSC502",))) == 5


def test_quiet_outside_traced_code(lint):
    code = """
    import torch
    from torch import nn

    def build_vocab(token_ids):
        used = torch.unique(token_ids)
        counts = torch.bincount(token_ids)
        return used[counts[used] > 1]

    class Embedding(nn.Module):
        def __init__(self, frequencies):
            super().__init__()
            keep = frequencies > 5
            self.rare = torch.nonzero(~keep).squeeze(-1)
            self.table = nn.Parameter(torch.randn(int(keep.sum()), 4))
            self.table.data[keep[: self.table.shape[0]]] = 0.0

        def forward(self, ids):
            return self.table[ids]

    def evaluate(model, batches):
        for ids, labels in batches:
            preds = model(ids).argmax(-1)
            right = preds[labels != -100] == labels[labels != -100]
            print(right.float().mean().item(), torch.where(labels > 0))
    """
    assert lint(code, select=("WSC5",)) == []


def test_masked_mean_fix_is_safe_for_a_mask_over_the_values(fix):
    code = """
    import torch
    from torch import nn

    class HardLoss(nn.Module):
        def forward(self, losses):
            return losses[losses > losses.mean()].mean()
    """
    assert "torch.where(losses > losses.mean(), losses, 0).sum() / (losses > losses.mean()).sum()" in fix(code)


def test_mask_from_another_tensor_needs_unsafe_fixes(fix):
    code = """
    import torch
    from torch import nn

    class TokenLoss(nn.Module):
        def forward(self, token_loss, labels):
            keep = labels != -100
            return token_loss[keep].sum()
    """
    assert "token_loss[keep].sum()" in fix(code)
    assert "torch.where(keep, token_loss, 0).sum()" in fix(code, unsafe=True)


def test_no_fix_when_reordering_would_change_random_draws(fix):
    code = """
    import torch
    from torch import nn

    class Drop(nn.Module):
        def forward(self, x):
            return x[torch.rand_like(x) > 0.1].sum(), x[x > 0].sum(dim=0)
    """
    fixed = fix(code, unsafe=True)
    assert "x[torch.rand_like(x) > 0.1].sum()" in fixed
    assert "x[x > 0].sum(dim=0)" in fixed


def test_masked_store_fix_keeps_the_in_place_update(fix):
    code = """
    import torch
    from torch import nn

    class ClampPad(nn.Module):
        def forward(self, ids, scores):
            ids[ids < 0] = 0
            scores[scores != scores] = -1e4
            scores[ids == 0] = torch.zeros(3)
            return ids, scores
    """
    fixed = fix(code)
    assert "ids.masked_fill_(ids < 0, 0)" in fixed
    assert "scores.masked_fill_(scores != scores, -1e4)" in fixed
    assert "scores[ids == 0] = torch.zeros(3)" in fixed  # a tensor value: report only


BOOL_ANNOTATED = """
from typing import Optional

import torch
from torch import nn


class Pooler(nn.Module):
    def forward(self, hidden: torch.Tensor, keep: torch.BoolTensor, ids: torch.LongTensor,
                pad: Optional[torch.BoolTensor] = None, device="cuda"):
        kept = hidden[keep]  # expect
        moved = keep.to(device)
        on_device = hidden[moved]  # expect
        also = hidden[keep.to(device=hidden.device, non_blocking=True)]  # expect
        picked = hidden[ids]
        weights = hidden[keep.to(torch.float32)]
        like = hidden[keep.to(hidden)]
        if pad is not None:
            hidden = hidden[pad.cuda()]  # expect
        return kept, on_device, also, picked, weights, like, hidden
"""


def test_bool_tensor_annotations_and_device_moves_keep_the_mask(lint):
    """`keep: torch.BoolTensor` is a boolean mask, and so is `keep.to(device)` / `.cuda()`; a LongTensor is
    an index, and `.to(torch.float32)` / `.to(other)` take another dtype (#24 item 8)."""
    expected = [i + 1 for i, line in enumerate(BOOL_ANNOTATED.lstrip("\n").splitlines()) if "# expect" in line]
    found = [line for code, line in codes(lint(BOOL_ANNOTATED)) if code == "WSC502"]
    assert found == expected


def test_bool_tensor_annotation_outside_traced_code_is_quiet(lint):
    code = BOOL_ANNOTATED.replace("class Pooler(nn.Module):", "class Pooler:")
    assert [c for c, _ in codes(lint(code)) if c == "WSC502"] == []


# SpecAugment as speech models write it (Whisper's `_mask_input_features`): the mask is drawn with NumPy,
# then the same name is rebound to a bool tensor on the device, and the features are zeroed through it.
SPEC_AUGMENT = """
import numpy as np
import torch
from torch import nn


def compute_mask_indices(shape, mask_prob, mask_length):
    batch_size, sequence_length = shape
    spans = np.zeros((batch_size, sequence_length), dtype=bool)
    for b in range(batch_size):
        start = np.random.randint(0, max(1, sequence_length - mask_length))
        spans[b, start:start + mask_length] = mask_prob > 0
    return spans


class SpecAugment(nn.Module):
    def __init__(self, mask_time_prob=0.05, mask_time_length=10):
        super().__init__()
        self.mask_time_prob = mask_time_prob
        self.mask_time_length = mask_time_length

    def forward(self, input_features):
        batch_size, hidden_size, sequence_length = input_features.shape
        mask_time_indices = compute_mask_indices((batch_size, sequence_length), self.mask_time_prob,
                                                 self.mask_time_length)
        mask_time_indices = torch.tensor(mask_time_indices, device=input_features.device, dtype=torch.bool)
        mask_time_indices = mask_time_indices[:, None].expand(-1, hidden_size, -1)
        input_features[mask_time_indices] = 0  # expect
        return input_features
"""


def _expected(code: str) -> list[int]:
    return [i + 1 for i, line in enumerate(code.lstrip("\n").splitlines()) if "# expect" in line]


def test_a_name_rebound_to_a_mask_is_a_mask_where_it_is_used(lint):
    """The binding that reaches the use decides, not every binding of the name: a NumPy array rebound to a
    bool tensor (Whisper's `mask_time_indices`) is a mask from there on (#24)."""
    for target in ("wsc", "xla"):
        found = [line for code, line in codes(lint(SPEC_AUGMENT, target=target)) if code == "WSC502"]
        assert found == _expected(SPEC_AUGMENT), target


def test_a_store_through_a_mask_is_not_a_problem_under_compile(lint):
    """Under torch.compile `x[mask] = 0` keeps x's shape (dynamo traces a select over the whole tensor; the
    runtime check of Whisper's SpecAugment store sees no break and no recompile); a read `x[mask]` still has a
    shape that depends on the data."""
    store = [line for code, line in codes(lint(SPEC_AUGMENT, target="compile")) if code == "WSC502"]
    assert store == []
    read = SPEC_AUGMENT.replace("input_features[mask_time_indices] = 0  # expect",
                                "input_features = input_features[mask_time_indices]  # expect")
    assert [line for code, line in codes(lint(read, target="compile")) if code == "WSC502"] == _expected(read)


def test_rebinding_decides_in_both_directions(lint):
    code = """
    import numpy as np
    import torch
    from torch import nn

    class Dropper(nn.Module):
        def forward(self, x, scores, lengths):
            keep = torch.arange(x.shape[0], device=x.device)
            keep = scores > 0
            x[keep] = 0  # expect
            drop = scores < 0
            drop = drop.long()
            y = x[drop]
            fixed = x > 1
            fixed = np.zeros(x.shape, dtype=bool)
            x[fixed] = 0
            pad = lengths == 0
            pad = pad.to(x.device).view(-1)
            z = x[pad]  # expect
            seen = torch.zeros_like(keep)
            seen = seen.masked_fill(scores > 1, True)
            w = x[seen]  # expect
            counts = torch.zeros_like(scores)
            v = x[counts]
            fill = torch.full(x.shape, True, dtype=torch.bool, device=x.device)
            fill &= scores > 2
            x[fill] = 0  # expect
            return x, y, z, w, v
    """
    found = [line for c, line in codes(lint(code, select=("WSC502",)))]
    assert found == _expected(code)


BRANCHES = """
import numpy as np
import torch
from torch import nn


class Masker(nn.Module):
    def __init__(self, use_device_mask, by_value):
        super().__init__()
        self.use_device_mask = use_device_mask
        self.by_value = by_value

    def forward(self, x, order):
        drawn = np.random.rand(*x.shape) < 0.1
        if self.use_device_mask:
            mask = torch.tensor(drawn, device=x.device, dtype=torch.bool)
        else:
            mask = drawn
        x[mask] = 0  # expect
        if self.by_value:
            pick = x > 0
        else:
            pick = order.argsort(-1)
        return x[pick]
"""


def test_branches_report_a_mask_on_every_path_that_makes_a_tensor(lint):
    """Where only one path makes the name a tensor, that path is traced with a mask: reported. Where one
    path makes a mask and another an index tensor, it is not known to be a mask: not reported."""
    found = [line for c, line in codes(lint(BRANCHES, select=("WSC502",)))]
    assert found == _expected(BRANCHES)


def test_a_mask_handed_to_a_helper_is_a_mask_there(lint):
    code = """
    import torch
    from torch import nn

    def zero_out(features, mask):
        features[mask] = 0.0  # expect
        return features

    def gather_rows(features, rows):
        return features[rows]

    class Block(nn.Module):
        def forward(self, h, token_ids):
            h = zero_out(h, token_ids == 0)
            return gather_rows(h, token_ids.argsort(-1))
    """
    found = [line for c, line in codes(lint(code, select=("WSC502",)))]
    assert found == _expected(code)


def test_rebound_masks_outside_traced_code_are_quiet(lint):
    code = SPEC_AUGMENT.replace("class SpecAugment(nn.Module):", "class SpecAugment:")
    assert [c for c, _ in codes(lint(code)) if c == "WSC502"] == []
