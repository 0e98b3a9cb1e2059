"""An edit costs what it changed: the edited buffer's unchanged classes and functions keep their index
entries (analysis/carry_over.py), so their kept analyses and rule findings are reused. Whatever the
edits, the diagnostics of every open document must be those `cslint check` reports for the same texts
on disk: these tests apply sequences of edits through the editor's `Workspace` and compare after each."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cslint.cli.main import main
from cslint.lsp.workspace import Workspace
from cslint.support.profile import Profile

HELPERS = """\
import torch


def scale(x):
    return x * 2


def clip(x, bound):
    return torch.clamp(x, -bound, bound)
"""

MODEL = """\
import torch
from torch import nn

from pkg.helpers import clip, scale


def act(x):
    return torch.relu(x)


class Attention(nn.Module):
    def forward(self, x):
        y = scale(x)
        if act(y).max() > 3:
            y = y + 1
        return clip(y, 2.0)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = Attention()

    def forward(self, x):
        h = self.attn(x)
        return x + h


class Twin(nn.Module):
    def forward(self, x):
        h = self.attn(x)
        return x + h


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        x = self.block(x)
        if x.mean() > 0:
            x = x - 1
        return x
"""

OPTIMIZER = """\
import torch


class Counting(torch.optim.Optimizer):
    def __init__(self, params):
        super().__init__(params, {"lr": 0.1})
        self.updates = 0

    @torch.no_grad()
    def step(self):
        self.updates += 1
        for group in self.param_groups:
            for p in group["params"]:
                p.sub_(group["lr"] * p.grad)


def report(opt):
    return 0
"""


def _project(root: Path) -> Workspace:
    (root / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
    (root / "pkg").mkdir()
    (root / "pkg/__init__.py").write_text("", encoding="utf-8")
    for name, text in {"helpers.py": HELPERS, "model.py": MODEL, "optim.py": OPTIMIZER}.items():
        (root / "pkg" / name).write_text(text, encoding="utf-8")
    return Workspace()


def _checked(root: Path, texts: dict[str, str], scratch: Path, monkeypatch: pytest.MonkeyPatch,
             capsys: pytest.CaptureFixture[str]) -> dict[str, list[tuple[str, int, int, int, int, str]]]:
    """What `cslint check` reports for the project with `texts` (file name -> text) on disk."""
    if scratch.exists():
        shutil.rmtree(scratch)
    shutil.copytree(root, scratch)
    for name, text in texts.items():
        (scratch / "pkg" / name).write_text(text, encoding="utf-8")
    monkeypatch.chdir(scratch)
    capsys.readouterr()
    main(["check", "--no-cache", "--jobs", "1", "--exit-zero", "--output-format", "json", "."])
    found: dict[str, list[tuple[str, int, int, int, int, str]]] = {name: [] for name in texts}
    for d in json.loads(capsys.readouterr().out):
        name = Path(d["filename"]).name
        if name in found:
            found[name].append((d["code"], d["line"], d["column"], d["end_line"], d["end_column"], d["message"]))
    return {name: sorted(items) for name, items in found.items()}


def _shown(workspace: Workspace, root: Path) -> dict[str, list[tuple[str, int, int, int, int, str]]]:
    """The open documents' diagnostics as the server last published them."""
    return {path.name: sorted((d.code, d.line, d.column, d.end_line, d.end_column, d.message) for d in found)
            for path, (_, found) in workspace.findings.items()}


def _edit_and_compare(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                      edits: list[tuple[str, str]], opened: dict[str, str]) -> list[dict[str, list[tuple]]]:
    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    root = tmp_path / "project"
    root.mkdir()
    workspace = _project(root)
    texts = dict(opened)
    for name, text in texts.items():
        workspace.open(root / "pkg" / name, text, 1)
    for name in texts:
        workspace.analyse(root / "pkg" / name)
    seen = []
    for version, (name, text) in enumerate(edits, 2):
        texts[name] = text
        workspace.change(root / "pkg" / name, text, version)
        workspace.analyse(root / "pkg" / name)
        shown = _shown(workspace, root)
        assert shown == _checked(root, texts, tmp_path / "check", monkeypatch, capsys), (version, name)
        seen.append(shown)
    return seen


def _codes(found: list[tuple]) -> list[tuple[str, int]]:
    return [(item[0], item[1]) for item in found]


