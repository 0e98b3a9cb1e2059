"""Settings that change what breaks dynamo's graph (issue 40, item 4), read from the project's code.

What each test expects was checked against torch 2.13 (CPU) with `torch.compile(fn, backend=CompileCounter,
fullgraph=...)`: `x * x.sum().item()` is 2 graphs without fullgraph and 1 with `capture_scalar_outputs`
or under `fullgraph=True`; `nonzero`, `masked_select`, `unique` and `x[mask]` likewise with
`capture_dynamic_output_shape_ops`; `if x.sum().item() > 0` and `if x.sum() > 0` are errors under
fullgraph=True whatever the settings; a `@torch.compiler.disable` function called from compiled code is
an error under fullgraph=True ("Skip calling `torch.compiler.disable()`d function") and a break
without it; with `recursive=False` what it calls is compiled as its own graph.
"""

from __future__ import annotations

import json

import pytest

from cslint.analysis.dynamo_config import assigned_settings, project_settings
from tests.conftest import codes

LAZY = ("wsc", "xla", "rdu")

MODEL = """
import torch
from torch import nn


class Scale(nn.Module):
    def forward(self, x):
        norm = x.norm()
        y = x / norm.item()
        if x.sum().item() > 0:
            y = y + float(x.mean())
        ids = torch.nonzero(x > 0)
        return y, ids, x[x > 0], torch.unique(x)
"""
# the finding on each line without any setting, under --target compile
SCALAR_READS = [("WSC201", 8), ("WSC203", 10)]  # reads only feeding tensor arithmetic: captured
BRANCH = [("WSC101", 9), ("WSC201", 9)]  # a branch on a read: still a break
SHAPES = [("WSC501", 11), ("WSC502", 12), ("WSC501", 12)]


def test_without_settings_every_read_and_shape_is_reported(lint):
    assert sorted(codes(lint(MODEL, target="compile"))) == sorted(SCALAR_READS + BRANCH + SHAPES)


def test_capture_scalar_outputs_keeps_reads_that_feed_arithmetic_in_the_graph(lint):
    found = codes(lint(MODEL, target="compile", dynamo_config=("capture_scalar_outputs",)))
    assert sorted(found) == sorted(BRANCH + SHAPES)


def test_capture_dynamic_output_shape_ops_keeps_data_dependent_shapes_in_the_graph(lint):
    found = codes(lint(MODEL, target="compile", dynamo_config=("capture_dynamic_output_shape_ops",)))
    assert sorted(found) == sorted(SCALAR_READS + BRANCH)


@pytest.mark.parametrize("target", LAZY)
def test_dynamo_settings_change_nothing_on_lazy_targets(lint, target):
    """Lazy tensors (WSC, XLA, RDU) read a value to the host whatever dynamo's settings say."""
    plain = lint(MODEL, target=target)
    both = lint(MODEL, target=target, dynamo_config=("capture_scalar_outputs", "capture_dynamic_output_shape_ops"))
    assert [(d.code, d.line, d.message) for d in both] == [(d.code, d.line, d.message) for d in plain]
    assert ("WSC201", 8) in codes(plain) and ("WSC501", 11) in codes(plain)


# ---- reading the assignments ------------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "import torch\ntorch._dynamo.config.capture_scalar_outputs = True\n",
    "import torch._dynamo.config as cfg\ncfg.capture_scalar_outputs = True\n",
    "from torch._dynamo import config\nconfig.capture_scalar_outputs = True\n",
    "import torch._dynamo\nif __name__ == '__main__':\n    torch._dynamo.config.capture_scalar_outputs = True\n",
])
def test_assignments_are_read_in_every_spelling(text):
    assert assigned_settings(text) == (("capture_scalar_outputs", True),)


@pytest.mark.parametrize("text", [
    "import torch\ndef main():\n    torch._dynamo.config.capture_scalar_outputs = True\n",  # not module level
    "import other as cfg\ncfg.capture_scalar_outputs = True\n",  # not dynamo's config
    "import torch\ntorch._dynamo.config.capture_scalar_outputs = flag\n",  # not a literal
    "# torch._dynamo.config.capture_scalar_outputs = True\n",
    "torch._dynamo.config.capture_scalar_outputs = True\n(",  # Python cannot parse it
])
def test_what_is_not_a_project_setting(text):
    assert assigned_settings(text) == ()


