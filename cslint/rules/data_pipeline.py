"""WSC55x: the data pipeline hands the traced step batches of more than one shape (one graph per shape).

Module-scope rules: a `DataLoader`, a collate function or a collator is built outside traced code, and
is reported only when it feeds a traced step (analysis/data_pipeline.py says how that is decided).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from cslint.analysis.data_pipeline import HF_TRAINING_ARGUMENTS, RANDOM_MODULES, Loader, Pipeline, is_literal, \
    keyword, pipeline
from cslint.rule_api.context import ModuleScope
from cslint.rule_api.findings import Applicability, Fix
from cslint.rules.base import Rule

# The consequence of a new input shape on each target, short enough to end a one-line message ({shape}: what
# varies, the batch shape, the sequence length or the image size); what it costs is a note under it.
CONSEQUENCES = {
    "wsc": "each new {shape} is a new compile on the wafer",
    "xla": "each new {shape} is a new XLA graph compile",
    "rdu": "the SambaFlow graph is compiled for one {shape}",
    "compile": "a recompile per {shape} under {static}",
}
COSTS = {
    "wsc": "a compile on the wafer takes minutes, or fails",
    "rdu": "an input of another shape does not fit the compiled graph",
    "compile": "`{static}` asks for static shapes; past the recompile limit the step runs eagerly",
}
# how a message names what asks for static shapes under torch.compile (the note names the call)
STATIC_NAMES = {"torch.compile(dynamic=False)": "`dynamic=False`", "torch._dynamo.mark_static": "`mark_static`"}
HF_COLLATORS = frozenset({f"{prefix}{name}" for prefix in ("transformers.", "transformers.data.data_collator.")
                          for name in ("DataCollatorWithPadding", "DataCollatorForLanguageModeling",
                                       "DataCollatorForSeq2Seq", "DataCollatorForTokenClassification",
                                       "DataCollatorForWholeWordMask")})
PAD_SEQUENCE = frozenset({"torch.nn.utils.rnn.pad_sequence"})


@dataclass(frozen=True)
class Effect:
    """What a new shape does on the target, in the words of one kind of variation."""

    target: str
    static: str | None  # how a torch.compile here asks for static shapes

    def says(self, shape: str) -> str:
        """The consequence that ends a message: `shape` is what varies ("batch shape", "image size")."""
        static = STATIC_NAMES.get(self.static or "", f"`{self.static}`")
        return CONSEQUENCES.get(self.target, CONSEQUENCES["wsc"]).format(shape=shape, static=static)

    def notes(self, *why: str) -> list[str]:
        """`why` (what the finding feeds, how it varies the shape, what to do), then what a compile costs."""
        cost = COSTS.get(self.target if self.target in CONSEQUENCES else "wsc")
        return [*why, *([cost.format(static=self.static)] if cost else [])]


def consequence(ctx: ModuleScope, found: Pipeline) -> Effect | None:
    """The target's consequence, or None on torch.compile when nothing asks for static shapes (dynamo
    then makes the batch dimension dynamic after the first recompile)."""
    target = ctx.settings.target.lower()
    if target == "compile" and not found.compile_static:
        return None
    return Effect(target, found.compile_static)


def called(ctx: ModuleScope, call: cst.Call) -> str:
    """A call as a message names it: the callee and `(...)` (the arguments are on the reported line)."""
    return f"`{ctx.code(call.func, 32)}(...)`" if call.args else f"`{ctx.code(call)}`"


def add_keyword_fix(call: cst.Call, name: str, value: str, applicability: Applicability, message: str) -> Fix:
    """`call` with `name=value`: an existing argument's value replaced, else a keyword appended in the
    call's layout (one argument per line stays one per line)."""
    new_value = cst.parse_expression(value)
    existing = keyword(call, name)
    if existing is not None:
        return Fix(applicability, message, [(existing.value, new_value)])
    args = list(call.args)
    arg = cst.Arg(keyword=cst.Name(name), value=new_value,
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    if not args:
        return Fix(applicability, message, [(call, call.with_changes(args=[arg]))])
    last = args[-1]
    separator = next((a.comma for a in reversed(args[:-1]) if isinstance(a.comma, cst.Comma)), None)
    if separator is None or "\n" not in cst.Module([]).code_for_node(separator):
        separator = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
    arg = arg.with_changes(comma=last.comma)
    args[-1] = last.with_changes(comma=separator)
    return Fix(applicability, message, [(call, call.with_changes(args=[*args, arg]))])


class LastPartialBatch(Rule):
    code = "WSC551"
    name = "last-partial-batch"
    scope = "module"
    summary = ("Checks for a `DataLoader` feeding a traced step without `drop_last=True`, and Hugging Face "
               "`TrainingArguments` without `dataloader_drop_last=True`.")
    why = ("The step is compiled for the shapes of the first batch. Unless the dataset's size is a multiple "
           "of the batch size, the last batch of every epoch is smaller: another shape, so another compile "
           "(minutes on the wafer, a failure on some stacks) or, under `torch.compile(dynamic=False)`, a "
           "recompile.")
    example = """
loader = DataLoader(dataset, batch_size=32, shuffle=True)
for inputs, targets in loader:
    loss = criterion(model(inputs), targets)
    loss.backward()
    optimizer.step()
"""
    use_instead = """
loader = DataLoader(dataset, batch_size=32, shuffle=True, drop_last=True)
"""
    fix_safety = ("Safe for a loader that only feeds training (the loops it feeds call `backward()` or "
                  "`optimizer.step()`, or it is a Lightning training loader, and it is used nowhere else): "
                  "at most `batch_size - 1` samples per epoch are skipped, a different one each epoch when "
                  "shuffled. Unsafe otherwise: an evaluation loader would leave samples out of the metric. "
                  "`dataloader_drop_last=True` also applies to Hugging Face's evaluation loaders: unsafe.")
    VALID = [
        """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

dataset = TensorDataset(torch.randn(100, 8), torch.randn(100, 1))
model = nn.Linear(8, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(dataset, batch_size=32, shuffle=True, drop_last=True)
for inputs, targets in loader:
    loss = nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    optimizer.step()

# data preparation: nothing traced reads these batches
stats_loader = DataLoader(dataset, batch_size=64)
mean = sum(x.sum() for x, _ in stats_loader) / len(dataset)
""",
    ]
    INVALID = [
        """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 1)

    def forward(self, x):
        return self.fc(x)

def train_epoch(net, loader, optimizer):
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(net(inputs), targets)
        loss.backward()
        optimizer.step()

dataset = TensorDataset(torch.randn(100, 8), torch.randn(100, 1))
net = Net()
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
train_loader = DataLoader(dataset, batch_size=32, shuffle=True)  # expect: WSC551
train_epoch(net, train_loader, optimizer)
""",
        """
from transformers import Trainer, TrainingArguments

args = TrainingArguments(output_dir="out", per_device_train_batch_size=16)  # expect: WSC551
trainer = Trainer(model=model, args=args, train_dataset=train_dataset)
trainer.train()
""",
    ]

    def check_module(self, ctx: ModuleScope) -> None:
        found = pipeline(ctx.module, ctx.project)
        if found is None:
            return
        effect = consequence(ctx, found)
        if effect is None:
            return
        for loader in found.loaders:
            self._check_loader(ctx, loader, effect)
        if found.hf_trainer:
            for call in _hf_training_arguments(ctx):
                arg = keyword(call, "dataloader_drop_last")
                if arg is None or is_literal(arg.value, "False"):
                    fix = add_keyword_fix(call, "dataloader_drop_last", "True", "unsafe",
                                          "Set `dataloader_drop_last=True`")
                    ctx.report(call, f"{called(ctx, call)} keeps a smaller last batch: {effect.says('batch shape')}",
                               fix, effect.notes("`dataloader_drop_last` is False: the last batch of an epoch "
                                                 "keeps the samples left over"))

    @staticmethod
    def _check_loader(ctx: ModuleScope, loader: Loader, effect: Effect) -> None:
        call = loader.call
        batch_size = keyword(call, "batch_size") or \
            (call.args[1] if len(call.args) > 1 and call.args[1].keyword is None and not call.args[1].star else None)
        if not loader.feeds or keyword(call, "batch_sampler") is not None or batch_size is None or \
                is_literal(batch_size.value, "None") or \
                isinstance(batch_size.value, cst.Integer) and batch_size.value.evaluated_value == 1:
            return  # a batch sampler decides the batch sizes; one sample per batch is never partial
        if loader.single_sample or loader.iterable:
            return  # one sample per batch; a stream (often endless, or yielding whole batches) of unknown length
        if loader.dataset_size is not None and isinstance(batch_size.value, cst.Integer) and \
                loader.dataset_size % int(batch_size.value.evaluated_value) == 0:
            return  # the sizes are written out and divide: every batch is full
        arg = keyword(call, "drop_last")
        if arg is not None and not is_literal(arg.value, "False"):
            return  # True, or a value this file cannot read (a flag)
        if any(a.star for a in call.args):
            return  # `**loader_kwargs` may set it
        hows = list(dict.fromkeys(f.how for f in sorted(loader.feeds, key=lambda f: not f.training)))
        applicability: Applicability = "safe" if loader.training_only else "unsafe"
        fix = add_keyword_fix(call, "drop_last", "True", applicability, "Set `drop_last=True`")
        ctx.report(call, f"{called(ctx, call)} keeps a smaller last batch: {effect.says('batch shape')}", fix,
                   effect.notes(f"it feeds {' and '.join(hows[:2])} without `drop_last=True`: unless the dataset's "
                                "size is a multiple of the batch size its last batch is smaller"))


def _value(arg: cst.Arg | None) -> cst.BaseExpression | None:
    return arg.value if arg is not None else None


def _hf_training_arguments(ctx: ModuleScope) -> Iterator[cst.Call]:
    for node in _walk(ctx.module.tree):
        if isinstance(node, cst.Call) and ctx.resolve(node.func) in HF_TRAINING_ARGUMENTS and \
                not any(a.star for a in node.args):
            yield node


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


TOKENIZER_METHODS = frozenset({"pad", "batch_encode_plus", "encode_plus", "__call__"})
PADS_TO_LONGEST = ("True", "longest")
LANGUAGE_MODEL_COLLATORS = ("DataCollatorForLanguageModeling", "DataCollatorForWholeWordMask")


class PaddingToLongest(Rule):
    code = "WSC552"
    name = "padding-to-longest"
    scope = "module"
    summary = ("Checks for batches padded to their longest sequence: `pad_sequence`, `tokenizer(..., "
               "padding=True)` or `max(len(s) for s in batch)` in a collate function (or a batched `map`), "
               "and Hugging Face padding collators without `pad_to_multiple_of`, in a script that feeds a "
               "traced step.")
    why = ("Padding to the longest sequence of each batch gives almost every batch another sequence length. "
           "The step is compiled for the first batch's shapes, so each new length is another compile "
           "(minutes on the wafer, a failure on some stacks) or a recompile under "
           "`torch.compile(dynamic=False)`.")
    example = """
def collate(batch):
    return pad_sequence(batch, batch_first=True)

collator = DataCollatorWithPadding(tokenizer)
"""
    use_instead = """
def collate(batch):
    return tokenizer.pad(batch, padding="max_length", max_length=512, return_tensors="pt")

collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=64)  # a few lengths: a few graphs
"""
    fix_safety = ("Unsafe: padding to a fixed length or a multiple costs memory and compute, and the right "
                  "length is the model's to choose. A collator gets `pad_to_multiple_of=64`; a tokenizer call "
                  "that already names `max_length` gets `padding=\"max_length\"`; `pad_sequence` has no fix.")
    VALID = [
        """
import torch
from torch.utils.data import DataLoader
from transformers import DataCollatorWithPadding, Trainer

def collate(batch):
    return tokenizer(batch, padding="max_length", max_length=256, truncation=True, return_tensors="pt")

loader = DataLoader(texts, batch_size=16, collate_fn=collate, drop_last=True)
for batch in loader:
    model(**batch).loss.backward()

collator = DataCollatorWithPadding(tokenizer, pad_to_multiple_of=64)
trainer = Trainer(model=model, data_collator=collator, train_dataset=train)
""",
        """
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

def collate(batch):
    return pad_sequence(batch, batch_first=True)

# nothing traced reads these batches
lengths = [len(b) for b in DataLoader(texts, batch_size=16, collate_fn=collate)]
""",
    ]
    INVALID = [
        """
import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader

def collate(batch):
    tokens = pad_sequence([b["tokens"] for b in batch], batch_first=True)  # expect: WSC552
    return tokens, torch.tensor([b["label"] for b in batch])

def collate_by_hand(batch):
    longest = max(len(b["tokens"]) for b in batch)  # expect: WSC552
    tokens = torch.zeros(len(batch), longest, dtype=torch.long)
    for i, b in enumerate(batch):
        tokens[i, :len(b["tokens"])] = b["tokens"]
    return tokens, torch.tensor([b["label"] for b in batch])

model = nn.Sequential(nn.Embedding(1000, 64), nn.Flatten(1), nn.LazyLinear(2))
loader = DataLoader(examples, batch_size=32, collate_fn=collate, drop_last=True)
for tokens, labels in loader:
    nn.functional.cross_entropy(model(tokens), labels).backward()
for tokens, labels in DataLoader(examples, batch_size=32, collate_fn=collate_by_hand, drop_last=True):
    nn.functional.cross_entropy(model(tokens), labels).backward()
""",
        """
from transformers import DataCollatorForSeq2Seq, Seq2SeqTrainer

def preprocess(examples):
    return tokenizer(examples["text"], padding=True, truncation=True, max_length=512)  # expect: WSC552

train = raw.map(preprocess, batched=True)
collator = DataCollatorForSeq2Seq(tokenizer, model=model)  # expect: WSC552
trainer = Seq2SeqTrainer(model=model, args=args, train_dataset=train, data_collator=collator)
""",
    ]

    def check_module(self, ctx: ModuleScope) -> None:
        found = pipeline(ctx.module, ctx.project)
        if found is None or not found.feeds_a_step:
            return
        effect = consequence(ctx, found)
        if effect is None:
            return
        for function, why in found.batch_functions:
            for call in _walk_calls(function.body):
                self._check_batch_call(ctx, call, why, effect)
        grouped = "block_size" in ctx.module.source  # examples cut into fixed blocks: an LM collator pads nothing
        for call in _walk_calls(ctx.module.tree):
            qualified = ctx.resolve(call.func) or ""
            if qualified not in HF_COLLATORS or any(a.star for a in call.args) or \
                    grouped and qualified.endswith(LANGUAGE_MODEL_COLLATORS):
                continue
            multiple = keyword(call, "pad_to_multiple_of")
            padding = keyword(call, "padding")
            if multiple is not None and not is_literal(multiple.value, "None") or \
                    padding is not None and not is_literal(padding.value, *PADS_TO_LONGEST):
                continue
            fix = add_keyword_fix(call, "pad_to_multiple_of", "64", "unsafe", "Pad to a multiple of 64")
            ctx.report(call, f"{called(ctx, call)} pads to the longest: {effect.says('sequence length')}", fix,
                       effect.notes("it pads each batch to its longest example; pass `pad_to_multiple_of` (a few "
                                    "lengths) or `padding=\"max_length\"` with `max_length`"))

    @staticmethod
    def _check_batch_call(ctx: ModuleScope, call: cst.Call, why: str, effect: Effect) -> None:
        varies = effect.says("sequence length")
        if ctx.resolve(call.func) in PAD_SEQUENCE:
            ctx.report(call, f"{called(ctx, call)} pads to the longest: {varies}", None,
                       effect.notes(f"in {why}, it pads each batch to its longest sequence; pad to a fixed length "
                                    "(`torch.nn.functional.pad` to `max_length`)"))
            return
        if _longest_length(ctx, call):
            ctx.report(call, f"{called(ctx, call)} takes each batch's longest length: {varies}", None,
                       effect.notes(f"in {why}, the batch is padded to it; pad to a fixed `max_length` (or round "
                                    "up to a multiple)"))
            return
        if not _is_tokenizer_call(call):
            return
        padding = keyword(call, "padding")
        if padding is None or not is_literal(padding.value, *PADS_TO_LONGEST):
            return
        fix = None
        if keyword(call, "max_length") is not None:
            fix = add_keyword_fix(call, "padding", '"max_length"', "unsafe", "Pad to `max_length`")
        ctx.report(call, f"{called(ctx, call)} pads to the longest: {varies}", fix,
                   effect.notes(f"in {why}, it pads to the longest sequence; use `padding=\"max_length\"` with "
                                "`max_length`, or `pad_to_multiple_of`"))


def _longest_length(ctx: ModuleScope, call: cst.Call) -> bool:
    """`max(len(s) for s in batch)`, `max(map(len, batch))`: the builtin max over lengths."""
    if not (isinstance(call.func, cst.Name) and call.func.value == "max" and ctx.resolve(call.func) is None):
        return False
    return any(isinstance(n, cst.Name) and n.value == "len" for a in call.args for n in _walk(a.value))


def _is_tokenizer_call(call: cst.Call) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value in TOKENIZER_METHODS:
        func = func.value
    last = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return last.lower().endswith("tokenizer") or last in ("tok", "processor")


def _walk_calls(node: cst.CSTNode) -> Iterator[cst.Call]:
    return (n for n in _walk(node) if isinstance(n, cst.Call))


RESIZES = frozenset({"torchvision.transforms.Resize", "torchvision.transforms.v2.Resize",
                     "torchvision.transforms.transforms.Resize"})
COMPOSES = frozenset({"torchvision.transforms.Compose", "torchvision.transforms.v2.Compose",
                      "torchvision.transforms.transforms.Compose"})
INTERPOLATES = frozenset({"torch.nn.functional.interpolate", "torch.nn.functional.upsample",
                          "torchvision.transforms.functional.resize", "torchvision.transforms.v2.functional.resize"})


class VariableImageSize(Rule):
    code = "WSC553"
    name = "variable-image-size"
    scope = "module"
    summary = ("Checks for image sizes that vary between batches feeding a traced step: `Resize(int)` (which "
               "keeps the aspect ratio) in a `Compose` without a crop, and a size drawn at random in the "
               "training loop and passed to `F.interpolate` (multi-scale training).")
    why = ("The step is compiled for the first batch's image size. `Resize(256)` only fixes the shorter side, "
           "so images of another aspect ratio come out in another shape; a size picked per batch is another "
           "shape by design. Each new shape is another compile (minutes on the wafer, a failure on some "
           "stacks) or a recompile under `torch.compile(dynamic=False)`.")
    example = """
train_tf = transforms.Compose([transforms.Resize(256), transforms.ToTensor()])
for images, labels in loader:
    size = random.choice([320, 416, 512])
    images = F.interpolate(images, size=size)
"""
    use_instead = """
train_tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()])
for images, labels in loader:  # one size, or a few named buckets compiled ahead
    images = F.interpolate(images, size=416)
"""
    fix_safety = ("Unsafe: `Resize(n)` becomes `Resize((n, n))`, which distorts images that are not square "
                  "(a crop may be what the model wants). A random size per batch has no fix.")
    VALID = [
        """
import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

tf = transforms.Compose([transforms.Resize(256), transforms.CenterCrop(224), transforms.ToTensor()])
loader = DataLoader(datasets.ImageFolder("train", transform=tf), batch_size=32, drop_last=True)
for images, labels in loader:
    images = F.interpolate(images, size=(192, 192))
    model(images).sum().backward()

# a thumbnail tool: nothing traced reads these
thumbs = transforms.Compose([transforms.Resize(64), transforms.ToTensor()])
""",
    ]
    INVALID = [
        """
import random

import torch.nn.functional as F
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

tf = transforms.Compose([transforms.Resize(512), transforms.ToTensor()])  # expect: WSC553
loader = DataLoader(datasets.ImageFolder("train", transform=tf), batch_size=1, drop_last=True)
for images, targets in loader:
    size = random.choice([320, 416, 512]) // 32 * 32
    images = F.interpolate(images, size=(size, size), mode="bilinear")  # expect: WSC553
    model(images, targets).backward()
""",
    ]

    def check_module(self, ctx: ModuleScope) -> None:
        found = pipeline(ctx.module, ctx.project)
        if found is None or not (found.feeds_a_step or found.unfed_step_loops):
            return
        effect = consequence(ctx, found)
        if effect is None:
            return
        for transform, _ in found.transforms:
            if isinstance(transform, cst.Call) and ctx.resolve(transform.func) in COMPOSES and transform.args and \
                    isinstance(transform.args[0].value, (cst.List, cst.Tuple)):
                self._check_compose(ctx, transform.args[0].value, effect)
        # a size drawn per batch varies the shape wherever the batches come from
        for loop, how in found.step_loops() + found.unfed_step_loops:
            self._check_loop(ctx, loop, how, effect)

    @staticmethod
    def _check_compose(ctx: ModuleScope, steps: cst.List | cst.Tuple, effect: Effect) -> None:
        calls = [e.value for e in steps.elements if isinstance(e.value, cst.Call)]
        if any("Crop" in (ctx.resolve(c.func) or "") for c in calls):
            return
        for call in calls:
            if ctx.resolve(call.func) not in RESIZES:
                continue
            size = keyword(call, "size") or (call.args[0] if call.args and call.args[0].keyword is None else None)
            if size is None or not isinstance(size.value, cst.Integer):
                continue
            square = f"({size.value.value}, {size.value.value})"
            fix = Fix("unsafe", f"Resize to {square}", [(size.value, cst.parse_expression(square))])
            ctx.report(call, f"{called(ctx, call)} keeps the aspect ratio: {effect.says('image size')}", fix,
                       effect.notes("it fixes only the shorter side and the transforms crop nothing: images of "
                                    f"another aspect ratio give another shape; resize to a fixed `{square}` or "
                                    "crop after it"))

    @staticmethod
    def _check_loop(ctx: ModuleScope, loop: cst.For, how: str, effect: Effect) -> None:
        drawn: set[str] = set()
        assigns = [n for n in _walk(loop.body) if isinstance(n, cst.Assign)]
        grew = True
        while grew:  # `sz = random.randrange(...)`, `sf = sz / max(shape)`, `ns = [x * sf for x in shape]`
            before = len(drawn)
            for assign in assigns:
                if _mentions_random(ctx, assign.value, drawn):
                    drawn |= {n.value for t in assign.targets for n in _walk(t.target) if isinstance(n, cst.Name)}
            grew = len(drawn) > before
        for call in _walk_calls(loop.body):
            if ctx.resolve(call.func) in INTERPOLATES and \
                    any(_mentions_random(ctx, a.value, drawn) for a in call.args[1:]):
                ctx.report(call, f"{called(ctx, call)} resizes to a random size: {effect.says('image size')}", None,
                           effect.notes(f"each batch is resized to a size drawn at random in {how}; use one size, "
                                        "or a few sizes compiled as buckets"))


def _mentions_random(ctx: ModuleScope, expr: cst.CSTNode, drawn: set[str]) -> bool:
    for node in _walk(expr):
        if isinstance(node, cst.Name) and node.value in drawn:
            return True
        if isinstance(node, cst.Call) and (ctx.resolve(node.func) or "").startswith(RANDOM_MODULES):
            return True
    return False