def test_edits_inside_traced_functions_equal_a_fresh_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    at_forward = "        x = self.block(x)\n"
    branch = "        if x.sum() > 0:\n            x = x * 2\n"
    edits = [
        ("model.py", MODEL.replace(at_forward, at_forward + "        z = 1\n")),  # a keystroke in Model.forward
        ("model.py", MODEL.replace(at_forward, at_forward + "        z = 12\n")),
        ("model.py", MODEL.replace(at_forward, at_forward + branch)),  # a new finding there
        ("model.py", "# a line above everything\n" + MODEL.replace(at_forward, at_forward + branch)),  # all move
        ("model.py", MODEL),  # back: the finding goes
        # a helper the unchanged Attention.forward calls (by its plain name, in the same file) changes
        ("model.py", MODEL.replace("    return torch.relu(x)", "    return torch.relu(x).sum().item()")),
        ("model.py", MODEL),
        # ...and gains a finding but returns what it did: the caller's analysis must not trace the old one
        ("model.py", MODEL.replace("def act(x):\n", "def act(x):\n    if x.max() > 0:\n        x = x * 2\n")),
        ("model.py", MODEL),
        # an unchanged forward's callee in another file returns a host value
        ("model.py", MODEL.replace("        y = scale(x)\n", "        y = scale(x)\n        y = y.tolist()\n")),
        ("model.py", MODEL.replace("import torch\n", "import torch\nimport math\n", 1)),  # the imports change
        ("model.py", MODEL),
    ]
    seen = _edit_and_compare(tmp_path, monkeypatch, capsys, edits, {"model.py": MODEL})
    base = _codes(seen[4]["model.py"])
    assert base  # `if x.mean() > 0` in Model.forward, `if act(y).max() > 3` in Attention.forward
    assert seen[0] == seen[1] and len(seen[2]["model.py"]) == len(seen[1]["model.py"]) + 1
    assert [line - 1 for _, line in _codes(seen[3]["model.py"])] == [line for _, line in _codes(seen[2]["model.py"])]
    assert _codes(seen[6]["model.py"]) == _codes(seen[8]["model.py"]) == _codes(seen[11]["model.py"]) == base
    assert _codes(seen[5]["model.py"]) != base  # act() now returns a Python number: no tensor branch on it
    assert len(seen[7]["model.py"]) == len(base) + 1


def test_an_edit_to_an_open_helper_and_defs_added_and_removed_equal_a_fresh_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    extra = "\n\ndef extra(x):\n    if x.sum() > 0:\n        return x\n    return -x\n"
    calls_extra = MODEL.replace("        return x + h\n", "        return extra(x + h)\n", 1) + extra
    untraced = MODEL.replace("class Block(nn.Module):", "class Block:")
    edits = [
        ("helpers.py", HELPERS.replace("    return x * 2", "    if x.max() > 1:\n        x = x / 2\n    return x * 2")),
        ("helpers.py", HELPERS),
        ("model.py", MODEL + extra),  # a def no traced code calls: no finding in it
        ("model.py", calls_extra),  # Block.forward calls it: traced
        ("model.py", MODEL + extra),  # untraced again
        ("model.py", MODEL),  # removed
        ("model.py", MODEL.replace("    def forward(self, x):\n        y = scale(x)", "    def forward_(self, x):\n"
                                   "        y = scale(x)")),  # Attention.forward is no root any more
        ("model.py", MODEL),
        ("model.py", untraced),  # Block is no module: its forward no root, reached from Model only
        ("model.py", untraced.replace("class Model(nn.Module):", "class Model:")),
        ("model.py", MODEL),
        # an unchanged function's text moves into the class just edited (the same text twice)
        ("model.py", MODEL.replace("class Twin(nn.Module):\n    def forward(self, x):\n        h = self.attn(x)",
                                   "class Twin(nn.Module):\n    def forward(self, x):\n        h = self.attn(x)\n"
                                   "        h = h.tolist()")),
        ("helpers.py", HELPERS.replace("return torch.clamp(x, -bound, bound)", "return x.item()")),
    ]
    seen = _edit_and_compare(tmp_path, monkeypatch, capsys, edits, {"model.py": MODEL, "helpers.py": HELPERS})
    assert _codes(seen[0]["helpers.py"]) and not _codes(seen[1]["helpers.py"])
    assert seen[2]["model.py"] == seen[1]["model.py"]
    assert len(seen[3]["model.py"]) == len(seen[2]["model.py"]) + 1
    assert seen[4]["model.py"] == seen[2]["model.py"]


