"""A target per root (issue 36): a function torch.compile decorates or wraps is checked for `compile`, every
other root for the run's target; a finding reached from roots of both says so, once (docs/targets.md)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from cslint.cli.main import main

FUSED = """
import torch


def _norm(t):
    return t.abs().max().item()


def _update_fn(p, g):
    scale = g.norm().item()
    print(g)
    bound = _norm(g)
    return p - g * scale * bound


update = torch.compile(_update_fn)
"""

SGD = """
import torch
from torch.optim import Optimizer

from fused import _norm


class Plain(Optimizer):
    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                if len(state) == 0:
                    state["buf"] = torch.zeros_like(p)
                bound = _norm(p.grad)
                p.add_(p.grad, alpha=-group["lr"] / bound)
"""

PROJECT = {"fused.py": FUSED, "sgd.py": SGD}


def _at(found, name, line, code):
    matches = [d for d in found if d.path.name == name and d.line == line and d.code == code]
    assert len(matches) == 1, [(d.path.name, d.line, d.code, d.targets) for d in found]
    return matches[0]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, code in files.items():
        (root / name).write_text(textwrap.dedent(code).lstrip("\n"), encoding="utf-8")


def _check(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    code = main(["check", str(root), "-j", "1", *extra])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return out


def test_a_compiled_private_function_is_checked_for_compile(lint):
    found = lint(PROJECT)
    printed = _at(found, "fused.py", 10, "WSC701")  # checked for wsc, it ran "once, at trace time"
    assert printed.targets == ("compile",)
    assert "a graph break, not an error: `_update_fn` is compiled without `fullgraph=True`" in printed.message
    read = _at(found, "fused.py", 9, "WSC201")
    assert read.targets == ("compile",) and read.chain == ["fused._update_fn"]
    # the optimizer's step keeps its wsc findings (tests/test_issue36_shapes.py::test_8)
    assert _at(found, "sgd.py", 13, "WSC301").targets == ("wsc",)


def test_a_break_only_dynamo_takes_is_reported_in_a_compiled_function(lint):
    """A call of a function `torch.compiler.disable` keeps out of the graph breaks dynamo's graph (WSC707, a
    compile rule): silent when the compiled function was checked for the run's wsc target."""
    fused = """
    import torch


    @torch.compiler.disable
    def _record(t):
        return t.sum()


    def _update_fn(p, g):
        _record(g)
        return p - g


    update = torch.compile(_update_fn)
    """
    found = lint({"fused.py": fused, "sgd.py": SGD.replace("from fused import _norm", "from fused import _record")
                  .replace("bound = _norm(p.grad)", "bound = _record(p.grad)")})
    assert _at(found, "fused.py", 10, "WSC707").targets == ("compile",)
    assert _at(found, "sgd.py", 13, "WSC301").targets == ("wsc",)
    assert not any(d.code == "WSC707" and d.path.name == "sgd.py" for d in found)  # lazy tracers trace through


def test_a_helper_reached_from_both_roots_reports_once_with_both_targets(lint):
    found = lint(PROJECT)
    shared = [d for d in found if d.path.name == "fused.py" and d.line == 5]
    assert [(d.code, d.targets) for d in shared] == [("WSC201", ("wsc", "compile"))]
    assert shared[0].chain == ["sgd.Plain.step", "fused._norm"]  # the run's target's finding, its chain


def test_an_explicit_compile_target_checks_every_root_for_compile(lint):
    found = lint(PROJECT, target="compile")
    assert found and all(d.targets == ("compile",) for d in found)
    assert not any(d.code == "WSC301" for d in found)  # lazy-tensor optimizer state: not a compile rule


def test_a_project_without_compile_roots_is_checked_once(lint):
    found = lint({"sgd.py": SGD, "fused.py": FUSED.replace("update = torch.compile(_update_fn)\n", "")})
    assert found and all(d.targets == ("wsc",) for d in found)
    assert not any(d.line == 10 and d.path.name == "fused.py" for d in found)  # nothing traces the print


