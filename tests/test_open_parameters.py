"""A traced function's body is read for what it says of its parameters (param_uses) only where the signature
leaves one open: annotated parameters, and a method's receiver (whose kind is its class, whatever the body does
with it), never need the scan. The kinds stay those the full scan gives."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from cslint.analysis import param_uses
from cslint.analysis.call_returns import CallSiteOracle
from cslint.analysis.index import index_module
from cslint.analysis.kinds import STATIC, TENSOR, UNKNOWN, Tag, obj, sequence_of
from cslint.analysis.param_kinds import helper_param_kinds, root_param_kinds
from cslint.analysis.project import Project

CODE = """\
import torch
from torch import nn


class Annotated(nn.Module):
    def forward(self, hidden_states: torch.Tensor, mask: torch.Tensor | None = None, scale: float = 1.0):
        if self["cached"]:  # the receiver used like a container and a flag: still the module
            return hidden_states
        return hidden_states * scale


class Open(nn.Module):
    def forward(self, hidden_states, batch, use_cache, steps):
        if use_cache:
            return batch["input_ids"]
        return hidden_states[:, :steps]


def annotated_helper(x: torch.Tensor, n: int) -> torch.Tensor:
    return x[:n]


def open_helper(x, inputs, flag):
    if flag:
        return inputs["labels"]
    return x
"""


@pytest.fixture
def project() -> Project:
    tree = cst.parse_module(CODE)
    return Project([index_module(Path("model.py"), CODE, tree, "model", False)])


def _scans(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    scanned: list[str] = []
    real = param_uses._scan

    def counting(node: cst.FunctionDef) -> param_uses.ParamUses:
        scanned.append(node.name.value)
        return real(node)

    monkeypatch.setattr(param_uses, "_scan", counting)
    return scanned


def test_a_signature_that_leaves_nothing_open_is_not_scanned(project, monkeypatch):
    scanned = _scans(monkeypatch)
    oracle = CallSiteOracle(project, None)
    forward = project.lookup_function("model.Annotated.forward")
    params = root_param_kinds(project, oracle, forward)
    assert params["self"] == obj("module", "model.Annotated")
    assert params["hidden_states"] == TENSOR
    assert params["scale"] == STATIC
    helper = project.lookup_function("model.annotated_helper")
    assert helper_param_kinds(oracle, helper, {"x": TENSOR, "n": STATIC}) == {"x": TENSOR, "n": STATIC}
    assert helper_param_kinds(oracle, helper, {"x": TENSOR})["n"] == STATIC
    assert scanned == []


def test_open_parameters_still_take_what_the_body_says(project, monkeypatch):
    scanned = _scans(monkeypatch)
    oracle = CallSiteOracle(project, None)
    forward = project.lookup_function("model.Open.forward")
    params = root_param_kinds(project, oracle, forward)
    assert params["self"] == obj("module", "model.Open")
    assert params["hidden_states"] == TENSOR
    assert params["batch"].tag is Tag.SEQUENCE  # subscripted by a string: a container
    assert params["use_cache"] == STATIC  # only tested: a flag
    assert params["steps"] == STATIC  # a slice bound: a number
    helper = project.lookup_function("model.open_helper")
    given = helper_param_kinds(oracle, helper, {"x": TENSOR})
    assert given["x"] == TENSOR
    assert given["inputs"] == sequence_of(UNKNOWN)  # not passed, subscripted by a string: a container
    assert given["flag"] == STATIC
    assert scanned == ["forward", "open_helper"]
