"""WSC501's fix for CTC targets taken with `masked_select` (issue 37, fixers/ctc_targets.py): the same targets
in ctc_loss's padded form, the selected labels of each row moved to its front by a stable sort."""

from __future__ import annotations

from pathlib import Path

import pytest

CODE = """
import torch
import torch.nn.functional as F
from torch import nn


class Head(nn.Module):
    def forward(self, logits, labels, logit_lengths, blank: int = 0):
        mask = labels != -100
        lengths = {lengths}
        targets = labels.masked_select(mask)
        log_probs = logits.log_softmax(-1).transpose(0, 1)
        {use}
        return F.ctc_loss(log_probs, targets, logit_lengths, lengths, blank=blank)
"""


def _select_findings(lint, lengths="mask.sum(-1)", use="pass"):  # type: ignore[no-untyped-def]
    return [d for d in lint(CODE.format(lengths=lengths, use=use)) if d.code == "WSC501"]


def test_ctc_targets_become_padded_rows(lint, fix):
    found = _select_findings(lint)
    assert len(found) == 1 and found[0].fix is not None and found[0].fix.applicability == "safe"
    fixed = fix(CODE.format(lengths="mask.sum(-1)", use="pass"))
    assert "targets = labels.gather(-1, torch.argsort(torch.logical_not(mask).int(), dim=-1, stable=True))" in fixed


def test_a_mask_of_unknown_shape_makes_the_fix_unsafe(lint):
    """`labels != blank` with a tensor `blank` may broadcast beyond the labels' shape: the gather assumes not."""
    code = CODE.format(lengths="mask.sum(-1)", use="pass").replace("labels != -100", "labels != blank")
    code = code.replace("blank: int = 0", "blank: torch.Tensor").replace(", blank=blank)", ")")
    found = [d for d in lint(code) if d.code == "WSC501"]
    assert len(found) == 1 and found[0].fix is not None and found[0].fix.applicability == "unsafe"
    assert "assumes the mask has the shape of `labels`" in found[0].fix.message


@pytest.mark.parametrize(("lengths", "use"), [
    ("mask.sum()", "pass"),  # not a count per row
    ("(labels > 0).sum(-1)", "pass"),  # the count of another mask
    ("mask.sum(-1)", "print(targets.shape)"),  # the selection is used elsewhere
])
def test_no_fix_when_the_lengths_or_uses_differ(lint, lengths, use):
    found = _select_findings(lint, lengths, use)
    assert found and all(d.fix is None for d in found)


def test_padded_targets_give_the_same_loss_for_any_mask():
    """Padding at the end, the blank as padding, and a hole inside a row: the padded form after the sort is
    the concatenated form (values beyond target_lengths, -100 included, are never read)."""
    torch = pytest.importorskip("torch")
    F = torch.nn.functional
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 20, 6, generator=generator, requires_grad=True)
    labels = torch.randint(1, 6, (3, 7), generator=generator)
    labels[0, 5:], labels[1, 3:], labels[2, 2] = -100, 0, -100
    mask = (labels != -100) & (labels != 0)
    lengths, logit_lengths = mask.sum(-1), torch.tensor([20, 18, 15])
    padded = labels.gather(-1, torch.argsort(torch.logical_not(mask).int(), dim=-1, stable=True))
    for reduction in ("mean", "sum", "none"):
        log_probs = logits.log_softmax(-1).transpose(0, 1)
        expected = F.ctc_loss(log_probs, labels.masked_select(mask), logit_lengths, lengths, reduction=reduction)
        actual = F.ctc_loss(log_probs, padded, logit_lengths, lengths, reduction=reduction)
        torch.testing.assert_close(actual, expected, rtol=0, atol=0)
        grad_expected, = torch.autograd.grad(expected.sum(), logits, retain_graph=True)
        grad_actual, = torch.autograd.grad(actual.sum(), logits)
        torch.testing.assert_close(grad_actual, grad_expected, rtol=0, atol=0)


def test_the_runtime_checker_no_longer_sees_the_selection(tmp_path):
    """Before: masked_select's data-dependent shape (WSC501 at the selection); after: none there. ctc_loss
    with tensor lengths is a dynamic-shape op of its own on both backends and stays, before and after."""
    pytest.importorskip("torch")
    from cslint.runtime import check

    golden = Path(__file__).parent / "golden" / "dynamic_shapes"
    step = (golden / "ctc_targets.in.py").read_text(encoding="utf-8").splitlines().index(
        "    flattened_targets = labels.masked_select(labels_mask)") + 1
    found = {}
    for name in ("in", "out"):
        target = tmp_path / name / "target.py"
        target.parent.mkdir()
        target.write_text((golden / f"ctc_targets.{name}.py").read_text(encoding="utf-8") + RUNTIME_TARGET,
                          encoding="utf-8")
        report = check(f"{target}:runtime_target", ("lazy", "dynamo"), isolate=False)
        assert not report.error, report.error
        found[name] = {(f.code, f.line) for f in report.findings}
    assert ("WSC501", step) in found["in"]
    assert not any(line == step for _, line in found["out"])


RUNTIME_TARGET = '''

def runtime_target(device):
    from cslint.runtime import Step

    torch.manual_seed(0)
    model = Recognizer().to(device)

    def step(frames, labels, lengths):
        loss = model(frames, labels, lengths)
        return loss, torch.autograd.grad(loss, list(model.parameters()))

    return Step(step, [_batch(0, device), _batch(1, device)])
'''
