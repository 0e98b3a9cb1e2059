"""Cerebras AutoGen performance advice (WSC9xx): losses that could compile to fused kernels.

Off by default (`default_enabled = False`): the code is correct as written and only slower, so these run
with `--select WSC9` (or a code). They are module-scope rules: losses are built in `__init__` and in
training scripts, outside traced code. Source: reference/cerebras-autogen-kernels.txt (Model Zoo 1.9+).
"""

from __future__ import annotations

import libcst as cst

from cslint.analysis.imports import dotted_name
from cslint.rule_api.context import ModuleScope
from cslint.rules.base import Rule
from cslint.analysis.walk import visit

AUTOGEN_DECORATOR = "autogen_loss"
MODELZOO_LAYERS = "modelzoo.common.pytorch.layers"
# torch losses with a fused AutoGen version in the Model Zoo (`use_autogen=True`)
FUSED_LOSSES = frozenset({
    "BCELoss", "CrossEntropyLoss", "BCEWithLogitsLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss",
    "KLDivLoss", "L1Loss", "MarginRankingLoss", "MSELoss", "MultiLabelSoftMarginLoss", "MultiMarginLoss",
    "NLLLoss", "PoissonNLLLoss", "SmoothL1Loss", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
})
UNSUPPORTED_LOSSES = frozenset({"CosineEmbeddingLoss", "cosine_embedding_loss"})
TORCH_LOSS_MODULES = ("torch.nn.", "torch.nn.modules.loss.", "torch.nn.functional.")
LOSS_ATTRIBUTES = ("loss", "criterion")


def _loss_class_name(qualified: str | None) -> tuple[str, str] | None:
    """("torch" | "modelzoo", ClassName) for a loss constructor's qualified name."""
    if qualified is None:
        return None
    module, _, last = qualified.rpartition(".")
    if qualified.startswith(MODELZOO_LAYERS):
        return "modelzoo", last
    if any(qualified == prefix + last for prefix in TORCH_LOSS_MODULES) and module:
        return "torch", last
    return None


def _keyword_true(call: cst.Call, name: str) -> bool:
    return any(a.keyword is not None and a.keyword.value == name and dotted_name(a.value) == "True"
               for a in call.args)


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        self.calls: list[cst.Call] = []
        self.loss_assigned: set[str] = set()  # class names assigned to `self.criterion`, `loss_fn`, ...

    def visit_Call(self, node: cst.Call) -> None:
        self.calls.append(node)

    def visit_Assign(self, node: cst.Assign) -> None:
        if not isinstance(node.value, cst.Call):
            return
        for target in node.targets:
            name = (dotted_name(target.target) or "").rsplit(".", 1)[-1].lower()
            if any(word in name for word in LOSS_ATTRIBUTES):
                constructor = dotted_name(node.value.func)
                if constructor:
                    self.loss_assigned.add(constructor.rsplit(".", 1)[-1])


def _module_calls(ctx: ModuleScope) -> _Calls:
    found = ctx.module.tree_data.get("autogen calls")
    if found is None:  # the three rules walk each file once
        found = _Calls()
        visit(ctx.module.tree, found)
        ctx.module.tree_data["autogen calls"] = found
    return found


class CustomLossWithoutAutogen(Rule):
    code = "WSC901"
    name = "custom-loss-without-autogen"
    scope = "module"
    default_enabled = False
    summary = "Checks for custom loss modules (`*Loss` classes, or modules used as the loss) without `@autogen_loss`."
    why = ("A custom loss is compiled from primitive kernels, and a loss graph the compiler does not recognise "
           "can fail to compile (graph mismatch). `@autogen_loss` lets AutoGen generate one fused kernel.")
    example = """
class FocalLoss(nn.Module):
    def forward(self, logits, target): ...
"""
    use_instead = """
from modelzoo.common.pytorch.layers.utils import autogen_loss

@autogen_loss
class FocalLoss(nn.Module):
    def forward(self, logits, target): ...
"""
    fix_safety = "No fix: AutoGen is experimental and needs `autogen_policy` in the run config as well."
    VALID = [
        """
import torch.nn as nn
from modelzoo.common.pytorch.layers.utils import autogen_loss

@autogen_loss
class FocalLoss(nn.Module):
    def forward(self, logits, target):
        return (logits - target).pow(2).mean()
""",
        """
import torch.nn as nn

class Encoder(nn.Module):
    def forward(self, x):
        return self.fc(x)
""",
    ]
    INVALID = [
        """
import torch.nn as nn

class FocalLoss(nn.Module):  # expect: WSC901
    def forward(self, logits, target):
        return (logits - target).pow(2).mean()
""",
        """
import torch.nn as nn

class Contrastive(nn.Module):  # expect: WSC901
    def forward(self, a, b):
        return (a - b).abs().mean()

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.criterion = Contrastive()
""",
    ]

    def check_module(self, ctx: ModuleScope) -> None:
        used_as_loss = _module_calls(ctx).loss_assigned if "loss" in ctx.module.source.lower() or \
            "criterion" in ctx.module.source else set()
        for cls in ctx.module.classes.values():
            if not ctx.project.is_module_class(cls):
                continue
            if not (cls.name.endswith("Loss") or cls.name in used_as_loss):
                continue
            if any(_decorator_last(d) == AUTOGEN_DECORATOR for d in cls.node.decorators):
                continue
            ctx.report(cls.node.name, f"custom loss `{cls.name}` is not decorated with @autogen_loss: it "
                                      "compiles to primitive kernels (or fails with a graph mismatch)")


