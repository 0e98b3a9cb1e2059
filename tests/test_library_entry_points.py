"""A library's entry points are traced (#36, held-out set 2's M2).

A package with no step of its own (an ODE solver, a graph library's utilities, an inference library) is
called by its users' steps: its public functions and the public methods of its public classes are roots,
with inputs that are unknown (not assumed tensors), so a finding in them rests on what the body shows.
Each shape is self-written in the form of what set 2 missed (torchdiffeq's `odeint` and solver classes,
torch-geometric's `to_dense_batch`); docs/accuracy.md names the packages. Checked through the command line,
as a user linting the package would, so the project's own imports decide that it is a library.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from cslint.cli.main import main
from cslint.engine.compile_uses import compile_uses
from cslint.engine.target_inference import infer_target

ODEINT = '''
import torch


def _rms(x):
    return x.pow(2).mean().sqrt()


def odeint(func, y0, t, rtol=1e-3, atol=1e-4):
    y = y0
    t0, t1 = t[0], t[-1]
    dt = torch.full_like(t0, 0.1)
    while t0 < t1:
        y1 = y + dt * func(t0, y)
        scale = atol + rtol * torch.maximum(y.abs(), y1.abs())
        ratio = _rms((y1 - y) / scale)
        if ratio.item() <= 1.0:
            y, t0 = y1, t0 + dt
        dt = dt * torch.clamp(0.9 / ratio, 0.2, 10.0)
    return y
'''

SOLVER = '''
import torch


class EulerStep:
    def __init__(self, tol):
        self.tol = tol

    def step(self, func, t, dt, y):
        k1 = func(t, y)
        k2 = func(t + dt, y + dt * k1)
        error = torch.linalg.vector_norm(k2 - k1)
        if error > self.tol:
            dt = dt / 2
        return y + dt * (k1 + k2) / 2
'''

DENSE_BATCH = '''
import torch
from torch import Tensor


def to_dense_batch(x: Tensor, batch: Tensor, fill_value: float = 0.0):
    batch_size = int(batch.max()) + 1
    counts = torch.zeros(batch_size, dtype=torch.long).scatter_add_(0, batch, torch.ones_like(batch))
    max_nodes = counts.max().item()
    out = x.new_full((batch_size * max_nodes, x.size(-1)), fill_value)
    return out.view(batch_size, max_nodes, -1)
'''


def check(root: Path, files: dict[str, str], capsys: pytest.CaptureFixture[str],
          flags: tuple[str, ...] = ("--include-uncertain",), config: str = "") -> list[tuple[str, str, int]]:
    """`cslint check --target wsc FLAGS` of a project written under `root`: (file, code, line) of each finding."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text('[project]\nname = "lib"\n' + config, encoding="utf-8")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    code = main(["check", str(root), "--no-cache", "-j", "1", "--target", "wsc", *flags, "--output-format", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return [(Path(f["filename"]).name, f["code"], f["line"]) for f in json.loads(out)]


def lines_of(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(textwrap.dedent(text).lstrip("\n").splitlines(), 1) if needle in line)


def test_an_odeint_like_function_only_a_users_step_calls_is_traced(tmp_path, capsys):
    found = check(tmp_path, {"lib/__init__.py": "from .odeint import odeint\n", "lib/odeint.py": ODEINT}, capsys)
    item = lines_of(ODEINT, "ratio.item()")
    assert ("odeint.py", "WSC201", item) in found
    assert ("odeint.py", "WSC102", lines_of(ODEINT, "while t0 < t1")) in found


def test_entry_points_are_the_uncertain_tier_asked_for_by_flag_or_configuration(tmp_path, capsys):
    """A library's public functions are roots only when uncertain findings are asked for: that a user's step
    calls them is an assumption, and on set 2's packages linted whole most of what it adds is false
    (docs/accuracy.md, session 22)."""
    files = {"lib/__init__.py": "from .odeint import odeint\n", "lib/odeint.py": ODEINT}
    assert check(tmp_path / "plain", files, capsys, flags=()) == []
    item = ("odeint.py", "WSC201", lines_of(ODEINT, "ratio.item()"))
    configured = "[tool.cslint]\ninclude-uncertain = true\n"
    assert item in check(tmp_path / "configured", files, capsys, flags=(), config=configured)
    assert item in check(tmp_path / "flag", files, capsys)


def test_a_plain_solver_class_whose_public_step_branches_on_a_tensor_is_traced(tmp_path, capsys):
    found = check(tmp_path, {"lib/__init__.py": "", "lib/solvers.py": SOLVER}, capsys)
    assert ("solvers.py", "WSC101", lines_of(SOLVER, "if error > self.tol")) in found


def test_a_to_dense_batch_like_utility_is_traced(tmp_path, capsys):
    found = check(tmp_path, {"lib/__init__.py": "", "lib/dense.py": DENSE_BATCH}, capsys)
    assert ("dense.py", "WSC203", lines_of(DENSE_BATCH, "int(batch.max())")) in found
    assert ("dense.py", "WSC201", lines_of(DENSE_BATCH, "counts.max().item()")) in found