def test_reports_carry_the_targets(tmp_path, capsys):
    _write(tmp_path, PROJECT)
    text = _check(tmp_path, capsys, "--no-cache")
    lines = text.splitlines()
    assert any(line.endswith("`_update_fn` is compiled without `fullgraph=True` [compile]") and ":10:5: WSC701"
               in line for line in lines), text
    assert any(":5:" in line and line.endswith("[wsc, compile]") for line in lines), text
    assert lines[-1].endswith("; compile for 1 root handed to torch.compile (`_update_fn` in fused.py)"), lines[-1]
    assert lines[-1].startswith("target: wsc (default: ")

    findings = json.loads(_check(tmp_path, capsys, "--no-cache", "--output-format", "json"))
    assert {tuple(f["targets"]) for f in findings} == {("wsc",), ("compile",), ("wsc", "compile")}
    printed = next(f for f in findings if f["code"] == "WSC701")
    assert printed["targets"] == ["compile"] and printed["graph_break"]["id"]

    sarif = json.loads(_check(tmp_path, capsys, "--no-cache", "--output-format", "sarif"))
    results = sarif["runs"][0]["results"]
    assert len(results) == len(findings)
    assert sorted(tuple(r["properties"]["targets"]) for r in results) == \
        sorted(tuple(f["targets"]) for f in findings)


def test_a_single_target_project_reports_as_before_plus_targets(tmp_path, capsys):
    _write(tmp_path, {"sgd.py": SGD, "fused.py": FUSED.replace("update = torch.compile(_update_fn)\n", "")})
    findings = json.loads(_check(tmp_path, capsys, "--no-cache", "--output-format", "json"))
    assert findings
    for finding in findings:
        assert set(finding) == {"filename", "line", "column", "end_line", "end_column", "code", "message", "fix",
                                "trace_chain", "traced_because", "notes", "cell", "certainty", "assumption",
                                "targets", "library_sites"}
        assert finding["targets"] == ["wsc"] and finding["library_sites"] == []
    text = _check(tmp_path, capsys, "--no-cache").splitlines()
    assert not any(line.endswith("]") for line in text if ": WSC" in line)  # no target marked
    assert text[-1] == "target: wsc (default: the project imports no accelerator package and does not use " \
                       "torch.compile)"


def test_a_cached_report_equals_a_fresh_one(tmp_path, capsys):
    project = tmp_path / "project"
    project.mkdir()
    _write(project, PROJECT)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    fresh = _check(project, capsys, "--no-cache", "--output-format", "json")
    fresh_text = _check(project, capsys, "--no-cache")
    assert _check(project, capsys, *cache, "--output-format", "json") == fresh  # written
    assert _check(project, capsys, *cache, "--output-format", "json") == fresh  # read back
    assert _check(project, capsys, *cache) == fresh_text  # the roots' target line too


def test_compile_fixes_never_touch_code_a_wsc_root_reaches(tmp_path, capsys):
    _write(tmp_path, {"sgd.py": SGD.replace("bound = _norm(p.grad)", "bound = _shown(p.grad)")
                      .replace("from fused import _norm", "from fused import _shown"),
                      "fused.py": (FUSED + textwrap.dedent("""

                      def _shown(t):
                          print("normalising")
                          return t.abs().max()
                      """)).replace("    bound = _norm(g)", "    bound = _shown(g)")})
    before = (tmp_path / "fused.py").read_text(encoding="utf-8")
    findings = json.loads(_check(tmp_path, capsys, "--no-cache", "--output-format", "json", "--unsafe-fixes"))
    # a print of no tensor breaks dynamo's graph only: a finding of the compile check alone, in a helper the
    # wsc step calls too, so without its fix
    shown_print = next(f for f in findings if f["code"] == "WSC701" and f["trace_chain"][-1] == "fused._shown")
    assert shown_print["targets"] == ["compile"] and shown_print["fix"] is None
    own_print = next(f for f in findings if f["code"] == "WSC701" and f["trace_chain"] == ["fused._update_fn"])
    assert own_print["fix"] is not None
    _check(tmp_path, capsys, "--no-cache", "--fix", "--unsafe-fixes")
    after = (tmp_path / "fused.py").read_text(encoding="utf-8")
    assert after != before
    fixed_update = after.split("def _update_fn")[1].split("\nupdate = ")[0]
    assert "torch.compiler.is_compiling()" in fixed_update  # the compile root's own print is guarded
    shown = after.split("def _shown")[1]
    assert shown == before.split("def _shown")[1]  # the helper the optimizer's step calls is untouched


