"""WSC55x on whole training scripts: a plain PyTorch loop, a Hugging Face Trainer script, a Lightning
module, a torch_xla loop; and silence for data code that feeds no traced step."""

from __future__ import annotations

import pytest

from cslint.rules import rule_by_code
from tests.test_messages import LONGEST

PLAIN_LOOP = '''
import argparse

import torch
from torch import nn
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset


class TextDataset(Dataset):
    def __init__(self, path):
        self.lines = [torch.tensor([int(t) for t in line.split()]) for line in open(path)]

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, index):
        return self.lines[index]


def collate(batch):
    inputs = pad_sequence(batch, batch_first=True, padding_value=0)
    return inputs[:, :-1], inputs[:, 1:]


class LanguageModel(nn.Module):
    def __init__(self, vocab, dim):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tokens):
        hidden, _ = self.rnn(self.embed(tokens))
        return self.head(hidden)


def evaluate(model, loader):
    model.eval()
    total = 0.0
    with torch.no_grad():
        for inputs, targets in loader:
            logits = model(inputs)
            total += nn.functional.cross_entropy(logits.transpose(1, 2), targets).item()
    return total / len(loader)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", default="train.txt")
    parser.add_argument("--valid", default="valid.txt")
    args = parser.parse_args()
    model = LanguageModel(32000, 256)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4)
    train_loader = DataLoader(TextDataset(args.train), batch_size=32, shuffle=True, collate_fn=collate)
    valid_loader = DataLoader(TextDataset(args.valid), batch_size=64, collate_fn=collate)
    for epoch in range(10):
        model.train()
        for step, (inputs, targets) in enumerate(train_loader):
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(inputs).transpose(1, 2), targets)
            loss.backward()
            optimizer.step()
        print(epoch, evaluate(model, valid_loader))


if __name__ == "__main__":
    main()
'''

HF_TRAINER = '''
from datasets import load_dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)

tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
raw = load_dataset("glue", "sst2")


def tokenize(examples):
    return tokenizer(examples["sentence"], truncation=True, max_length=128)


tokenized = raw.map(tokenize, batched=True)
model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
args = TrainingArguments(
    output_dir="sst2",
    per_device_train_batch_size=32,
    num_train_epochs=3,
)
trainer = Trainer(
    model=model,
    args=args,
    train_dataset=tokenized["train"],
    eval_dataset=tokenized["validation"],
    data_collator=DataCollatorWithPadding(tokenizer),
)
trainer.train()
'''

LIGHTNING = '''
import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, random_split
from torchvision import datasets, transforms


class LitClassifier(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(28 * 28, 128), nn.ReLU(), nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return nn.functional.cross_entropy(self(x), y)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


class MNISTData(L.LightningDataModule):
    def setup(self, stage=None):
        full = datasets.MNIST(".", train=True, download=True, transform=transforms.ToTensor())
        self.train_set, self.val_set = random_split(full, [55000, 5000])

    def train_dataloader(self):
        return DataLoader(self.train_set, batch_size=64, shuffle=True, num_workers=4)

    def val_dataloader(self):
        return DataLoader(self.val_set, batch_size=256)


trainer = L.Trainer(max_epochs=5)
trainer.fit(LitClassifier(), datamodule=MNISTData())
'''

XLA_LOOP = '''
import torch
import torch_xla.core.xla_model as xm
import torch_xla.distributed.parallel_loader as pl
from torch import nn
from torch.utils.data import DataLoader
from torchvision import datasets, transforms


def train(model, epochs):
    device = xm.xla_device()
    model = model.to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    dataset = datasets.CIFAR10(".", train=True, download=True, transform=transforms.ToTensor())
    loader = DataLoader(dataset, batch_size=128, shuffle=True, num_workers=8)
    device_loader = pl.MpDeviceLoader(loader, device)
    for epoch in range(epochs):
        for images, labels in device_loader:
            optimizer.zero_grad()
            loss = nn.functional.cross_entropy(model(images), labels)
            loss.backward()
            xm.optimizer_step(optimizer)
            xm.mark_step()
'''

PREPROCESSING_ONLY = '''
import numpy as np
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

dataset = datasets.ImageFolder("images", transform=transforms.ToTensor())
loader = DataLoader(dataset, batch_size=64, num_workers=4)
mean = torch.zeros(3)
for images, _ in loader:
    mean += images.mean(dim=(0, 2, 3))
np.save("mean.npy", (mean / len(loader)).numpy())
'''


_RULE_EXAMPLES = [example for code in ("WSC551", "WSC552", "WSC553") for example in rule_by_code(code).INVALID]


