"""How cslint's cold run grows with the size of a project: synthetic PyTorch projects of 1,000, 3,000 and
10,000 files, with sparse and dense import graphs.

    python bench/scale.py                      # 1k and 3k files, both graph shapes
    python bench/scale.py --sizes 1000 3000 10000 --jobs 2 --json scale.json

Each project is a package of realistic files: nn.Modules with `forward` calling helpers (some with
data-dependent branches, so there is something to report), helper modules, optimizers with `step`,
configurations, and training scripts that `torch.compile` a model. A shared `core` package (ops,
layers' helpers, configuration) is imported by most files. Sparse: a file imports the core and one or
two helper or configuration files of its own package. Dense: it also imports a dozen files of any kind
from anywhere in the project (the shape of a large monorepo, or of torch itself): models importing
models tie most of the project into one analysis. Every run is a fresh `cslint check --no-cache` process;
the row gives wall seconds, CPU seconds of the whole process tree, seconds per file, the peak resident
memory of the largest process and the load average when it started (the machine may be shared). The
goals of the scale issue are checked against the smallest size: time per file at the largest size at
most 1.3x that at the smallest, memory growing sub-linearly. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

MEASURE = r"""
import json, resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
seconds = time.perf_counter() - start
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"seconds": seconds, "cpu": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024,
                  "returncode": done.returncode, "stderr": done.stderr[-2000:]}))
