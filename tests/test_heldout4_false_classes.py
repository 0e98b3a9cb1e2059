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


NONE_TESTS = """
import torch
from torch import nn


def smooth(x, verbose, scale=None):
    if verbose IS None:
        return x
    if scale ISNOT None:
        x = x * scale
    return x * 2 if verbose else x


class Cell(nn.Module):
    def forward(self, x, opts, mem=None):
        mem = torch.zeros_like(x) if mem IS None else mem
        if self.training and mem ISNOT None:
            x = x + mem.sum().item()
        return smooth(x, opts.verbose) + smooth(x, opts.verbose, mem)
"""


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("uncertain", [False, True])
def test_f19_equality_with_none_reads_as_identity_does(lint, target, uncertain):
    """Every analysis that reads `x is None` reads `x == None` the same way: the kinds, the narrowing, the
    parameters' uses, the Nones that decide a helper's tests."""
    identity = NONE_TESTS.replace("ISNOT", "is not").replace("IS", "is")
    equality = NONE_TESTS.replace("ISNOT", "!=").replace("IS", "==")
    expected = codes(lint(identity, target=target, include_uncertain=uncertain))
    assert ("WSC201", 17) in expected
    assert codes(lint(equality, target=target, include_uncertain=uncertain)) == expected


# ---- F5: a tensor made on the host inside the step --------------------------------------------------------

@pytest.mark.parametrize("target", TARGETS)
def test_f5_copying_a_tensor_made_on_the_cpu_reads_nothing_on_lazy_tensors(lint, target):
    """`cslint runtime` on a step of this shape (torch 2.13): on the lazy backend the copies of the tensors made
    with no device (lines 9, 11, 12, 14) give nothing; their `.item()` (15), the one-argument `torch.where` (10)
    and the copies of device tensors (16, 17) do. Under dynamo the `.tolist()` of each is a break."""
    code = """
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def forward(self, x, n: int = 6):
            counts = torch.ones(len(x.size()), dtype=torch.long)
            times = torch.randint(0, n, (3,)).long()
            pattern = torch.zeros(n).scatter(0, times, 1)
            reps = tuple([2] + counts.tolist())
            spikes = torch.where(pattern == 1)
            a = pattern.numpy()
            b = (pattern[1:] * 2).cpu()
            c = times.to(torch.float32)
            d = torch.cat((times, c.long())).tolist()
            e = torch.max(times).item()
            f = torch.zeros(3, device=x.device).tolist()
            g = torch.ones(3).to(x.device).tolist()
            return x.repeat(reps), spikes, a, b, d, e, f, g
    """
    found = codes(lint(code, target=target))
    if target == "wsc":
        assert found == [("WSC501", 10), ("WSC201", 15), ("WSC201", 16), ("WSC201", 17)]
    else:
        assert {("WSC201", 9), ("WSC501", 10), ("WSC201", 14), ("WSC201", 15), ("WSC201", 16),
                ("WSC201", 17)} <= set(found)


@pytest.mark.parametrize("target", TARGETS)
def test_f5_a_cpu_tensor_joined_with_a_device_one_is_on_the_device(lint, target):
    code = """
    import torch
    from torch import nn

    class Encoder(nn.Module):
        def forward(self, x, flag: bool = False):
            counts = torch.ones(3, dtype=torch.long)
            if flag:
                counts = torch.ones(3, dtype=torch.long, device=x.device)
            return x * len(counts.tolist())
    """
    assert codes(lint(code, target=target)) == [("WSC201", 9)]


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


def repeat_steps(data, steps):
    """Repeats along a new first axis: the repeat counts are made on the host and copied to a list."""
    return data.repeat(tuple([steps] + torch.ones(len(data.size()), dtype=int).tolist()))


def host_counts(n):
    """A tensor made on the CPU, handed back."""
    return torch.ones(n, dtype=torch.long)


def device_counts(data):
    """The same copy of a tensor made on the data's device."""
    return torch.ones(data.dim(), dtype=torch.long, device=data.device).tolist()


def exists(value):
    return value is not None