def _codes(diagnostics, prefix="WSC55"):  # type: ignore[no-untyped-def]
    return sorted((d.line, d.code) for d in diagnostics if d.code.startswith(prefix))


def test_plain_loop_reports_both_loaders_and_fixes_only_training_safely(lint, fix) -> None:
    found = lint(PLAIN_LOOP)
    lines = PLAIN_LOOP.lstrip("\n").splitlines()
    train = next(i for i, line in enumerate(lines, 1) if "train_loader = DataLoader" in line)
    valid = next(i for i, line in enumerate(lines, 1) if "valid_loader = DataLoader" in line)
    assert (train, "WSC551") in _codes(found) and (valid, "WSC551") in _codes(found)
    finding = next(d for d in found if d.line == valid and d.code == "WSC551")
    assert "model(...)" in finding.notes[0] and "new compile on the wafer" in finding.message
    fixed = fix(PLAIN_LOOP)
    assert "shuffle=True, collate_fn=collate, drop_last=True)" in fixed  # training loader: safe
    assert "batch_size=64, collate_fn=collate)" in fixed  # evaluation loader: only with unsafe fixes
    assert "batch_size=64, collate_fn=collate, drop_last=True)" in fix(PLAIN_LOOP, unsafe=True)


def test_hf_trainer_script(lint, fix) -> None:
    found = _codes(lint(HF_TRAINER))
    assert [code for _, code in found].count("WSC551") == 1
    fixed = fix(HF_TRAINER, unsafe=True)
    assert "    num_train_epochs=3,\n    dataloader_drop_last=True,\n)" in fixed


def test_lightning_hooks(lint, fix) -> None:
    found = lint(LIGHTNING)
    assert [d.code for d in found if d.code.startswith("WSC55")] == ["WSC551", "WSC551"]
    fixed = fix(LIGHTNING)
    assert "shuffle=True, num_workers=4, drop_last=True)" in fixed
    assert "DataLoader(self.val_set, batch_size=256)" in fixed  # validation: unsafe


def test_torch_xla_loop_through_mp_device_loader(lint, fix) -> None:
    found = lint(XLA_LOOP, target="xla")
    message = next(d.message for d in found if d.code == "WSC551")
    assert "new XLA graph compile" in message and "recompiles the XLA graph" not in message
    assert "num_workers=8, drop_last=True)" in fix(XLA_LOOP)


def test_quiet_outside_training_code(lint) -> None:
    assert _codes(lint(PREPROCESSING_ONLY)) == []


def test_compile_target_reports_only_when_static_shapes_are_asked_for(lint) -> None:
    script = '''
import torch
from torch import nn
from torch.utils.data import DataLoader

model = nn.Linear(8, 1)
compiled = torch.compile(model{options})
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(dataset, batch_size=32):
    loss = nn.functional.mse_loss(compiled(x), y)
    loss.backward()
    optimizer.step()
'''
    assert _codes(lint(script.format(options=""), target="compile")) == []
    found = lint(script.format(options=", dynamic=False"), target="compile")
    assert [d.code for d in found if d.code.startswith("WSC55")] == ["WSC551"]
    assert "`dynamic=False`" in found[0].message and "`torch.compile(dynamic=False)`" in found[0].notes[-1]


def test_drop_last_from_a_flag_or_a_batch_sampler_is_not_reported(lint) -> None:
    script = '''
import torch
from torch import nn
from torch.utils.data import BatchSampler, DataLoader, RandomSampler

model = nn.Linear(8, 1)
a = DataLoader(dataset, batch_size=32, drop_last=args.drop_last)
b = DataLoader(dataset, batch_sampler=BatchSampler(RandomSampler(dataset), 32, drop_last=False))
c = DataLoader(dataset, **loader_kwargs)
for loader in (a, b, c):
    pass
for x, y in a:
    model(x).sum().backward()
for x, y in b:
    model(x).sum().backward()
for x, y in c:
    model(x).sum().backward()
'''
    assert _codes(lint(script)) == []


def test_padding_to_the_longest_in_a_collate_function_and_a_collator(lint, fix) -> None:
    plain = lint(PLAIN_LOOP)
    pad_line = next(i for i, line in enumerate(PLAIN_LOOP.lstrip("\n").splitlines(), 1) if "pad_sequence(batch" in line)
    assert (pad_line, "WSC552") in _codes(plain)
    hf = [d for d in lint(HF_TRAINER) if d.code == "WSC552"]
    assert len(hf) == 1 and "`DataCollatorWithPadding(...)` pads to the longest" in hf[0].message
    assert "DataCollatorWithPadding(tokenizer, pad_to_multiple_of=64)" in fix(HF_TRAINER, unsafe=True)
    assert "DataCollatorWithPadding(tokenizer)" in fix(HF_TRAINER)  # unsafe only