def test_a_finding_that_reads_the_whole_file_follows_an_edit_elsewhere_in_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """WSC303 reports a step counter only if something in the file reads it: an edit of another function
    (the optimizer's step unchanged, its analysis reused) adds and removes that read."""
    reads = OPTIMIZER.replace("    return 0\n", "    return opt.updates\n")
    edits = [("optim.py", reads), ("optim.py", OPTIMIZER), ("optim.py", reads)]
    seen = _edit_and_compare(tmp_path, monkeypatch, capsys, edits, {"optim.py": OPTIMIZER})
    assert "WSC303" in [c for c, _ in _codes(seen[0]["optim.py"])]
    assert "WSC303" not in [c for c, _ in _codes(seen[1]["optim.py"])]
    assert seen[2]["optim.py"] == seen[0]["optim.py"]


def test_an_edit_reuses_the_analyses_and_findings_of_the_documents_unchanged_functions(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    root = tmp_path / "project"
    root.mkdir()
    workspace = _project(root)
    model = root / "pkg/model.py"
    workspace.open(model, MODEL, 1)
    workspace.analyse(model)
    kept = next(iter(workspace._warm.values())).analyses
    analysed = kept.analysed
    profile = Profile(enabled=True)
    monkeypatch.setattr("cslint.engine.runner.Profile", lambda enabled=False: profile)
    from cslint.engine.checker import Checker

    checked: list[str] = []
    plain = Checker.check_noting
    monkeypatch.setattr(Checker, "check_noting", lambda self, traced: checked.append(traced.func.qualname) or
                        plain(self, traced))
    at_forward = "        y = scale(x)\n"  # Attention.forward: analysed before, and after, its callees
    workspace.change(model, MODEL.replace(at_forward, at_forward + "        z = 1\n"), 2)
    workspace.analyse(model)
    # only Attention.forward is analysed again (until its callees' results are known): not its class's
    # other methods, nor Block, Twin, Model or act
    assert kept.analysed - analysed <= 3
    assert profile.counts.get("functions carried over from the last index of an edited buffer", 0) >= 6
    # the rules run once on each function whose analysis or callers changed (the edited one, Block.forward
    # that asks about it, act that it calls), with its final analysis; Twin's and Model's findings are reused
    assert sorted(checked) == ["pkg.model.Attention.forward", "pkg.model.Block.forward", "pkg.model.act"]
    assert profile.counts.get("functions whose rule findings were reused", 0) >= 2


def test_an_edited_buffers_tree_is_its_parse_with_only_the_changed_statements_parsed_again() -> None:
    """reparse.py: whenever it answers, its tree is `ast.parse` of the new text once its moved statements are
    renumbered (line_shifts.py), and says where every `def` is as that parse does; edits that break the
    syntax or open a string or bracket over the statements after get no answer (the caller parses the
    whole text). Edits follow one another on the tree the last one made, so the shifts add up."""
    import ast
    import random
    import warnings

    from cslint.support.line_shifts import renumbered
    from cslint.lsp.convert import def_positions
    from cslint.core.reparse import reparse

    warnings.simplefilter("ignore", SyntaxWarning)  # random texts: `1y` is an invalid decimal literal
    random.seed(21)
    pieces = ["x = 1\n", "    ", "(", ")", '"""', "\n", "\\\n", "@dec\n", "def g():\n    pass\n", "# note\n", "y",
              "class C:\n    z = 2\n", "if x:\n", "        return h\n", ":", "\t", "\n\n\n"]
    answered = moved = 0
    for _ in range(600):
        old = MODEL + OPTIMIZER
        old_tree = ast.parse(old)
        for _ in range(random.randint(1, 4)):  # a few edits since the last analysis
            new = old
            for _ in range(random.randint(1, 2)):
                at = random.randrange(len(new))
                cut = random.choice([0, 0, 1, 3])
                if random.random() < 0.5:  # a whole line, typed or deleted: moves the lines below
                    at = new.rfind("\n", 0, at) + 1
                    cut = random.choice([0, 0, new.find("\n", at) + 1 - at])
                new = new[:at] + random.choice(pieces + [""]) + new[at + cut:]
            tree = reparse(old, old_tree, new)
            try:
                expected = ast.parse(new)
            except SyntaxError:
                assert tree is None
                break
            if tree is not None:
                answered += 1
                moved += new.count("\n") != old.count("\n")
                assert ast.dump(renumbered(tree), include_attributes=True) == \
                    ast.dump(expected, include_attributes=True)
                assert def_positions(new, tree) == def_positions(new, expected)
            old, old_tree = new, tree if tree is not None else expected
    assert answered > 80 and moved > 50, (answered, moved)  # those that move the lines after them too
    line = "        x = self.block(x)\n"
    typed = MODEL.replace(line, line.replace("x)", "x + 1)"))
    tree = reparse(MODEL, ast.parse(MODEL), typed)
    assert tree is not None and ast.dump(renumbered(tree), include_attributes=True) == \
        ast.dump(ast.parse(typed), include_attributes=True)
    early = "        y = scale(x)\n"  # in Attention, the first class: every statement after it moves
    tree = reparse(MODEL, ast.parse(MODEL), MODEL.replace(early, early + early))
    assert tree is not None and ast.dump(renumbered(tree), include_attributes=True) == \
        ast.dump(ast.parse(MODEL.replace(early, early + early)), include_attributes=True)


def test_lines_inserted_and_deleted_above_functions_with_findings_equal_a_fresh_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Edits that move the functions below them (the buffer's tree keeps their statements with the lines
    they moved: line_shifts.py), one after another so the moves add up, and back."""
    attention = "        y = scale(x)\n"  # the first class's forward: every finding below it moves
    model = "        x = self.block(x)\n"
    typed = MODEL.replace(attention, "        z = 0\n" + attention)
    twice = typed.replace(model, model + "        w = 1\n        w = 2\n")
    pasted = "def extra(x):\n" + "".join(f"    x = x + {k}\n" for k in range(28)) + "    return x\n\n\n"
    edits = [
        ("model.py", "\n" + MODEL),  # Enter on the first line
        ("model.py", "\n\n" + MODEL),
        ("model.py", typed),  # a line typed at the top of a forward
        ("model.py", twice),  # two more lines further down: the moves add up
        ("model.py", twice.replace("        z = 0\n", "")),  # the first one deleted: the rest moves back
        ("model.py", twice.replace("        z = 0\n", "").replace("class Block", pasted + "class Block")),  # a paste
        ("model.py", twice.replace("        z = 0\n", "")),  # undone
        ("model.py", MODEL.replace("class Twin", "# a comment between classes\nclass Twin")),
        ("model.py", MODEL),
    ]
    seen = _edit_and_compare(tmp_path, monkeypatch, capsys, edits, {"model.py": MODEL})
    base = _codes(seen[-1]["model.py"])
    assert base and [line + 1 for _, line in base] == [line for _, line in _codes(seen[0]["model.py"])]
    assert [line + 2 for _, line in base] == [line for _, line in _codes(seen[1]["model.py"])]


def test_a_line_inserted_above_functions_moves_them_without_parsing_or_analysing_them_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pressing Enter at the top of the first class's `forward` moves every function below it: Python's
    parser reads only the class the edit is in (not the whole text), and the moved functions keep their
    analyses and rule findings (their index entries are carried over, their positions moved)."""
    import ast

    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    root = tmp_path / "project"
    root.mkdir()
    workspace = _project(root)
    model = root / "pkg/model.py"
    workspace.open(model, MODEL, 1)
    workspace.analyse(model)
    kept = next(iter(workspace._warm.values())).analyses
    profile = Profile(enabled=True)
    monkeypatch.setattr("cslint.engine.runner.Profile", lambda enabled=False: profile)
    parsed: list[str] = []
    parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda source, *a, **k: parsed.append(source) or parse(source, *a, **k))
    attention = "        y = scale(x)\n"
    text = MODEL
    for number in range(3):
        text = text.replace(attention, f"        z = {number}\n" + attention)
        analysed, reused = kept.analysed, profile.counts.get("functions whose rule findings were reused", 0)
        parsed.clear()
        workspace.change(model, text, number + 2)
        workspace.analyse(model)
        assert parsed and all(source.strip().startswith("class Attention") and "class Block" not in source
                              for source in parsed if isinstance(source, str))
        assert kept.analysed - analysed <= 3  # Attention.forward, until its callees' results settle
        # Twin's and Model's findings are reused where they moved to
        assert profile.counts.get("functions whose rule findings were reused", 0) - reused >= 2
    found = sorted((d.line, d.code) for d in workspace.findings[model][1])
    assert [line for line, _ in found] == [MODEL.splitlines().index("        if act(y).max() > 3:") + 4,
                                           MODEL.splitlines().index("        if x.mean() > 0:") + 4]


