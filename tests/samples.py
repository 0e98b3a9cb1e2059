"""Small real-looking sources that several test modules lint, fix or feed to cslint as hostile input."""

from __future__ import annotations

# A forward with a branch on a tensor value: one WSC101 at 7:12, safely fixed into FIXED_LINE.
TENSOR_BRANCH = (
    "import torch\n"
    "from torch import nn\n"
    "\n"
    "\n"
    "class Net(nn.Module):\n"
    "    def forward(self, x):\n"
    "        if x.max() > 0:\n"
    "            y = x * 2\n"
    "        else:\n"
    "            y = x\n"
    "        return y\n"
)
FIXED_LINE = "        y = torch.where(x.max() > 0, x * 2, x)"

# A package whose forward (pkg/model.py) traces a helper in another file (pkg/layers.py): WSC101 in both.
CROSS_FILE_LAYERS = """\
import torch


def soft_cap(x):
    if x.sum() > 0:
        return x * 2
    return x
"""

CROSS_FILE_MODEL = """\
import torch
from torch import nn

from pkg.layers import soft_cap


class Net(nn.Module):
    def forward(self, x):
        y = soft_cap(x)
        if y.max() > 1:
            y = y - 1
        return y
"""
