"""WSC704's fix under torch.compile: a helper the step calls that draws on the host and returns no tensor gets
`@torch.compiler.disable` (fixers/eager_host_function.py); everything else keeps its draw unfixed."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

HELPER = '''
import random
import numpy as np
import torch
from torch import nn


{helper}


class Augment(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(6, 6)

    def forward(self, x):
        {call}
        return self.proj(x)
'''

SPANS = '''
def spans(length: int, prob: float) -> np.ndarray:
    count = int(prob * length + np.random.rand())
    return np.random.choice(np.arange(length), count, replace=False)
'''
SIZES = '''
def crop_size(length):
    size = int(length * random.uniform(0.5, 1.0))
    return size
'''
SCALES = '''
def scaled(x):
    return x * float(np.random.uniform(0.9, 1.1))
'''
SAMPLES = '''
def samples(n):
    for _ in range(n):
        yield random.random()
'''


def _fixes(lint, helper: str, call: str, target: str = "compile") -> list[str]:
    found = lint(HELPER.format(helper=helper.strip("\n"), call=call), target=target)
    return [d.fix.message for d in found if d.code == "WSC704" and d.fix is not None]


@pytest.mark.parametrize("helper, call", [
    (SPANS, "keep = torch.as_tensor(spans(x.shape[1], 0.5))"),
    (SIZES, "x = x[:, :crop_size(x.shape[1])]"),
])
def test_a_host_helper_runs_eagerly_under_compile(lint, fix, helper, call):
    assert _fixes(lint, helper, call), "no fix offered"
    name = helper.split("def ", 1)[1].split("(", 1)[0]
    fixed = fix(HELPER.format(helper=helper.strip("\n"), call=call), target="compile")
    assert f"@torch.compiler.disable\ndef {name}(" in fixed
    again = fix(fixed, target="compile")
    assert again == fixed


@pytest.mark.parametrize("helper, call", [
    (SCALES, "x = scaled(x)"),  # returns a tensor: its compute would leave the graph
    (SAMPLES, "values = list(samples(3))"),  # a generator
])
def test_no_fix_for_a_helper_that_is_not_host_code(lint, helper, call):
    assert _fixes(lint, helper, call) == []


def test_no_fix_in_forward_itself(lint):
    code = HELPER.format(helper="", call="x = x * random.random()")
    found = lint(code, target="compile")
    assert [d.code for d in found if d.code == "WSC704"] == ["WSC704"]
    assert all(d.fix is None for d in found if d.code == "WSC704")


def test_no_fix_on_the_lazy_target(lint):
    # a lazy trace runs the helper once while tracing: running it eagerly changes nothing there
    assert _fixes(lint, SPANS, "keep = torch.as_tensor(spans(x.shape[1], 0.5))", target="wsc") == []
    assert [d.code for d in lint(HELPER.format(helper=SPANS.strip("\n"), call="keep = spans(x.shape[1], 0.5)"),
                                 target="wsc") if d.code == "WSC704"] == ["WSC704", "WSC704"]


def test_quiet_outside_traced_code(lint):
    code = SPANS + "\n\ndef make_masks(n):\n    return [spans(10, 0.3) for _ in range(n)]\n"
    assert lint(code, target="compile") == []


STEP = '''
import numpy as np
import torch


def spans(length: int, prob: float) -> np.ndarray:
    count = int(prob * length + np.random.rand())
    mask = np.zeros(length, dtype=bool)
    mask[np.random.choice(np.arange(length), count, replace=False)] = True
    return mask


class Masked(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(8))

    def forward(self, x):
        keep = torch.as_tensor(spans(x.shape[0], 0.5), device=x.device)
        return torch.where(keep, x * self.weight, x).sum()


def runtime_target(device="cpu"):
    return Masked().to(device), [torch.randn(8, device=device) for _ in range(2)]
'''


def test_the_breaks_inside_become_one_break_at_the_call(tmp_path: Path, fix):
    pytest.importorskip("torch")
    from cslint.runtime import check

    source = textwrap.dedent(STEP).lstrip("\n")
    fixed = fix(source, target="compile")
    assert "@torch.compiler.disable\ndef spans(" in fixed
    call_line = next(i for i, line in enumerate(fixed.splitlines(), 1) if "keep = torch.as_tensor(spans(" in line)
    reports = {}
    for name, text in (("before", source), ("after", fixed)):
        path = tmp_path / name / "target.py"
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
        reports[name] = check(f"{path}:runtime_target", ("dynamo",), isolate=False)
        assert not reports[name].error, reports[name].error
    # the two draws, and `int()` of the first one (dynamo traces NumPy scalars as tensors)
    assert sorted(f.code for f in reports["before"].findings) == ["WSC203", "WSC704", "WSC704"]
    assert reports["after"].findings == []
    # the break that remains is counted where it is, not hidden
    assert [(line, gb_type.startswith("Skip calling")) for _, line, gb_type in reports["after"].uncovered_breaks] \
        == [(call_line, True)]
