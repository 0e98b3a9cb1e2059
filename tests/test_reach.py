"""What a file's report depends on through traced calls (`TracedProgram.influencing_modules`): the files
whose traced code calls, directly or not, the same functions as its own. Where many models share a
helper that is every model for every model: the sets are shared, not made and kept one per file."""

from __future__ import annotations

from pathlib import Path

import libcst as cst

from cslint.analysis.graph import reachable
from cslint.analysis.index import index_module
from cslint.analysis.project import Project
from cslint.analysis.traced import TracedProgram

OPS = """\
import torch


def clipped(x, limit):
    if x.abs().max() > limit:
        return x.clamp(-limit, limit)
    return x


def rms_norm(x, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
"""

MODEL = """\
import torch
from torch import nn

from ops import clipped, rms_norm


class Block{i}(nn.Module):
    def forward(self, x):
        return clipped(rms_norm(x, 1e-6), 10.0)


class Model{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block{i}()

    def forward(self, x):
        return self.block(x)
"""

# a model with helpers of its own: one only it calls, two calling each other (a cycle), and one it
# shares with a single other model
OWN = """\
import torch
from torch import nn

from pair import paired


def local(x):
    return x * 2


def ping(x, n):
    if n > 0:
        return pong(x, n - 1)
    return x


def pong(x, n):
    return ping(x + 1, n)


class Own(nn.Module):
    def forward(self, x):
        return paired(ping(local(x), 3))
"""

PAIR = """\
def paired(x):
    return x - 1
"""

PARTNER = """\
import torch
from torch import nn

from ops import clipped
from pair import paired


class Partner(nn.Module):
    def forward(self, x):
        return clipped(paired(x), 1.0)
"""


def _program(files: dict[str, str]) -> TracedProgram:
    project = Project(index_module(Path(name), code, cst.parse_module(code), name.removesuffix(".py"), False)
                      for name, code in files.items())
    return TracedProgram(project).run()


def _by_definition(program: TracedProgram) -> dict[str, set[str]]:
    """Each module's callers of everything its traced functions call, directly or not, one walk each."""
    module_of = {name: t.func.module.name for name, t in program.functions.items()}
    callees: dict[str, set[str]] = {}
    for callee, callers in program._callers.items():
        for caller in callers:
            callees.setdefault(caller, set()).add(callee)
    out: dict[str, set[str]] = {}
    for module in set(module_of.values()):
        names = {n for n, m in module_of.items() if m == module}
        reached = reachable(names, lambda n: callees.get(n, ()))
        influencing = reachable(reached, lambda n: program._callers.get(n, ()))
        out[module] = {module_of[n] for n in influencing if n in module_of}
    return out


def _files(models: int) -> dict[str, str]:
    files = {"ops.py": OPS, "own.py": OWN, "pair.py": PAIR, "partner.py": PARTNER}
    files.update({f"model_{i}.py": MODEL.format(i=i) for i in range(models)})
    return files


def test_each_module_is_influenced_by_the_callers_of_what_it_calls_and_by_itself():
    program = _program(_files(3))
    found = program.influencing_modules()
    assert {m: set(found[m]) for m in found} == _by_definition(program)
    models = {"model_0", "model_1", "model_2", "partner", "ops"}
    assert set(found["model_0"]) == models
    assert set(found["partner"]) == models | {"own", "pair"}  # `paired` is shared with `own`
    assert set(found["own"]) == {"own", "pair", "partner"}  # its cycle and its own helper add nothing else
    assert set(found["pair"]) == {"own", "pair", "partner"}


def test_modules_sharing_a_helper_share_one_set():
    found = _program(_files(40)).influencing_modules()
    models = [found[f"model_{i}"] for i in range(40)]
    assert len({id(reached) for reached in models}) == 1
    assert len(models[0]) == 42  # the 40 models, the partner and the helpers' module
