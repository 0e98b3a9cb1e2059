"""Files analysed in groups (see incremental.py) give the report of analysing them all together."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cslint.engine import incremental
from cslint.cli.main import main

# The helpers are private: a public one in this project with no step of its own would be a library entry point
# (analysis/entry_points.py), a root of its own group, whose traced code meets its callers' groups.
CONFIG = """\
class NetConfig:
    hidden = 4
    threshold = 0.5
"""

NORMALIZE = """\
import torch


def _normalize(x, eps):
    if x.norm() > eps:
        return x / x.norm()
    return x
"""

NET_A = """\
import torch
from torch import nn

from config import NetConfig
from normalize import _normalize


class NetA(nn.Module):
    def forward(self, x):
        return _normalize(x, NetConfig.threshold)
"""

NET_B = """\
import torch
from torch import nn

from config import NetConfig


class NetB(nn.Module):
    def forward(self, x):
        print(f"mean {x.mean()}")
        return x * NetConfig.hidden
"""

SCALE = """\
def _scale(x, factor):
    if factor > 0:
        return x * factor
    return x
"""

CALLS_STATIC = """\
from torch import nn

from scale import _scale


class Static(nn.Module):
    def forward(self, x):
        return _scale(x, 2.0)
"""

CALLS_TENSOR = """\
from torch import nn

from scale import _scale


class Dynamic(nn.Module):
    def forward(self, x):
        return _scale(x, x.mean())
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\n")
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def _check(capsys, root: Path) -> tuple[list[dict], str]:
    code = main(["check", str(root), "--no-cache", "--show-chain", "--output-format", "json", "--profile"])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return sorted(json.loads(out), key=lambda f: (f["filename"], f["line"], f["code"])), err


def _count(err: str, label: str) -> int:
    return int(err.split(f"{label}: ")[1].split()[0].rstrip(",")) if f"{label}: " in err else 0


@pytest.fixture
def one_group(monkeypatch):
    """Every file in one analysis, as before groups existed: the report groups must reproduce."""
    def use() -> None:
        monkeypatch.setattr(incremental.Session, "_groups", lambda self, keys: [set(keys)])
    return use


def test_models_sharing_only_a_configuration_are_analysed_apart_with_the_same_report(tmp_path, capsys, one_group):
    root = _write(tmp_path, {"config.py": CONFIG, "normalize.py": NORMALIZE, "net_a.py": NET_A, "net_b.py": NET_B})
    grouped, err = _check(capsys, root)
    assert _count(err, "groups") == 4  # the configuration and the helper import no file with roots
    assert _count(err, "groups analysed again, together") == 0
    # the helper's finding comes from NetA's analysis, where it was loaded to resolve the call
    assert [(Path(f["filename"]).name, f["code"]) for f in grouped] == [
        ("net_b.py", "WSC701"), ("normalize.py", "WSC101")]
    assert grouped[1]["trace_chain"] == ["net_a.NetA.forward", "normalize._normalize"]
    one_group()
    together, err = _check(capsys, root)
    assert _count(err, "groups") == 1
    assert grouped == together


def test_groups_tracing_the_same_helper_are_analysed_again_as_one(tmp_path, capsys, one_group):
    root = _write(tmp_path, {"scale.py": SCALE, "calls_static.py": CALLS_STATIC, "calls_tensor.py": CALLS_TENSOR})
    grouped, err = _check(capsys, root)
    # each caller's group traced `scale` with its own argument; the helper's parameters are the join of both
    assert _count(err, "groups analysed again, together") == 2
    one_group()
    together, _ = _check(capsys, root)
    assert grouped == together
    assert [(Path(f["filename"]).name, f["code"]) for f in together] == [("scale.py", "WSC101")]


def test_a_mixin_on_torch_is_grouped_with_the_model_deriving_from_it(tmp_path, capsys):
    mixin = "import torch\n\n\nclass CacheMixin:\n    def update(self, x):\n        if x.sum() > 0:\n" \
            "            return x\n        return -x\n"
    model = "from torch import nn\n\nfrom mixin import CacheMixin\n\n\nclass Net(nn.Module, CacheMixin):\n" \
            "    def forward(self, x):\n        return self.update(x)\n"
    root = _write(tmp_path, {"mixin.py": mixin, "model.py": model, "config.py": CONFIG})
    findings, err = _check(capsys, root)
    assert _count(err, "groups") == 2  # model.py with mixin.py; config.py alone
    assert [(Path(f["filename"]).name, f["code"]) for f in findings] == [("mixin.py", "WSC101")]


def test_a_function_compiled_in_another_file_is_traced_from_the_file_that_compiles_it(tmp_path, capsys, one_group):
    steps = "def train_step(x):\n    if x.sum() > 0:\n        return x * 2\n    return x\n"
    train = "import torch\n\nfrom steps import train_step\n\ncompiled = torch.compile(train_step)\n"
    root = _write(tmp_path, {"steps.py": steps, "train.py": train})
    grouped, err = _check(capsys, root)
    assert _count(err, "groups") == 2  # steps.py names no root itself
    assert [(Path(f["filename"]).name, f["code"], f["traced_because"]) for f in grouped] == [
        ("steps.py", "WSC101", "passed to torch.compile()")]
    one_group()
    assert _check(capsys, root)[0] == grouped


