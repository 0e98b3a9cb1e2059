"""A base class's traced method calling `self.hook()` reaches the overrides the project's subclasses define
(template methods: a base loss's `forward` calls `self.compute_loss`, which only subclasses implement)."""

from __future__ import annotations

import json
from pathlib import Path

from cslint.cli.main import main
from tests.conftest import codes

BASE_LOSS = """
import torch
from torch import nn


class BaseLoss(nn.Module):
    def __init__(self, margin=0.5):
        super().__init__()
        self.margin = margin

    def forward(self, emb, labels):
        loss = self.compute_loss(emb, labels)
        return loss.mean()

    def compute_loss(self, emb, labels):
        raise NotImplementedError
"""

MARGIN_LOSS = """

class MarginLoss(BaseLoss):
    def compute_loss(self, emb, labels):
        d = torch.cdist(emb, emb)
        if (d > self.margin).any():
            d = d.clamp(min=self.margin)
        return d
"""


def test_a_subclass_override_called_from_the_base_forward_is_traced(lint):
    found = lint(BASE_LOSS + MARGIN_LOSS, select=("WSC101",))
    assert codes(found) == [("WSC101", 21)]
    assert found[0].chain == ["model.BaseLoss.forward",
                              "model.MarginLoss.compute_loss (override of BaseLoss.compute_loss)"]
    assert found[0].reason == "forward of nn.Module subclass BaseLoss"


PAIR_LOSS = """
import torch

from losses.base import BaseLoss


class PairLoss(BaseLoss):
    def compute_loss(self, emb, labels):
        a, p = torch.where(labels[:, None] == labels[None])
        return (emb[a] - emb[p]).pow(2).sum(-1)
"""


def test_an_override_in_another_module_importing_the_base_is_traced(lint):
    found = lint({"losses/__init__.py": "", "losses/base.py": BASE_LOSS, "losses/pair.py": PAIR_LOSS},
                 select=("WSC501",))
    assert [(d.path.name, d.code, d.line) for d in found] == [("pair.py", "WSC501", 8)]
    assert found[0].chain == ["losses.base.BaseLoss.forward",
                              "losses.pair.PairLoss.compute_loss (override of BaseLoss.compute_loss)"]


GENERIC_PAIR = """
import torch

from metrics.base import BaseLoss


class GenericPairLoss(BaseLoss):
    def compute_loss(self, emb, labels):
        mat = emb @ emb.t()
        return self.pair_loss(mat, labels)

    def pair_loss(self, mat, labels):
        raise NotImplementedError
"""

CONTRASTIVE = """
import torch

from metrics.generic_pair import GenericPairLoss


class ContrastiveLoss(GenericPairLoss):
    def pair_loss(self, mat, labels):
        same = labels[:, None] == labels[None]
        if mat[same].max() > 1:
            return mat.clamp(max=1)
        return mat
"""

OTHER_PAIR = """
from metrics.generic_pair import GenericPairLoss


class OtherPairLoss{n}(GenericPairLoss):
    pass
"""


def test_a_two_level_hierarchy_across_files_reaches_the_leaf_override(tmp_path, capsys):
    """The middle class's file names no root and many files import it: the leaf's file is still analysed
    with the base's (grouping), and the chain goes base -> middle override -> leaf override."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    package = tmp_path / "metrics"
    package.mkdir()
    files = {"__init__.py": "", "base.py": BASE_LOSS, "generic_pair.py": GENERIC_PAIR, "contrastive.py": CONTRASTIVE,
             **{f"other_{n}.py": OTHER_PAIR.format(n=n) for n in range(5)}}
    for name, text in files.items():
        (package / name).write_text(text.lstrip("\n"))
    code = main(["check", str(tmp_path), "--no-cache", "--select", "WSC101", "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code == 1, err
    found = json.loads(out)
    assert [(Path(f["filename"]).name, f["code"], f["line"]) for f in found] == [
        ("contrastive.py", "WSC101", 9)]
    assert found[0]["trace_chain"] == [
        "metrics.base.BaseLoss.forward",
        "metrics.generic_pair.GenericPairLoss.compute_loss (override of BaseLoss.compute_loss)",
        "metrics.contrastive.ContrastiveLoss.pair_loss (override of GenericPairLoss.pair_loss)"]


def test_a_two_level_hierarchy_in_one_file(lint):
    middle = GENERIC_PAIR.replace("from metrics.base import BaseLoss\n", "")
    leaf = CONTRASTIVE.replace("from metrics.generic_pair import GenericPairLoss\n", "")
    found = lint(BASE_LOSS + middle + leaf, select=("WSC101",))
    assert [d.chain[-1] for d in found] == ["model.ContrastiveLoss.pair_loss (override of GenericPairLoss.pair_loss)"]


def test_a_hook_the_base_does_not_define_reaches_the_subclasses(lint):
    code = """
    import torch
    from torch import nn


    class BaseMiner(nn.Module):
        def forward(self, emb, labels):
            return self.mine(emb, labels)


    class HardMiner(BaseMiner):
        def mine(self, emb, labels):
            return emb[emb.norm(dim=1) > 1].nonzero()
    """
    found = lint(code, select=("WSC501",))
    assert [d.line for d in found] == [12]
    assert found[0].chain[-1] == "model.HardMiner.mine (override of BaseMiner)"


def test_a_same_named_method_of_an_unrelated_class_is_not_traced(lint):
    unrelated = """

