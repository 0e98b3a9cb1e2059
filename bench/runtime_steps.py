"""The five families of tests/runtime/targets/real_steps.py at a size where the step computes something:
width 256, 2 layers, 4 heads, a 1000-token vocabulary, 4 sequences of 128 tokens (still random weights)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "runtime" / "targets"))

from real_steps import training_step  # noqa: E402

SMALL = dict(width=256, layers=2, heads=4, vocab=1000, batch=4, sequence=128)


def bert(device):
    return training_step("bert", device, **SMALL)


def gpt2(device):
    return training_step("gpt2", device, **SMALL)


def t5(device):
    return training_step("t5", device, **SMALL)


def llama(device):
    return training_step("llama", device, **SMALL)


def mixtral(device):
    return training_step("mixtral", device, **SMALL)