def test_padding_in_a_collator_class_and_a_batched_map(lint, fix) -> None:
    script = '''
from torch.utils.data import DataLoader
from transformers import AutoTokenizer


class Collator:
    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def __call__(self, batch):
        return self.tokenizer([b["text"] for b in batch], padding="longest", truncation=True, max_length=128,
                              return_tensors="pt")


tokenizer = AutoTokenizer.from_pretrained("gpt2")
train = raw.map(lambda ex: tokenizer(ex["text"], padding=True), batched=True)
eval_only = raw.map(lambda ex: tokenizer(ex["text"], padding=True))
loader = DataLoader(train, batch_size=8, collate_fn=Collator(tokenizer), drop_last=True)
for batch in loader:
    model(**batch).loss.backward()
'''
    found = _codes(lint(script), "WSC552")
    assert [line for line, _ in found] == [10, 15]
    fixed = fix(script, unsafe=True)
    assert 'padding="max_length", truncation=True, max_length=128' in fixed
    assert 'tokenizer(ex["text"], padding=True), batched=True)' in fixed  # no max_length: no fix


def test_padding_is_quiet_when_nothing_traced_reads_the_batches(lint) -> None:
    script = '''
from transformers import DataCollatorWithPadding

def tokenize(ex):
    return tokenizer(ex["text"], padding=True)

features = raw.map(tokenize, batched=True)
collator = DataCollatorWithPadding(tokenizer)
'''
    assert _codes(lint(script)) == []


def test_resize_keeping_the_aspect_ratio_reported_once_for_shared_transforms(lint) -> None:
    script = '''
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

plain = transforms.Compose([transforms.Resize(size=384), transforms.ToTensor()])
cropped = transforms.Compose([transforms.Resize(384), transforms.RandomCrop(320), transforms.ToTensor()])
train_set = datasets.ImageFolder("train", transform=plain)
val_set = datasets.ImageFolder("val", transform=plain)
crop_set = datasets.ImageFolder("train", transform=cropped)
train_loader = DataLoader(train_set, batch_size=1)
val_loader = DataLoader(val_set, batch_size=1)
for images, labels in train_loader:
    model(images).sum().backward()
for images, labels in val_loader:
    model(images)
for images, labels in DataLoader(crop_set, batch_size=8, drop_last=True):
    model(images).sum().backward()
'''
    assert _codes(lint(script), "WSC553") == [(5, "WSC553")]


def test_batches_of_one_are_never_partial(lint) -> None:
    script = '''
from torch.utils.data import DataLoader

for loader in (DataLoader(dataset), DataLoader(dataset, 1), DataLoader(dataset, batch_size=None)):
    pass
for x in DataLoader(dataset):
    model(x).sum().backward()
for x in DataLoader(dataset, batch_size=1, shuffle=True):
    model(x).sum().backward()
for x in DataLoader(dataset, 4, shuffle=True):  # a second positional argument is the batch size
    model(x).sum().backward()
'''
    assert _codes(lint(script)) == [(9, "WSC551")]


def test_accelerate_prepare_keeps_a_training_loader_training_only(lint, fix) -> None:
    script = '''
import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader

accelerator = Accelerator()
model = torch.nn.Linear(4, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
train_dl = DataLoader(dataset, batch_size=16, shuffle=True)
model, optimizer, train_dl = accelerator.prepare(model, optimizer, train_dl)
for batch in train_dl:
    accelerator.backward(model(batch["x"]).sum())
    optimizer.step()
'''
    assert _codes(lint(script)) == [(8, "WSC551")]
    assert "shuffle=True, drop_last=True)" in fix(script)


def test_sizes_written_out_that_divide_give_full_batches(lint) -> None:
    script = '''
import torch
from torch.utils.data import DataLoader, TensorDataset

even = DataLoader(RegressionDataset(length=128, seed=0), batch_size=16)
tensors = TensorDataset(torch.randn(96, 4), torch.randn(96, 1))
also_even = DataLoader(tensors, batch_size=32)
uneven = DataLoader(TensorDataset(torch.randn(100, 4)), batch_size=32)
for loader in (even, also_even, uneven):
    pass
for x in even:
    model(x).sum().backward()
for x in also_even:
    model(x).sum().backward()
for x in uneven:
    model(x).sum().backward()
'''
    assert _codes(lint(script)) == [(7, "WSC551")]


