"""The false-finding classes first seen on held-out set 4 (#36, docs/accuracy.md "The false findings by cause"),
each in self-written code of the shape seen, with the real break beside it still reported:

- F19: `x == None` / `not x == None` with a tensor `x` is a question about None, not a value read
  (`Tensor.__eq__(None)` is Python's False; `cslint runtime` sees nothing there on either backend).
- F5: a tensor made on the host inside the step (no `device=`): reading it is no device sync on lazy tensors
  (`wsc`); under torch.compile the same reads are graph breaks.
- F3: a library function's summary taken for the call's literal arguments and defaults: the branches they rule
  out are not followed.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cslint.analysis import library_env
from tests.conftest import codes, run_linter
from tests.test_libraries import _install, _script

TARGETS = ("wsc", "compile")


# ---- F19: a comparison with None ----------------------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_f19_a_tensor_compared_with_none_by_equality_reads_nothing(lint, target):
    code = """
    import torch
    from torch import nn

    class Neuron(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x, mem=None):
            if not mem == None:
                x = x + mem
            if self.training and (not mem == None or x.dim() > 1):
                x = x * 2
            if mem == None:
                mem = torch.zeros_like(x)
            decay = 0.5 if mem != None else 1.0
            if (mem > 1).any():
                x = x - 1
            return self.fc(x) * decay + mem
    """
    assert codes(lint(code, target=target)) == [("WSC101", 17)]


@pytest.mark.parametrize("target", TARGETS)
def test_f19_an_equality_with_none_narrows_like_is(lint, target):
    """`if state == None: state = x.sum()` then `state.item()`: the read after it is still the tensor's."""
    code = """
    import torch
    from torch import nn

    class Counter(nn.Module):
        def forward(self, x, state=None):
            if state == None:
                state = x.sum()
            return x * state.item()
    """
    assert codes(lint(code, target=target)) == [("WSC201", 8)]


# ---- a site-packages of self-written libraries ------------------------------------------------------------

SPIKES = '''
import torch


def decay(x, state=None):
    """Reads the state's largest value only when one is given."""
    if state != None:
        return x * state.max().item()
    return x


def encode(targets, num_classes, code="rate", steps=0, on=1.0, off=0.0, first=0):
    """Chooses an encoder by a string option; the options passed on by name."""
    if code == "rate":
        return encode_rate(targets, num_classes, steps=steps, on=on, off=off, first=first)
    elif code == "latency":
        return encode_latency(targets, num_classes)
    raise ValueError(code)


def encode_rate(targets, num_classes, steps=0, on=1.0, off=0.0, first=0):
    """Reads the tensor on the host only for rates other than on=1, off=0, or a first step after 0."""
    onehot = torch.nn.functional.one_hot(targets, num_classes).float()
    if on == 1.0 and off == 0.0:
        if first == 0:
            return onehot
        if first > 0:
            return onehot * float(onehot.amax())
    else:
        return onehot.repeat(steps, 1) * onehot.sum().item()


def encode_latency(targets, num_classes):
    return torch.full((num_classes,), int(targets.max()))


def select(x, mode="sum", scale=True):
    """Reads a count on the host for the modes other than sum and mean, and when scaling is off."""
    if mode not in ("sum", "mean"):
        x = x / x.count_nonzero().item()
    if not scale:
        x = x * x.abs().max().item()
    return x
'''


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A site-packages with `fakespikes` 1.0 on the path of the `python` the runs name (never run)."""
    venv = tmp_path / "venv"
    directory = venv / "lib" / "python3.11" / "site-packages"
    directory.mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n", encoding="utf-8")
    _script(venv / "bin" / "python", tmp_path / "ran")
    _install(directory, "fakespikes", "1.0", {"__init__.py": "", "coding.py": SPIKES})
    monkeypatch.setattr(library_env, "_ENVIRONMENTS", {})
    PYTHON["path"] = str(venv / "bin" / "python")
    yield directory
    assert not (tmp_path / "ran").exists()


PYTHON = {"path": sys.executable}


def _lint(root: Path, files: dict[str, str], **settings: object) -> list[tuple[str, str, int, str]]:
    result, _ = run_linter(root, files, **{"python": PYTHON["path"], **settings})
    assert not result.errors, result.errors
    return [(d.code, d.path.name, d.line, " | ".join([d.message, *d.notes])) for d in result.diagnostics]


@pytest.mark.parametrize("target", TARGETS)
def test_f19_a_none_the_call_leaves_decides_an_equality_test_in_the_library(site, tmp_path, target):
    found = _lint(tmp_path / "proj", {"model.py": '''
        from torch import nn
        from fakespikes.coding import decay


        class Head(nn.Module):
            def forward(self, x, state):
                kept = decay(x)
                given = decay(x, None)
                read = decay(x, state)
                return kept + given + read
    '''}, target=target)
    assert [(c, line) for c, _, line, m in found if "via fakespikes.coding.decay" in m] == [("WSC201", 9)]


# ---- F3: a library function's literal arguments and defaults ------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_f3_the_defaults_a_call_leaves_rule_out_the_reads(site, tmp_path, target):
    """`encode(targets, n)` keeps `code="rate"`, `on=1.0`, `off=0.0` and `first=0`: `encode_rate` returns the
    one-hot before any read, and `encode_latency` is never called. Each other literal reaches its read."""
    found = _lint(tmp_path / "proj", {"model.py": '''
        from torch import nn
        from fakespikes.coding import encode


        class Loss(nn.Module):
            def forward(self, x, targets):
                kept = encode(targets, 4)
                same = encode(targets, 4, "rate", first=0, on=1, off=0.0)
                latency = encode(targets, 4, code="latency")
                rates = encode(targets, 4, steps=3, on=0.8, off=0.2)
                later = encode(targets, 4, first=2)
                return x * (kept + same + latency + rates + later)
    '''}, target=target)
    vias = sorted((c, line, re.search(r" in `(\w+)` \(coding.py", m).group(1))  # type: ignore[union-attr]
                  for c, _, line, m in found if "via fakespikes.coding.encode" in m)
    assert vias == [("WSC201", 10, "encode_rate"), ("WSC203", 9, "encode_latency"), ("WSC203", 11, "encode_rate")]


@pytest.mark.parametrize("target", TARGETS)
def test_f3_a_string_in_a_literal_tuple_and_a_flag_decide_the_library_test(site, tmp_path, target):
    found = _lint(tmp_path / "proj", {"model.py": '''
        from torch import nn
        from fakespikes.coding import select


        class Head(nn.Module):
            def forward(self, x, flag):
                a = select(x)
                b = select(x, "mean", True)
                c = select(x, mode="max")
                d = select(x, scale=False)
                e = select(x, scale=flag)
                return a + b + c + d + e
    '''}, target=target)
    assert sorted(line for c, _, line, m in found if "via fakespikes.coding.select" in m and c == "WSC201") == \
        [9, 10, 11]