def _decorator_last(decorator: cst.Decorator) -> str:
    expr = decorator.decorator.func if isinstance(decorator.decorator, cst.Call) else decorator.decorator
    return (dotted_name(expr) or "").rsplit(".", 1)[-1]


class LossHasFusedAutogen(Rule):
    code = "WSC902"
    name = "loss-has-fused-autogen"
    scope = "module"
    default_enabled = False
    summary = ("Checks for torch losses that have a fused AutoGen version in the Model Zoo, used without "
               "`use_autogen=True`.")
    why = ("`nn.CrossEntropyLoss()` and the other listed losses run as several primitive kernels; the Model Zoo "
           "version with `use_autogen=True` compiles to one fused kernel.")
    example = """
self.loss_fn = nn.CrossEntropyLoss()
"""
    use_instead = """
from modelzoo.common.pytorch.layers import CrossEntropyLoss

self.loss_fn = CrossEntropyLoss(use_autogen=True)
"""
    fix_safety = "No fix: AutoGen is experimental and may fail to compile; try it and keep it if it compiles."
    VALID = [
        """
from modelzoo.common.pytorch.layers import CrossEntropyLoss

loss_fn = CrossEntropyLoss(reduction="mean", use_autogen=True)
""",
        """
import torch.nn as nn

act = nn.GELU()
""",
    ]
    INVALID = [
        """
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)  # expect: WSC902
""",
        """
from modelzoo.common.pytorch.layers import BCELoss

loss = BCELoss(reduction="mean")  # expect: WSC902
""",
    ]

    def check_module(self, ctx: ModuleScope) -> None:
        if "Loss" not in ctx.module.source:
            return
        for call in _module_calls(ctx).calls:
            found = _loss_class_name(ctx.resolve(call.func))
            if found is None or found[1] not in FUSED_LOSSES or _keyword_true(call, "use_autogen"):
                continue
            origin, name = found
            where = "" if origin == "modelzoo" else f"{MODELZOO_LAYERS}.{name}"
            advice = f"use `{where}(..., use_autogen=True)`" if where else "pass `use_autogen=True`"
            ctx.report(call, f"`{name}` has a fused AutoGen kernel: {advice}")


class UnsupportedAutogenLoss(Rule):
    code = "WSC903"
    name = "loss-not-supported-by-autogen"
    scope = "module"
    default_enabled = False
    summary = "Checks for `CosineEmbeddingLoss`, which AutoGen documents as unsupported."
    why = ("AutoGen has no fused kernel for `CosineEmbeddingLoss`: it compiles to primitive kernels and runs "
           "slower, and `use_autogen=True` does not change that.")
    example = """
loss_fn = nn.CosineEmbeddingLoss(margin=0.2)
"""
    use_instead = """
# a supported loss where the model allows it, e.g. a margin loss on cosine similarity:
loss_fn = MarginRankingLoss(margin=0.2, use_autogen=True)
"""
    fix_safety = "No fix: a different loss changes what the model learns."
    VALID = [
        """
import torch.nn as nn

loss_fn = nn.MarginRankingLoss(margin=0.2)
""",
    ]
    INVALID = [
        """
import torch.nn as nn
import torch.nn.functional as F

loss_fn = nn.CosineEmbeddingLoss(margin=0.2)  # expect: WSC903
value = F.cosine_embedding_loss(a, b, y)  # expect: WSC903
""",
    ]

    def check_module(self, ctx: ModuleScope) -> None:
        if "osine" not in ctx.module.source:
            return
        for call in _module_calls(ctx).calls:
            found = _loss_class_name(ctx.resolve(call.func))
            if found is not None and found[1] in UNSUPPORTED_LOSSES:
                ctx.report(call, f"`{found[1]}` is not supported by AutoGen: it compiles to slower primitive kernels")
