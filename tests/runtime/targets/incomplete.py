"""Steps a backend cannot trace to the end: a kernel only the CPU has, a step that hangs after a problem."""

import os
import subprocess
import sys
import time

import torch
from torch import nn


class ScaledByMax(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        scale = h.abs().max().item()  # runtime: WSC201
        if h.device.type == "lazy":
            raise NotImplementedError("no lazy kernel for this op")  # runtime: STOP
        return (h / scale).sum()


def lazy_kernel_missing(device):
    return ScaledByMax().to(device), torch.randn(4, 8, device=device)


def _hang_after_a_problem(x):
    total = float(x.sum())  # runtime: WSC203
    if x.device.type != "cpu":  # the CPU reference run finishes; the traced run hangs
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
        with open(os.environ["CSLINT_TEST_PID_FILE"], "w") as handle:
            handle.write(str(child.pid))
        time.sleep(300)
    return x * total


def hangs_after_a_problem(device):
    return _hang_after_a_problem, torch.randn(4, device=device)


def allocates_too_much(device):
    def step(x):
        return torch.ones(3 * 1024**3 // 4, device=device).sum() + x.sum()  # 3 GB of float32
    return step, torch.randn(4, device=device)