class Graph(torch.nn.Module):
    """Reads a neighbour count on the host only with sparse neighbours and an adjacency given."""

    def __init__(self, dim, nearest=0, sparse=False):
        super().__init__()
        self.proj = torch.nn.Linear(dim, dim)
        self.nearest = nearest
        self.sparse = sparse

    def forward(self, feats, adj=None):
        b, n, nearest, sparse = *feats.shape[:2], self.nearest, self.sparse
        use_nearest = nearest > 0 or sparse
        if use_nearest:
            if exists(adj):
                if sparse:
                    nearest = int(adj.sum(-1).max().item())
                feats = feats[:, :, :nearest]
        return self.proj(feats)


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


# ---- F5 in a library: the summary of a function that copies a tensor it made on the CPU ----------------------

@pytest.mark.parametrize("target", TARGETS)
def test_f5_a_library_copying_a_tensor_it_made_on_the_cpu(site, tmp_path, target):
    found = _lint(tmp_path / "proj", {"model.py": '''
        from torch import nn
        from fakespikes.coding import device_counts, repeat_steps


        class Rate(nn.Module):
            def forward(self, x):
                return repeat_steps(x, 4), device_counts(x)
    '''}, target=target)
    vias = sorted(m.split(" | ")[1].split(":")[0] for c, _, line, m in found if c == "WSC201" and "via" in m)
    assert vias == (["via fakespikes.coding.device_counts"] if target == "wsc" else
                    ["via fakespikes.coding.device_counts", "via fakespikes.coding.repeat_steps"])


def test_f5_a_summary_read_back_from_the_store_keeps_the_cpu_tensor_it_returns(site, tmp_path):
    from cslint.analysis.libraries import Environment, Libraries
    from cslint.analysis.project import Project
    from cslint.store.library_cache import LibraryCache

    cache = tmp_path / "cache"
    store = LibraryCache(cache)
    libs = Libraries(Environment([str(site)]), Project([]), store)
    fresh = libs.summary(libs.lookup("fakespikes.coding.host_counts"), {}, "lazy")  # type: ignore[arg-type]
    assert fresh.returns.is_tensor and fresh.returns.on_cpu
    compiled = libs.summary(libs.lookup("fakespikes.coding.host_counts"), {}, "dynamo")  # type: ignore[arg-type]
    assert compiled.returns.is_tensor and not compiled.returns.on_cpu
    store.save()
    again = Libraries(Environment([str(site)]), Project([]), LibraryCache(cache))
    assert again.summary(again.lookup("fakespikes.coding.host_counts"), {}, "lazy") == fresh  # type: ignore[arg-type]


@pytest.mark.parametrize("target", TARGETS)
def test_f3_constants_through_a_local_test_and_a_none_predicate(site, tmp_path, target):
    """A library module whose constructor call keeps `nearest=0` and `sparse=False`: `use_nearest = nearest > 0 or
    sparse` is False, so the read under it never runs; `exists(adj)` of the None a call leaves is False too. The
    instance built with `sparse=True` and called with an adjacency reads the count."""
    found = _lint(tmp_path / "proj", {"model.py": '''
        from torch import nn
        from fakespikes.coding import Graph


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.plain = Graph(8)
                self.near = Graph(8, nearest=2)
                self.sparse = Graph(8, sparse=True)

            def forward(self, feats, adj):
                a = self.plain(feats, adj)
                b = self.near(feats)
                c = self.sparse(feats, adj)
                return a + b + c
    '''}, target=target)
    assert [(c, line) for c, _, line, m in found if "via fakespikes.coding.Graph" in m] == [("WSC201", 15)]


PREFIX_OF_CPU_TENSORS = """import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, extra=None):
        parts = (torch.ones(2, dtype=torch.long),)
        if extra is not None:
            parts = parts + tuple(self.proj(e).long() for e in extra)
        return torch.cat(parts).tolist()
"""


def test_a_copy_of_a_tuple_whose_later_elements_may_be_device_tensors_is_still_reported(lint):
    """The first position of `parts` is made on the CPU, but the elements that may follow it are device tensors:
    their concatenation is not known to be on the CPU, so its copy to the host is a device read."""
    assert [c for c, _ in codes(lint(PREFIX_OF_CPU_TENSORS, target="wsc"))] == ["WSC201"]