def test_a_compile_wrapper_the_library_offers_does_not_give_it_a_step(tmp_path, capsys):
    wrapper = "import torch\n\n\ndef compile(model, **kwargs):\n    return torch.compile(model, **kwargs)\n"
    found = check(tmp_path, {"lib/__init__.py": "", "lib/dense.py": DENSE_BATCH, "lib/_compile.py": wrapper}, capsys)
    assert ("dense.py", "WSC201", lines_of(DENSE_BATCH, "counts.max().item()")) in found
    assert compile_uses(wrapper).passes_through
    assert not compile_uses("import torch\nmodel = torch.compile(build())\n").passes_through


def test_a_project_with_a_step_of_its_own_keeps_its_roots(tmp_path, capsys):
    step = '''
    import torch
    from lib.dense import to_dense_batch

    model = torch.compile(torch.nn.Linear(4, 4))


    def summary(x, batch):
        return to_dense_batch(model(x), batch)
    '''
    found = check(tmp_path, {"lib/__init__.py": "", "lib/dense.py": DENSE_BATCH, "train.py": step}, capsys)
    assert not [f for f in found if f[0] == "dense.py"]
    assert infer_target([tmp_path / "train.py"]).own_step
    assert not infer_target([tmp_path / "lib" / "dense.py"]).own_step


# Negative shapes: what an entry point is not, and what its unknown inputs do not show.

NUMBERS = '''
import math


def kernel_size(sigma, truncate=4.0):
    radius = int(truncate * sigma + 0.5)
    if radius % 2 == 0:
        radius += 1
    return [math.exp(-(i * i) / (2 * sigma * sigma)) for i in range(-radius, radius + 1)]


def clip(values, low, high):
    return [v for v in values if low < v < high]
'''


def test_a_public_function_used_on_python_numbers_stays_quiet(tmp_path, capsys):
    assert check(tmp_path, {"lib/__init__.py": "", "lib/numbers_.py": "import torch\n" + NUMBERS}, capsys) == []


CONSTRUCTION = '''
import torch
from torch import nn


class Head(nn.Module):
    def __init__(self, dim, scale):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        if torch.rand(()).item() > 0.5:
            self.proj.weight.data.zero_()

    def reset_parameters(self):
        if self.proj.weight.abs().sum().item() == 0:
            nn.init.normal_(self.proj.weight)

    def extra_repr(self):
        return f"norm={self.proj.weight.norm().item()}"

    @classmethod
    def from_weights(cls, weight):
        head = cls(weight.shape[0], 1.0)
        if weight.abs().max().item() > 1:
            weight = weight / weight.abs().max()
        head.proj.weight.data.copy_(weight)
        return head

    def forward(self, x):
        return self.proj(x)


class Solver:
    def __init__(self, y0):
        self.scale = y0.abs().max().item()


def _unused_helper(x):
    return torch.nonzero(x).item()
'''


def test_construction_time_methods_and_unreached_private_helpers_stay_untraced(tmp_path, capsys):
    assert check(tmp_path, {"lib/__init__.py": "", "lib/head.py": CONSTRUCTION}, capsys) == []


def test_scripts_and_test_files_hold_no_entry_points(tmp_path, capsys):
    body = "import torch\n\n\ndef total(x):\n    return torch.nonzero(x).sum().item()\n"
    script = body + '\n\nif __name__ == "__main__":\n    print(total(torch.ones(3)))\n'
    cli = "import argparse\n" + body
    found = check(tmp_path, {"lib/__init__.py": "", "lib/run.py": script, "lib/cli.py": cli,
                             "tests/test_total.py": body}, capsys)
    assert found == []
    found = check(tmp_path, {"lib/util.py": body}, capsys)  # the same function in the library: traced
    assert ("util.py", "WSC201", 5) in found


def test_a_setter_of_module_state_is_no_entry_point(tmp_path, capsys):
    setter = '''
    import torch

    _SCALE = 1.0


    def set_scale(value):
        global _SCALE
        _SCALE = float(torch.as_tensor(value).sum().item())


    def scaled(x):
        return x * torch.nonzero(x).sum().item()
    '''
    found = check(tmp_path, {"lib/__init__.py": "", "lib/scale.py": setter}, capsys)
    scaled = lines_of(setter, "def scaled") + 1
    assert ("scale.py", "WSC201", scaled) in found
    assert {line for _, _, line in found} == {scaled}


def test_an_entry_point_a_forward_calls_keeps_the_forwards_chain(tmp_path, capsys):
    helpers = "import torch\n\n\ndef scale(x):\n    if x.sum() > 0:\n        return x * 2\n    return x\n"
    model = ("import torch\nfrom torch import nn\nfrom lib.helpers import scale\n\n\nclass Net(nn.Module):\n"
             "    def forward(self, x):\n        return scale(torch.relu(x))\n")
    check(tmp_path, {"lib/__init__.py": "", "lib/helpers.py": helpers, "lib/model.py": model}, capsys)
    main(["check", str(tmp_path), "--no-cache", "-j", "1", "--target", "wsc", "--include-uncertain",
          "--output-format", "json"])
    findings = json.loads(capsys.readouterr().out)
    assert [(Path(f["filename"]).name, f["line"], f["trace_chain"]) for f in findings] == \
        [("helpers.py", 5, ["lib.model.Net.forward", "lib.helpers.scale"])]