def test_a_collate_function_keeping_one_sample_makes_full_batches(lint) -> None:
    script = '''
from torch.utils.data import DataLoader


def first_only(batch):
    input_ids, labels = batch[0]
    return {"input_ids": input_ids[None], "labels": labels[None]}


def stacked(batch):
    first = batch[0]
    return torch.stack([b for b in batch])


for batch in DataLoader(dataset, batch_size=4, collate_fn=first_only):
    model(**batch).loss.backward()
for batch in DataLoader(dataset, batch_size=4, collate_fn=stacked):
    model(batch).sum().backward()
'''
    assert _codes(lint(script)) == [(16, "WSC551")]


def test_an_iterable_dataset_of_the_project_is_a_stream_of_unknown_length(lint) -> None:
    files = {
        "experience.py": '''
from torch.utils.data import IterableDataset


class ExperienceSource(IterableDataset):
    def __init__(self, generate):
        self.generate = generate

    def __iter__(self):
        return self.generate()
''',
        "train.py": '''
from torch.utils.data import DataLoader

from experience import ExperienceSource

for batch in DataLoader(ExperienceSource(play), batch_size=32):
    model(batch).sum().backward()
for batch in DataLoader(replay_buffer, batch_size=32):
    model(batch).sum().backward()
''',
    }
    assert [(d.path.name, d.line) for d in lint(files) if d.code == "WSC551"] == [("train.py", 7)]


def test_multi_scale_over_a_loader_built_in_another_module(lint) -> None:
    """A detector's training script (yolov5's shape): the loader comes from the project's own
    `create_dataloader`, and the size drawn per batch reaches `interpolate` through two more names."""
    files = {
        "utils.py": '''
from torch.utils.data import DataLoader


def create_dataloader(path, imgsz, batch_size):
    dataset = ImageFolderWithBoxes(path, imgsz)
    return DataLoader(dataset, batch_size=batch_size, shuffle=True, drop_last=True), dataset
''',
        "train.py": '''
import math
import random

import torch
import torch.nn as nn

from utils import create_dataloader
from models import Detector


def train(opt, imgsz=640, gs=32):
    model = Detector(opt.cfg)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    train_loader, dataset = create_dataloader(opt.train, imgsz, opt.batch_size)
    for epoch in range(opt.epochs):
        for i, (imgs, targets) in enumerate(train_loader):
            imgs = imgs.float() / 255
            if opt.multi_scale:
                sz = random.randrange(int(imgsz * 0.5), int(imgsz * 1.5) + gs) // gs * gs
                sf = sz / max(imgs.shape[2:])
                if sf != 1:
                    ns = [math.ceil(x * sf / gs) * gs for x in imgs.shape[2:]]
                    imgs = nn.functional.interpolate(imgs, size=ns, mode="bilinear")
            loss = model(imgs, targets)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
''',
    }
    found = [(d.path.name, d.line, d.code) for d in lint(files) if d.code.startswith("WSC55")]
    assert found == [("train.py", 23, "WSC553")]


def test_no_multi_scale_finding_for_a_fixed_size_or_a_loop_without_a_model(lint) -> None:
    script = '''
import random

import torch.nn.functional as F

from data import make_loader

loader = make_loader()
for images, targets in loader:  # one size for every batch
    images = F.interpolate(images, size=(416, 416))
    model(images, targets).backward()
for images, _ in loader:  # a preview of the augmentation: nothing traced runs here
    size = random.choice([320, 416, 512])
    save_grid(F.interpolate(images, size=size), "preview.png")
'''
    assert _codes(lint(script)) == []


@pytest.mark.parametrize("target", ["wsc", "xla", "rdu", "compile"])
def test_every_message_fits_a_line_and_the_why_is_a_note(lint, target: str) -> None:
    """#40 item 5 on this family: the message is what is wrong and its consequence on the target (one
    line); what the loader feeds and why its last batch is smaller are notes under it."""
    static = "\ncompiled = torch.compile(model, dynamic=False)\n" if target == "compile" else ""
    found = [d for script in (PLAIN_LOOP, HF_TRAINER, LIGHTNING, XLA_LOOP, *_RULE_EXAMPLES)
             for d in lint(script + static, target=target) if d.code.startswith("WSC55")]
    assert {"WSC551", "WSC552", *(["WSC553"] if target != "compile" else [])} <= {d.code for d in found}
    assert [(d.code, len(d.message), d.message) for d in found if len(d.message) > LONGEST] == []
    assert all(d.notes for d in found)