def test_worker_calls_shrink_to_single_groups_at_the_end():
    """Groups are handed to workers heaviest first, in calls holding a share of what is left: the last
    calls hold one group each, so no worker waits while another finishes a call of many groups."""
    weights = [5000, 3000] + [100] * 200
    batches = incremental._batches(list(range(len(weights))), weights, jobs=2)
    assert [task for batch in batches for task in batch] == list(range(len(weights)))
    assert all(len(batch) == 1 for batch in batches[-4:])
    sizes = [sum(weights[t] for t in batch) for batch in batches]
    assert sizes[2] > sizes[-5]  # shares of what is left: ever smaller
    assert batches[0] == [0]  # a group heavier than a share is a call of its own


def test_files_reaching_the_same_files_share_one_set_of_dependencies(tmp_path):
    """Models sharing a helper each depend on every model (and what each imports): one set for all of
    them, not a union of every model's imports made again for each model."""
    from cslint.core.config import Settings

    (tmp_path / "normalize.py").write_text(NORMALIZE)
    (tmp_path / "config.py").write_text(CONFIG)
    for i in range(5):
        (tmp_path / f"net_{i}.py").write_text(NET_A.replace("NetA", f"Net{i}"))
    session = incremental.Session(Settings(), [], cache=None)
    session._survey(sorted(tmp_path.glob("*.py")), [])
    nets = [str(tmp_path / f"net_{i}.py") for i in range(5)]
    found = [session.dependencies(net, [other for other in nets if other != net]) for net in nets]
    assert set(found[0]) == {*nets, str(tmp_path / "normalize.py"), str(tmp_path / "config.py")}
    assert all(deps is found[0] for deps in found)
    assert session.dependencies(nets[0], []) == {nets[0], str(tmp_path / "normalize.py"), str(tmp_path / "config.py")}


MODELING = """\
import torch
from torch import nn


class {name}Attention(nn.Module):
    def forward(self, x):
        if x.amax() > 0:
            return x
        return -x
"""

TEMPLATE = """\
from ..a.modeling_a import AAttention
from ..b.modeling_b import BAttention


class CAttention(AAttention):
    pass


class CMixer(BAttention):
    pass
"""


def test_a_template_is_grouped_with_its_twin_alone(tmp_path, capsys, one_group):
    """A code-generation template imports the models it is written from; it holds no roots beside its twin,
    so those models stay in groups of their own (transformers' `modular_*.py` files had joined 700 files
    into one analysis, run by one worker)."""
    files = {"zoo/__init__.py": "", **{f"zoo/{m}/__init__.py": "" for m in "abc"},
             "zoo/a/modeling_a.py": MODELING.format(name="A"), "zoo/b/modeling_b.py": MODELING.format(name="B"),
             "zoo/c/modeling_c.py": MODELING.format(name="C"), "zoo/c/modular_c.py": TEMPLATE}
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    root = _write(tmp_path, files)
    grouped, err = _check(capsys, root)
    # modeling_a, modeling_b, modeling_c with its template, and each package's __init__.py alone
    assert _count(err, "groups") == 7
    assert sorted((Path(f["filename"]).name, f["code"]) for f in grouped) == [
        ("modeling_a.py", "WSC101"), ("modeling_b.py", "WSC101"), ("modeling_c.py", "WSC101")]
    one_group()
    assert _check(capsys, root)[0] == grouped


HEADERS = b"""\
class Plain:
    pass
class Model(nn.Module, Mixin):  # a comment
    class Inner(Base):
\tclass Tabbed (torch.nn.Module ):
x = 1; class_name = "class Fake(Str)"
'''class InDocstring(Doc)'''
class Wrapped(
    Left,
    class NotAHeader(Hidden),
    Right,
):
    @classmethod
    def make(cls): return subclass(X)
class Last(Final)"""


@pytest.mark.parametrize("data", [HEADERS, HEADERS.replace(b"\n", b"\r\n"), b"", b"class", b"  class A(B)"])
def test_base_class_hints_are_those_of_the_class_line_pattern(data: bytes):
    """The base-class names a file's hints give (they link files into groups) are those of the pattern
    `^[ \\t]*class[ \\t]+\\w+[ \\t]*\\(([^)]*)\\)` over its lines, found from the word `class` instead."""
    import re

    pattern = re.compile(rb"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", re.MULTILINE)
    assert incremental._base_lists(data) == pattern.findall(data)


def test_base_class_hints_on_real_files():
    import re

    from tests.corpus import real_files

    pattern = re.compile(rb"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", re.MULTILINE)
    for path in real_files(torch_sample=200, seed=3):
        data = path.read_bytes()
        assert incremental._base_lists(data) == pattern.findall(data), path
    # every word between the brackets of a header (a wrapped one's too, as the pattern reads it)
    assert incremental.GroupHints.of(HEADERS).bases == {"nn", "Module", "Mixin", "Base", "torch", "Left", "class",
                                                        "NotAHeader", "Hidden", "Final"}