def test_the_editor_shows_the_targets_as_cslint_check_reports_them(tmp_path, capsys, monkeypatch):
    from lsprotocol import types
    from pygls.workspace import PositionCodec

    from cslint.lsp.convert import to_lsp
    from cslint.lsp.workspace import Workspace

    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    (tmp_path / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
    _write(tmp_path, PROJECT)
    checked = json.loads(_check(tmp_path, capsys, "--no-cache", "--output-format", "json"))
    expected = sorted((f["code"], f["line"], f["column"], tuple(f["targets"])) for f in checked
                      if Path(f["filename"]).name == "fused.py")
    workspace = Workspace()
    fused = tmp_path / "fused.py"
    text = fused.read_text(encoding="utf-8")
    workspace.open(fused, text)
    (_, shown), = workspace.analyse(fused).values()
    assert sorted((d.code, d.line, d.column, d.targets) for d in shown) == expected
    codec = PositionCodec(types.PositionEncodingKind.Utf16)
    data = [to_lsp(d, text.splitlines(keepends=True), codec, []).data["targets"] for d in shown]
    assert sorted(map(tuple, data)) == sorted(targets for *_, targets in expected)
    assert ["compile"] in data and ["wsc", "compile"] in data


# ---- the other platforms' own roots --------------------------------------------------------------------

CSTORCH_STEP = """
import torch
import cerebras.pytorch as cstorch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        return self.proj(x)


model = Net()


@cstorch.trace
def train_step(batch):
    loss = model(batch).sum()
    print(loss.item())
    return loss
"""


def test_a_cstorch_trace_step_is_a_wsc_root_under_an_explicit_compile_target(lint):
    found = lint({"train.py": CSTORCH_STEP}, target="compile")
    printed = _at(found, "train.py", 23, "WSC701")
    assert printed.targets == ("wsc",) and "at trace time" in printed.message  # the lazy tracer's wording
    branch = _at(found, "train.py", 12, "WSC101")  # the forward is a compile root the wsc step also calls
    assert branch.targets == ("compile", "wsc") and "graph break" in branch.message


def test_the_target_line_names_each_other_targets_roots(tmp_path, capsys):
    _write(tmp_path, {"train.py": CSTORCH_STEP})
    line = _check(tmp_path, capsys, "--no-cache", "--target", "compile").splitlines()[-1]
    assert line == "target: compile (set by --target); wsc for 1 root traced by cstorch.trace (`train_step` in train.py)"


def test_a_mark_step_loop_is_an_xla_root_under_an_explicit_wsc_target(lint):
    loop = """
    import torch_xla.core.xla_model as xm


    def train(model, batches, optimizer):
        for batch in batches:
            loss = model(batch).sum()
            if loss.item() > 10.0:
                print("diverging")
            loss.backward()
            optimizer.step()
            xm.mark_step()
    """
    found = lint({"loop.py": loop}, target="wsc")
    read = _at(found, "loop.py", 7, "WSC201")
    assert read.targets == ("xla",) and "on XLA it runs the graph so far" in read.message


def test_a_sambanova_graphs_model_is_an_rdu_root_under_an_explicit_wsc_target(lint):
    script = """
    from torch import nn
    import samba.utils


    class Net(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                x = x * 2
            return x


    class Other(nn.Module):
        def forward(self, x):
            if x.mean() > 0:
                x = x + 1
            return x


    def main(inputs):
        model = Net()
        samba.utils.trace_graph(model, inputs)
    """
    found = lint({"run.py": script}, target="wsc")
    assert _at(found, "run.py", 7, "WSC101").targets == ("rdu",)
    assert _at(found, "run.py", 14, "WSC101").targets == ("wsc",)  # a forward no SambaNova call names


def test_a_noqa_for_a_compile_rule_in_a_compile_root_is_not_called_disabled(lint):
    fused = """
    import torch


    @torch.compiler.disable
    def _record(t):
        return t.sum()


    def _update_fn(p, g):
        _record(g)  # noqa: WSC707
        return p - g  # noqa: WSC707


    update = torch.compile(_update_fn)
    """
    found = lint({"fused.py": fused}, extend_select=("WSC003",))
    assert [(d.code, d.line) for d in found] == [("WSC003", 11)], [(d.code, d.line, d.message) for d in found]
    assert "unused: WSC707" in found[0].message  # not "not enabled": the compile root's rules ran