class Ranker:
    def compute_loss(self, emb, labels):
        if (emb > 0).any():
            return emb
        return -emb


class NotALoss(Ranker):
    def compute_loss(self, emb, labels):
        if emb.sum() > 0:
            return emb
        return -emb
"""
    assert lint(BASE_LOSS + unrelated, select=("WSC101",)) == []


def test_an_override_called_only_from_init_is_not_traced(lint):
    code = """
    import torch
    from torch import nn


    class Base(nn.Module):
        def __init__(self):
            super().__init__()
            self.reset()

        def forward(self, x):
            return x * 2

        def reset(self):
            pass


    class Child(Base):
        def reset(self):
            w = torch.randn(3)
            if (w > 0).any():
                self.scale = w.sum().item()
    """
    assert lint(code) == []


def test_template_methods_outside_traced_code_stay_quiet(lint):
    code = """
    import torch


    class Report:
        def run(self, x):
            return self.summarise(x)


    class TensorReport(Report):
        def summarise(self, x):
            if (x > 0).any():
                return x.sum().item()
            return 0.0
    """
    assert lint(code) == []


def test_the_override_gets_the_kinds_the_base_passes(lint):
    """Parameter kinds flow as for any call: a Python number the base passes is no tensor in the override."""
    code = """
    import torch
    from torch import nn


    class Block(nn.Module):
        def forward(self, x):
            return self.apply_scale(x, 3)


    class Scaled(Block):
        def apply_scale(self, x, times):
            if times > 2:
                x = x * 2
            if x.sum() > 0:
                x = -x
            return x
    """
    assert codes(lint(code, select=("WSC101",))) == [("WSC101", 14)]


def test_the_editor_locates_an_override_hop_of_the_chain():
    from cslint.lsp.convert import related_information
    from cslint.core.report import Diagnostic

    defs = {"losses.base.BaseLoss.forward": ("/p/losses/base.py", 10, 4),
            "losses.pair.PairLoss.compute_loss": ("/p/losses/pair.py", 7, 4)}
    d = Diagnostic(Path("/p/losses/pair.py"), 8, 16, 8, 60, "WSC501", "m",
                   chain=["losses.base.BaseLoss.forward",
                          "losses.pair.PairLoss.compute_loss (override of BaseLoss.compute_loss)"],
                   reason="forward of nn.Module subclass BaseLoss")
    related = related_information(d, defs.get)
    assert [(r.location.range.start.line, r.message) for r in related] == [
        (9, "losses.base.BaseLoss.forward: traced root (forward of nn.Module subclass BaseLoss)"),
        (6, "losses.pair.PairLoss.compute_loss (override of BaseLoss.compute_loss): called from "
            "losses.base.BaseLoss.forward")]


def test_an_override_is_reached_only_by_instances_running_the_base_method(lint):
    """A subclass whose own `forward` never calls `super().forward()` does not run the base's, so the base's
    `self.hook()` does not reach its hook; one whose `forward` does, does."""
    code = """
    import torch
    from torch import nn


    class Base(nn.Module):
        def forward(self, x):
            return self.hook(x)

        def hook(self, x):
            return x


    class OwnForward(Base):
        def forward(self, x):
            return x * 2

        def hook(self, x):
            if x.sum() > 0:
                return -x
            return x


    class ExtendsForward(Base):
        def forward(self, x):
            return super().forward(x + 1)

        def hook(self, x):
            if x.mean() > 0:
                return -x
            return x
    """
    found = lint(code, select=("WSC101",))
    assert codes(found) == [("WSC101", 28)]
    assert found[0].chain == ["model.Base.forward", "model.ExtendsForward.hook (override of Base.hook)"]
