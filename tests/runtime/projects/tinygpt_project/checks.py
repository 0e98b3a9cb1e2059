"""The runtime targets of pyproject.toml: each builds a step and the batches it runs on."""

import torch

from tinygpt import GPTConfig
from tinygpt.data import random_batches
from train_compile import make_compiled_step
from train_traced import make_traced_step


def compiled_step(device):
    torch.manual_seed(0)
    return make_compiled_step(device), random_batches(GPTConfig(), 2, device=device)


def traced_step(device):
    torch.manual_seed(0)
    return make_traced_step(device), random_batches(GPTConfig(), 2, device=device)