def test_a_line_inserted_in_a_model_file_that_says_padding_parses_and_walks_none_of_its_moved_code(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Most model files say `padding` (`padding_idx`), one of the words of a data pipeline (WSC55x). Those
    rules report only a loader or a trainer feeding a step; a file naming neither is not parsed whole and
    walked by them on every keystroke (as it was: the whole file's libcst tree, every function moved by
    the edit included, made and walked again), and the moved functions keep their analyses and findings."""
    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    root = tmp_path / "project"
    root.mkdir()
    workspace = _project(root)
    model = root / "pkg/model.py"
    padded = MODEL.replace("        self.attn = Attention()\n",
                           "        self.attn = Attention()\n        self.padding_idx = 0\n")
    workspace.open(model, padded, 1)
    workspace.analyse(model)
    kept = next(iter(workspace._warm.values())).analyses
    profile = Profile(enabled=True)
    monkeypatch.setattr("cslint.engine.runner.Profile", lambda enabled=False: profile)
    attention = "        y = scale(x)\n"
    text = padded
    for number in range(3):
        text = text.replace(attention, f"        z = {number}\n" + attention)
        analysed, reused = kept.analysed, profile.counts.get("functions whose rule findings were reused", 0)
        workspace.change(model, text, number + 2)
        workspace.analyse(model)
        assert profile.counts.get("files parsed on demand", 0) == 0  # no whole-file libcst tree
        assert kept.analysed - analysed <= 3  # Attention.forward, until its callees' results settle
        assert profile.counts.get("functions whose rule findings were reused", 0) - reused >= 2
    assert [d.code for d in workspace.findings[model][1]]


@pytest.mark.parametrize("example", ["torch.randn(1, 3, 224, 224)", "torch.randint(0, 2, (1, 196)).bool()"])
def test_an_edit_of_a_vision_model_whose_docstring_draws_at_random_does_not_parse_the_whole_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, example: str) -> None:
    """WSC553 follows a size drawn at random (a call of `random.*`, `numpy.random.*` or `torch.randint`)
    into a resize wherever a file's batches come from; a file whose only such words are in a docstring
    example, as most vision model files have next to an `interpolate`, calls none: an edit of it makes no
    libcst tree of the whole file for the data pipeline rules (each edit did, and walked it)."""
    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    root = tmp_path / "project"
    root.mkdir()
    workspace = _project(root)
    model = root / "pkg/model.py"
    vision = MODEL.replace(
        "class Model(nn.Module):\n",
        f'class Model(nn.Module):\n    """\n    >>> pixel_values = {example}\n    """\n\n').replace(
        "        x = self.block(x)\n",
        "        x = self.block(x)\n        x = nn.functional.interpolate(x, scale_factor=2.0)\n")
    workspace.open(model, vision, 1)
    workspace.analyse(model)
    profile = Profile(enabled=True)
    monkeypatch.setattr("cslint.engine.runner.Profile", lambda enabled=False: profile)
    text = vision
    for number in range(2):
        text = text.replace("        y = scale(x)\n", f"        z = {number}\n        y = scale(x)\n")
        workspace.change(model, text, number + 2)
        workspace.analyse(model)
        assert profile.counts.get("files parsed on demand", 0) == 0
    assert [d.code for d in workspace.findings[model][1]]


def test_a_size_drawn_at_random_for_a_resize_in_an_edited_training_script_is_still_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The calls an edited buffer makes are read from its Python tree to skip the data pipeline scan: a
    script that does draw a size at random for each batch still gets WSC553, as `cslint check` reports."""
    script = """\
import random

import torch.nn.functional as F

from pkg.data import make_loader

loader = make_loader()
for images, targets in loader:
    size = random.choice([320, 416, 512])
    images = F.interpolate(images, size=(size, size))
    model(images, targets).backward()
"""
    edits = [("train.py", script.replace("loader = make_loader()\n", "loader = make_loader()\nsteps = 0\n"))]
    seen = _edit_and_compare(tmp_path, monkeypatch, capsys, edits, {"train.py": script})
    assert all([code for code, *_ in found["train.py"]] == ["WSC553"] for found in seen)


def test_an_edit_of_an_optimizers_step_walks_none_of_its_methods_with_libcsts_visitor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The optimizer rules (WSC30x) and their preinitialize fix read each method of the class (its state
    aliases, state writes, bound names) for every function traced from an edited `step`; with libcst's
    visitor, many times slower than the rules' own walk, those reads were most of the edit's time."""
    import libcst as cst

    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    root = tmp_path / "project"
    root.mkdir()
    workspace = _project(root)
    optim = root / "pkg/optim.py"
    lazy = OPTIMIZER.replace('                p.sub_(group["lr"] * p.grad)\n', (
        '                state = self.state[p]\n'
        '                if len(state) == 0:\n'
        '                    state["buf"] = torch.zeros_like(p)\n'
        '                state["buf"].mul_(0.9).add_(p.grad)\n'
        '                p.sub_(group["lr"] * state["buf"])\n'))
    workspace.open(optim, lazy, 1)
    workspace.analyse(optim)
    assert "WSC301" in [d.code for d in workspace.findings[optim][1]]
    walked: list[str] = []
    visit = cst.CSTNode.visit

    def counted(node: cst.CSTNode, visitor: object) -> object:
        if isinstance(node, cst.FunctionDef) and isinstance(visitor, cst.CSTVisitor):  # a whole method
            walked.append(type(visitor).__qualname__)
        return visit(node, visitor)  # type: ignore[arg-type]

    monkeypatch.setattr(cst.CSTNode, "visit", counted)
    text = lazy
    for number in range(2):
        text = text.replace("        self.updates += 1\n", f"        self.updates += 1\n        z = {number}\n")
        workspace.change(optim, text, number + 2)
        workspace.analyse(optim)
        assert "WSC301" in [d.code for d in workspace.findings[optim][1]]
    assert walked == []


def test_an_edit_beside_an_optimizer_class_does_not_read_its_methods_again_for_its_entries(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which state and param-group entries of an optimizer are Python numbers is read from its methods
    (optimizer_entries.py), for every optimizer class an analysis meets: on every keystroke, for each of
    a project's optimizers (all of torch.optim's, for an edit of one). An edit that leaves a class's
    methods' text as it was reuses the answers the last analysis read from them."""
    from cslint.analysis import project_oracle

    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    root = tmp_path / "project"
    root.mkdir()
    workspace = _project(root)
    optim = root / "pkg/optim.py"
    read: list[list[str]] = []
    for name in ("group_tensor_entries", "state_entry_kinds"):
        plain = getattr(project_oracle, name)
        monkeypatch.setattr(project_oracle, name, lambda methods, *rest, plain=plain: read.append(
            [m.name.value for m in methods]) or plain(methods, *rest))
    text = OPTIMIZER.replace('group["lr"] * p.grad', 'group["lr"] * group["momentum"] * p.grad')  # asks
    workspace.open(optim, text, 1)
    workspace.analyse(optim)
    assert ["__init__", "step"] in read  # Counting's
    for number in range(2):
        read.clear()
        text = text.replace(f"    return {number}\n", f"    return {number + 1}\n")
        workspace.change(optim, text, number + 2)
        workspace.analyse(optim)
        assert ["__init__", "step"] not in read
    read.clear()
    workspace.change(optim, text.replace("self.updates += 1", "self.updates += 2"), 4)  # its step changes
    workspace.analyse(optim)
    assert ["__init__", "step"] in read


def test_a_reused_finding_keeps_its_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A function's findings reused after an edit elsewhere are those `cslint check` reports, the notes
    under their messages included (the library code a finding comes from): they were dropped."""
    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    root = tmp_path / "project"
    root.mkdir()
    workspace = _project(root)
    model = root / "pkg/model.py"
    text = MODEL.replace("from torch import nn\n", "from torch import nn\nfrom torch.optim.optimizer import _get_value\n")
    text = text.replace("        x = self.block(x)\n", "        x = self.block(x)\n        n = _get_value(x)\n")
    workspace.open(model, text, 1)
    workspace.analyse(model)
    first = [(d.code, d.notes) for d in workspace.findings[model][1] if d.notes]
    assert first and "via torch.optim.optimizer._get_value" in first[0][1][0]
    workspace.change(model, text.replace("    return torch.relu(x)", "    return torch.relu(x) + 0"), 2)
    workspace.analyse(model)
    assert [(d.code, d.notes) for d in workspace.findings[model][1] if d.notes] == first


def test_an_edit_scans_the_other_files_for_platform_entry_points_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Roots are looked for in every file of the edited one's neighbourhood on each edit: SambaNova's
    `trace_graph` calls and torch_xla's `mark_step` loops. A file that says `trace_graph` (torch's own
    registries do) but imports nothing of SambaFlow cannot call it, so it is not walked for the calls; a
    file that does import torch_xla is walked for its loops once, not on every keystroke elsewhere (a
    walk of each was most of an edit's time in a project of torch's modules)."""
    from cslint.analysis import platforms, xla_loops

    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    root = tmp_path / "project"
    root.mkdir()
    workspace = _project(root)
    (root / "pkg/registry.py").write_text(
        'from pkg.model import Model\n\nSKIPPED = ("torch._C._jit_trace_graph",)\n\n\n'
        'def build():\n    return Model()\n', encoding="utf-8")
    (root / "pkg/train_xla.py").write_text(
        "import torch_xla.core.xla_model as xm\n\nfrom pkg.model import Model\n\n\n"
        "def train(loader):\n    model = Model()\n    for x in loader:\n        loss = model(x).sum()\n"
        "        if loss > 0:\n            loss.backward()\n        xm.mark_step()\n", encoding="utf-8")
    walked: list[str] = []
    finder, step_loops = platforms._CallFinder, xla_loops._step_loops
    monkeypatch.setattr(platforms, "_CallFinder", lambda module: walked.append(module.name) or finder(module))
    monkeypatch.setattr(xla_loops, "_step_loops",
                        lambda module, *rest, **named: walked.append(module.name) or step_loops(module, *rest, **named))
    model = root / "pkg/model.py"
    workspace.open(model, MODEL, 1)
    workspace.analyse(model)
    assert "pkg.train_xla" in walked and "pkg.registry" not in walked
    text = MODEL
    for number in range(2):
        walked.clear()
        text = text.replace("        y = scale(x)\n", f"        z = {number}\n        y = scale(x)\n")
        workspace.change(model, text, number + 2)
        workspace.analyse(model)
        assert walked == []


def test_an_edit_does_not_walk_the_methods_of_unchanged_classes_for_the_attributes_they_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Which methods of a class may set `self.<attr>` is read from their text, for every class whose
    attributes an analysis asks about, on every edit: most of an edit of a large model file (qwen3_5) went
    to walking the same methods again. The answer is kept with each method's index entry."""
    from cslint.analysis import project_oracle

    monkeypatch.setenv("CSLINT_NO_CACHE", "1")
    root = tmp_path / "project"
    root.mkdir()
    workspace = _project(root)
    walked: list[str] = []
    walk = project_oracle._walk_sets_own_attributes
    monkeypatch.setattr(project_oracle, "_walk_sets_own_attributes",
                        lambda method: walked.append(method.qualname) or walk(method))
    model = root / "pkg/model.py"
    workspace.open(model, MODEL, 1)
    workspace.analyse(model)
    assert "pkg.model.Block.__init__" in walked
    text = MODEL
    for number in range(2):
        walked.clear()
        text = text.replace("        y = scale(x)\n", f"        z = {number}\n        y = scale(x)\n")
        workspace.change(model, text, number + 2)
        workspace.analyse(model)
        assert walked == []
        assert "WSC101" in [d.code for d in workspace.findings[model][1]]
    walked.clear()
    setting = text.replace("        self.block = Block()\n", "        self.block = Block()\n        self.k = 2\n")
    workspace.change(model, setting, 9)
    workspace.analyse(model)
    assert "pkg.model.Model.__init__" in walked