KERNELS = '''
import torch
from torch import nn


def create_kernels(n_fft, sr):
    if sr < 8000:
        print(f"sampling rate {sr} is low")
    window = torch.hann_window(n_fft)
    peak = window.max().item()
    return window / peak


def check_peak(window):
    return window.abs().max().item()


class Spectrogram(nn.Module):
    def __init__(self, n_fft=64, sr=16000):
        super().__init__()
        self.register_buffer("window", create_kernels(n_fft, sr))

    def forward(self, x):
        return x * self.window.sum()


def spectral_peak(x: torch.Tensor):
    return check_peak(x) + x.nonzero().sum().item()


BASIS = create_kernels(32, 16000)
'''

SAMPLER = '''
import torch
from torch.utils.data import Dataset, Sampler


def count_degrees(index):
    return int(index.max()) + 1


def degree_weights(index):
    degrees = torch.bincount(index, minlength=count_degrees(index))
    return degrees.float() / degrees.sum().item()


class GraphData(Dataset):
    def __init__(self, index):
        self.index = index

    def __getitem__(self, i):
        return self.index[i], count_degrees(self.index)

    def __len__(self):
        return len(self.index)


class WeightedSampler(Sampler):
    def __init__(self, index):
        self.weights = degree_weights(index)

    def __iter__(self):
        return iter(torch.multinomial(self.weights, len(self.weights)).tolist())
'''


def test_a_function_every_caller_of_which_builds_the_module_is_no_entry_point(tmp_path, capsys):
    """#36 (set 2, the packages whole): a kernel builder only an `__init__` and an import-time constant call runs
    when the module is built, not in a step: no finding in it. A public function a step may call is still one,
    and so is a helper it calls."""
    found = check(tmp_path, {"lib/__init__.py": "", "lib/spectrogram.py": KERNELS}, capsys)
    assert {line for _, _, line in found} == {lines_of(KERNELS, "return window.abs()"),
                                              lines_of(KERNELS, "x.nonzero().sum().item()")}


def test_helpers_only_a_dataset_and_a_sampler_call_are_no_entry_points(tmp_path, capsys):
    """Functions only data-pipeline classes call (a `Dataset`'s `__getitem__`, a `Sampler`'s `__init__`), and
    one only such a function calls, run in the data loader, not in a step."""
    assert check(tmp_path, {"lib/__init__.py": "", "lib/sampling.py": SAMPLER}, capsys) == []
    step = ("from torch import Tensor\nfrom lib.sampling import count_degrees\n\n\n"
            "def batch_size(index: Tensor):\n    return count_degrees(index)\n")
    found = check(tmp_path / "with_step", {"lib/__init__.py": "", "lib/sampling.py": SAMPLER, "lib/ops.py": step},
                  capsys)
    assert ("sampling.py", "WSC203", lines_of(SAMPLER, "int(index.max())")) in found


PLAIN_CLASS = '''
import torch


def site_factor(log_prob: torch.Tensor):
    if log_prob.abs().max().item() > 1e3:
        return log_prob.clamp(-1e3, 1e3)
    return log_prob


class Weights:
    def __init__(self, log_probs):
        self.factors = [site_factor(p) for p in log_probs]


def weighted_loss(log_probs: list[torch.Tensor]):
    weights = Weights(log_probs)
    return sum(f.sum() for f in weights.factors)
'''


def test_a_function_a_plain_class_built_in_a_step_calls_stays_an_entry_point(tmp_path, capsys):
    """A plain class's constructor runs where the class is called: here in a public function a step may call,
    so the helper only that constructor calls is still reached from an entry point and reported."""
    found = check(tmp_path, {"lib/__init__.py": "", "lib/dice.py": PLAIN_CLASS}, capsys)
    assert ("dice.py", "WSC201", lines_of(PLAIN_CLASS, "log_prob.abs().max().item()")) in found


CALLBACK = '''
import functools

import torch
from torch import nn


def init_to_mean(site=None, fallback=None):
    if site is None:
        return functools.partial(init_to_mean, fallback=fallback)
    value = site.mean(0)
    if torch.isnan(value).any():
        return fallback(site)
    return value


class Guide(nn.Module):
    def __init__(self, init_fn=init_to_mean(fallback=torch.zeros_like)):
        super().__init__()
        self.init_fn = init_fn
'''


def test_a_function_handed_on_as_a_value_stays_an_entry_point(tmp_path, capsys):
    """`init_to_mean(fallback=...)` in a constructor's defaults returns `partial(init_to_mean)`, called later
    wherever the guide calls `init_fn`, maybe in a step: a function handed on as a value keeps its entry point."""
    found = check(tmp_path, {"lib/__init__.py": "", "lib/init.py": CALLBACK}, capsys)
    assert ("init.py", "WSC101", lines_of(CALLBACK, "torch.isnan(value).any()")) in found