"""

CORE_OPS = '''\
import torch


def rms_norm(x, weight, eps=1e-6):
    variance = x.pow(2).mean(-1, keepdim=True)
    return x * torch.rsqrt(variance + eps) * weight


def clipped(x, limit):
    if x.abs().max() > limit:
        return x.clamp(-limit, limit)
    return x


def rotate_half(x):
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)
'''

CORE_CONFIG = '''\
from dataclasses import dataclass


@dataclass
class ModelConfig:
    hidden: int = 64
    heads: int = 4
    layers: int = 2
    dropout: float = 0.1
    eps: float = 1e-6
'''

MODEL = '''\
import torch
from torch import nn

from {pkg}.core.config import ModelConfig
from {pkg}.core.ops import clipped, rms_norm, rotate_half
{imports}


class Block{i}(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.proj = nn.Linear(config.hidden, config.hidden)
        self.weight = nn.Parameter(torch.ones(config.hidden))
        self.eps = config.eps

    def forward(self, x):
        h = rms_norm(self.proj(x), self.weight, self.eps)
        h = rotate_half(h) + {helper}(h)
        {branch}
        return clipped(h, 10.0)


class Model{i}(nn.Module):
    def __init__(self, config: ModelConfig):
        super().__init__()
        self.blocks = nn.ModuleList(Block{i}(config) for _ in range(config.layers))

    def forward(self, x, mask=None):
        for block in self.blocks:
            x = block(x)
        if mask is not None:
            x = x * mask
        return x.mean(dim=1)
'''

HELPERS = '''\
import torch

from {pkg}.core.ops import clipped
{imports}


def scale_{i}(x):
    return x * 0.5 + clipped(x, 4.0)


def gate_{i}(x, threshold):
    if x.mean() > threshold:
        return torch.sigmoid(x)
    return x


def shapes_{i}(x):
    return [d for d in x.shape]
'''

OPTIMIZER = '''\
import torch
from torch.optim import Optimizer

{imports}


class Optim{i}(Optimizer):
    def __init__(self, params, lr=1e-3, beta=0.9):
        super().__init__(params, dict(lr=lr, beta=beta))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if len(state) == 0:
                    state["avg"] = torch.zeros_like(p)
                state["avg"].mul_(group["beta"]).add_(p.grad)
                p.add_(state["avg"], alpha=-group["lr"])
'''

TRAIN = '''\
import torch

from {pkg}.core.config import ModelConfig
{imports}


def train_{i}(model, batches, optimizer):
    compiled = torch.compile(model)
    for x in batches:
        loss = compiled(x).sum()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return ModelConfig()
'''

CONFIG = '''\
from {pkg}.core.config import ModelConfig

{imports}

SIZES_{i} = {{"small": ModelConfig(hidden=32), "base": ModelConfig(), "large": ModelConfig(hidden=128)}}
'''

KINDS = [("model", MODEL), ("helpers", HELPERS), ("model", MODEL), ("optim", OPTIMIZER), ("train", TRAIN),
         ("config", CONFIG), ("helpers", HELPERS), ("model", MODEL)]
PER_PACKAGE = 25


def generate(root: Path, files: int, dense: bool, seed: int = 0) -> Path:
    """A project of `files` Python files under `root/proj` (with a pyproject.toml)."""
    rng = random.Random(seed)
    pkg = "proj"
    base = root / pkg
    (base / "core").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    (base / "__init__.py").write_text("")
    (base / "core" / "__init__.py").write_text("")
    (base / "core" / "ops.py").write_text(CORE_OPS)
    (base / "core" / "config.py").write_text(CORE_CONFIG)
    count = files - 5
    modules = []
    for i in range(count):
        kind, _ = KINDS[i % len(KINDS)]
        modules.append((f"{pkg}.p{i // PER_PACKAGE}.{kind}_{i}", kind, i))
    helpers = [m for m in modules if m[1] == "helpers"]
    for package in range((count + PER_PACKAGE - 1) // PER_PACKAGE):
        (base / f"p{package}").mkdir()
        (base / f"p{package}" / "__init__.py").write_text("")
    for name, kind, i in modules:
        template = dict(KINDS)[kind]
        # sparse: helpers and configurations of (mostly) the same package; dense: also any file at all
        near = [m for m in modules[max(0, i - 8):i] if m[1] in ("helpers", "config")]
        chosen = rng.sample(near, min(len(near), 2))
        if dense:
            chosen += rng.sample(modules[:i], min(i, 12))
        imports = "\n".join(f"import {m[0]}" for m in dict.fromkeys(chosen))
        helper = next((h for h in reversed(helpers) if h[2] < i), None)
        if kind == "model" and helper is not None:
            imports += f"\nfrom {helper[0]} import scale_{helper[2]}"
            call = f"scale_{helper[2]}"
        else:
            call = "torch.tanh"
        branch = "if h.sum() > 0:\n            h = h * 2" if i % 3 == 0 else "h = h + 1"
        text = template.format(pkg=pkg, i=i, imports=imports, helper=call, branch=branch)
        path = root / Path(*name.split(".")).with_suffix(".py")
        path.write_text(text)
    return root


def run(root: Path, jobs: int | None) -> dict[str, float]:
    argv = [sys.executable, "-m", "cslint", "check", str(root), "--no-cache", "-q", "--exit-zero", "-o", os.devnull]
    if jobs:
        argv += ["--jobs", str(jobs)]
    load = os.getloadavg()[0]
    out = subprocess.run([sys.executable, "-c", MEASURE, *argv], capture_output=True, text=True, check=True)
    row = json.loads(out.stdout)
    row["load"] = load
    if row["returncode"] not in (0, 1):
        print(row["stderr"], file=sys.stderr)
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--shapes", nargs="+", choices=["sparse", "dense"], default=["sparse", "dense"])
    parser.add_argument("--jobs", type=int, help="cslint's --jobs (default: its own)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    rows: dict[str, dict[str, float]] = {}
    print(f"{'':<14} {'files':>6} {'wall s':>8} {'cpu s':>8} {'ms/file':>8} {'peak MB':>8} {'load':>5}", flush=True)
    for shape in args.shapes:
        for size in args.sizes:
            with tempfile.TemporaryDirectory(prefix="cslint-scale-") as work:
                root = generate(Path(work), size, dense=shape == "dense")
                row = run(root, args.jobs)
            row["files"] = size
            rows[f"{shape} {size}"] = row
            print(f"{shape:<14} {size:>6} {row['seconds']:>8.1f} {row['cpu']:>8.1f} "
                  f"{1000 * row['seconds'] / size:>8.2f} {row['peak_mb']:>8.0f} {row['load']:>5.1f}", flush=True)
    print()
    smallest, largest = min(args.sizes), max(args.sizes)
    for shape in args.shapes:
        low, high = rows.get(f"{shape} {smallest}"), rows.get(f"{shape} {largest}")
        if low is None or high is None or smallest == largest:
            continue
        per_file = (high["seconds"] / largest) / (low["seconds"] / smallest)
        cpu_per_file = (high["cpu"] / largest) / (low["cpu"] / smallest)
        memory = high["peak_mb"] / low["peak_mb"]
        print(f"{shape}: time per file at {largest} files is {per_file:.2f}x that at {smallest} "
              f"(CPU {cpu_per_file:.2f}x; goal 1.3x: {'met' if per_file <= 1.3 else 'NOT met'}); "
              f"memory {memory:.2f}x for {largest / smallest:.0f}x the files "
              f"({'sub-linear' if memory < largest / smallest else 'NOT sub-linear'})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