def test_a_file_too_large_to_parse_quickly_sets_nothing():
    from cslint.analysis.dynamo_config import MAX_PARSED

    text = "import torch\ntorch._dynamo.config.capture_scalar_outputs = True\n"
    assert assigned_settings(text + "x = 1\n" * (MAX_PARSED // 6)) == ()
    assert assigned_settings(text + "x = 1\n" * 10) == (("capture_scalar_outputs", True),)


def test_a_setting_assigned_both_ways_is_not_taken_as_on():
    assert project_settings([(("capture_scalar_outputs", True),), (("capture_scalar_outputs", False),)]) == ()
    assert project_settings([(("capture_scalar_outputs", True),), ()]) == ("capture_scalar_outputs",)


TRAIN = """
import torch
import torch._dynamo.config as dynamo_config

from model import Scale

dynamo_config.capture_scalar_outputs = True
step = torch.compile(Scale())
"""


def _check(root, *args):
    from cslint.cli.main import main

    return main(["check", str(root), "--no-cache", "-j", "1", "--output-format", "json", *args])


def test_the_project_setting_is_read_from_another_file_by_the_cli(tmp_path, capsys):
    """The assignment in train.py applies to model.py, which does not import it; on xla nothing changes."""
    (tmp_path / "model.py").write_text(MODEL.lstrip(), encoding="utf-8")
    (tmp_path / "train.py").write_text(TRAIN.lstrip(), encoding="utf-8")
    _check(tmp_path, "--target", "compile")
    found = sorted((d["code"], d["line"]) for d in json.loads(capsys.readouterr().out))
    assert found == sorted(BRANCH + SHAPES), found
    _check(tmp_path, "--target", "xla")
    on_xla = [(d["code"], d["line"]) for d in json.loads(capsys.readouterr().out)]
    assert ("WSC201", 8) in on_xla and ("WSC203", 10) in on_xla, on_xla


def test_a_changed_setting_is_not_answered_from_the_cache(tmp_path, capsys, monkeypatch):
    from cslint.cli.main import main

    monkeypatch.setenv("CSLINT_CACHE_DIR", str(tmp_path / "cache"))
    project = tmp_path / "project"
    project.mkdir()
    (project / "model.py").write_text(MODEL.lstrip(), encoding="utf-8")
    (project / "train.py").write_text(TRAIN.lstrip(), encoding="utf-8")
    args = ["check", str(project), "-j", "1", "--target", "compile", "--output-format", "json"]
    main(args)
    assert ("WSC201", 8) not in [(d["code"], d["line"]) for d in json.loads(capsys.readouterr().out)]
    (project / "train.py").write_text(TRAIN.replace("= True", "= False").lstrip(), encoding="utf-8")
    main(args)
    assert ("WSC201", 8) in [(d["code"], d["line"]) for d in json.loads(capsys.readouterr().out)]


# ---- how the root is compiled -------------------------------------------------------------------------

COMPILED = """
import torch


@torch.compile{options}
def step(x):
    y = x * x.sum().item()
    if x.sum() > 0:
        y = y + 1
    return y, torch.nonzero(x)
"""


def test_without_fullgraph_a_break_says_it_splits_the_step(lint):
    found = lint(COMPILED.format(options=""), target="compile")
    assert codes(found) == [("WSC201", 6), ("WSC101", 7), ("WSC501", 9)]
    for diagnostic in found:
        assert "a graph break, not an error: `step` is compiled without `fullgraph=True`" \
            in diagnostic.message, diagnostic.message
    assert "an error with `fullgraph=True`" not in found[0].message  # WSC2's generic hint gives way


def test_fullgraph_true_captures_reads_and_shapes_and_a_branch_is_an_error(lint):
    found = lint(COMPILED.format(options="(fullgraph=True)"), target="compile")
    assert codes(found) == [("WSC101", 7)]
    assert found[0].message.endswith("an error: `step` is compiled with `fullgraph=True`")


def test_a_config_patch_decorator_applies_to_what_the_root_traces(lint):
    code = COMPILED.format(options="").replace(
        "@torch.compile\n", "@torch._dynamo.config.patch(capture_scalar_outputs=True)\n@torch.compile\n")
    assert codes(lint(code, target="compile")) == [("WSC101", 8), ("WSC501", 10)]
    dict_form = code.replace("patch(capture_scalar_outputs=True)", 'patch({"capture_dynamic_output_shape_ops": True})')
    assert codes(lint(dict_form, target="compile")) == [("WSC201", 7), ("WSC101", 8)]
    below = COMPILED.format(options="").replace(  # the patch applies in either order (checked with torch 2.13)
        "@torch.compile\n", "@torch.compile\n@torch._dynamo.config.patch('capture_scalar_outputs', True)\n")
    assert codes(lint(below, target="compile")) == [("WSC101", 8), ("WSC501", 10)]


def test_a_wrapper_call_gives_the_options(lint):
    code = COMPILED.format(options="").replace("@torch.compile\n", "") + \
        "\ncompiled = torch.compile(step, fullgraph=True)\n"
    assert codes(lint(code, target="compile")) == [("WSC101", 6)]
    code = code.replace("fullgraph=True", "fullgraph=False")
    found = lint(code, target="compile")
    assert codes(found) == [("WSC201", 5), ("WSC101", 6), ("WSC501", 8)]
    assert all("without `fullgraph=True`" in d.message for d in found)


def test_a_fullgraph_that_is_not_a_literal_keeps_the_generic_words(lint):
    found = lint(COMPILED.format(options="(fullgraph=STRICT)"), target="compile")
    assert codes(found) == [("WSC201", 6), ("WSC101", 7), ("WSC501", 9)]
    assert "a graph break (an error under `fullgraph=True`)" in found[0].message
    assert not any("compiled with" in d.message for d in found)


@pytest.mark.parametrize("target", LAZY)
def test_a_compiled_function_keeps_its_options_on_lazy_targets(lint, target):
    """A function torch.compile decorates is a compile root whatever the run's target (docs/targets.md, "A
    target per root"): dynamo traces it, so its options decide its findings as under --target compile."""
    for options in ("", "(fullgraph=True)"):
        lazy = lint(COMPILED.format(options=options), target=target)
        compiled = lint(COMPILED.format(options=options), target="compile")
        assert [(d.code, d.line, d.message) for d in lazy] == [(d.code, d.line, d.message) for d in compiled]
        assert lazy and all(d.targets == ("compile",) for d in lazy), [d.targets for d in lazy]
    assert ("WSC201", 6) in codes(lint(COMPILED.format(options=""), target=target))
    assert ("WSC201", 6) not in codes(lint(COMPILED.format(options="(fullgraph=True)"), target=target))


# ---- escape hatches -----------------------------------------------------------------------------------

DISABLED = """
import torch
from torch import nn


def log_stats(x):
    print(x.mean())
    return x.max().item()


@{decorator}
def report(x):
    print(x)
    return log_stats(x)


class Net(nn.Module):
    def forward(self, x):
        report(x)
        return x * 2
"""


@pytest.mark.parametrize("decorator", ["torch.compiler.disable", "torch._dynamo.disable", "torch.compiler.disable()"])
def test_a_disabled_function_and_its_callees_are_not_traced_under_compile(lint, decorator):
    # nothing inside is traced; the call itself is a break (WSC707: dynamo skips the frame at every call)
    assert codes(lint(DISABLED.format(decorator=decorator), target="compile")) == [("WSC707", 18)]


def test_recursive_false_runs_only_its_own_frame_eagerly(lint):
    found = codes(lint(DISABLED.format(decorator="torch.compiler.disable(recursive=False)"), target="compile"))
    assert found == [("WSC701", 6), ("WSC201", 7)]  # log_stats is compiled; report's own print is not traced


@pytest.mark.parametrize("target", LAZY)
def test_disable_changes_nothing_on_lazy_targets(lint, target):
    """A lazy tracer records every op the Python code runs, disabled for dynamo or not."""
    found = codes(lint(DISABLED.format(decorator="torch.compiler.disable"), target=target))
    undecorated = codes(lint(DISABLED.format(decorator="staticmethod"), target=target))
    assert found == undecorated and ("WSC201", 7) in found and ("WSC701", 12) in found, found


def test_a_disabled_forward_is_no_root_under_compile(lint):
    code = DISABLED.format(decorator="staticmethod").replace(
        "    def forward", "    @torch.compiler.disable\n    def forward")
    assert codes(lint(code, target="compile")) == []
    assert codes(lint(code, target="wsc")) != []


WRAPPED = """
import torch


def stats(x):
    print(x)
    return x.sum().item()


quiet_stats = torch.compiler.disable(stats)


@torch.compile
def step(x):
    a = {call}
    return x * 2
"""


@pytest.mark.parametrize("call", ["torch.compiler.disable(stats)(x)", "quiet_stats(x)"])
def test_a_function_wrapped_by_disable_is_not_traced_through_the_wrapper(lint, call):
    """(Already so before settings were read: the wrapper's result is not resolved to `stats`.)"""
    assert codes(lint(WRAPPED.format(call=call), target="compile")) == []
    assert codes(lint(WRAPPED.format(call="stats(x)"), target="compile")) == [("WSC701", 5), ("WSC201", 6)]
