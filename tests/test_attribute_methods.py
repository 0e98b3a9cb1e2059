"""The kinds of `self.<attr>` come from analysing the methods that set them (ProjectOracle.attributes). A
method that sets none -- most forwards only read them -- is not analysed for it; every way a method can set
one still counts."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from cslint.analysis import inference
from cslint.analysis.index import index_module
from cslint.analysis.kinds import MODULE, STATIC, TENSOR, Tag
from cslint.analysis.project import Project
from cslint.analysis.project_oracle import ProjectOracle, _sets_own_attributes

CODE = """\
import torch
from torch import nn


class Reader(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.scale = dim ** -0.5

    def forward(self, x):
        return self.proj(x) * self.scale


class Writer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.zeros(4))
        self.add_module("inner", nn.Identity())

    def forward(self, x):
        self.last = x
        self.first, self.second = x, 3
        self.count += 1
        self.cache["k"] = x
        for self.position in range(3):
            pass
        with torch.no_grad() as self.context:
            pass

        def remember(this):
            self.nested = x

        remember(x)
        return x


class Named(nn.Module):
    def forward(me, x):
        me.seen = x
        return x


class Static(nn.Module):
    @staticmethod
    def forward(x):
        x.y = 1
        return x
"""


@pytest.fixture
def project() -> Project:
    return Project([index_module(Path("model.py"), CODE, cst.parse_module(CODE), "model", False)])


def _method(project: Project, name: str):
    return project.lookup_function(f"model.{name}")


def test_which_methods_may_set_attributes(project):
    assert not _sets_own_attributes(_method(project, "Reader.forward"))
    assert _sets_own_attributes(_method(project, "Reader.__init__"))
    assert _sets_own_attributes(_method(project, "Writer.__init__"))  # registrations
    assert _sets_own_attributes(_method(project, "Writer.forward"))
    assert _sets_own_attributes(_method(project, "Named.forward"))  # a receiver not called `self`
    assert not _sets_own_attributes(_method(project, "Static.forward"))  # no receiver


def test_a_forward_that_only_reads_attributes_is_not_analysed_for_them(project, monkeypatch):
    analysed: list[str] = []
    real = inference.FunctionInference.run

    def run(self):
        analysed.append(self.func.qualname)
        return real(self)

    monkeypatch.setattr(inference.FunctionInference, "run", run)
    attrs = ProjectOracle(project).attributes("model.Reader")
    assert analysed == ["model.Reader.__init__"]
    assert attrs["proj"].tag is Tag.OBJECT and attrs["scale"] == STATIC


def test_every_way_of_setting_an_attribute_still_counts(project):
    attrs = ProjectOracle(project).attributes("model.Writer")
    assert attrs["table"] == TENSOR and attrs["inner"] == MODULE
    assert attrs["last"] == TENSOR  # forward's parameters are tensors
    assert attrs["first"] == TENSOR and attrs["second"] == STATIC
    assert {"count", 'cache["k"]', "position", "context", "nested"} <= set(attrs)
    assert ProjectOracle(project).attributes("model.Named")["seen"] == TENSOR
