"""An editor's analyses reuse the function analyses of earlier ones where nothing they read changed
(analysis/reuse.py): every answer must equal that of a fresh analysis of the same texts, and the
functions an edit cannot affect are not analysed again."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from cslint.core.config import load_settings
from cslint.analysis.warm import WarmIndexes
from cslint.engine.overlay import lint_texts
from cslint.engine.selection import enabled_codes

# the helpers live in another file and read what the edited document defines: an attribute of the
# model it is handed, a module-level registry of the document, a function the document exports
LOSSES = """\
import torch

from pkg.model import ACTIVATIONS, scale_of


def threshold_of(model):
    return model.threshold


def activate(x, kind):
    return ACTIVATIONS[kind](x)


def scaled(x):
    return scale_of(x) * 2


def cross_entropy(logits, labels):
    return torch.nn.functional.cross_entropy(logits, labels)
"""

MODEL = """\
import torch
from torch import nn

from pkg.losses import activate, cross_entropy, scaled, threshold_of


def relu(x):
    return torch.relu(x)


ACTIVATIONS = {"relu": relu}


def scale_of(x):
    return x.abs()


class Base(nn.Module):
    def shift(self, x):
        return x - 1


class Net(Base):
    def __init__(self):
        super().__init__()
        self.threshold = torch.ones(1)

    def forward(self, x, labels):
        if threshold_of(self) > 0:
            x = x * 2
        if activate(x, "relu").sum() > 0:
            x = x + 1
        if scaled(x).max() > 1:
            x = super().shift(x)
        return cross_entropy(x, labels)
"""


def _project(root: Path) -> tuple[Path, Path]:
    (root / "pyproject.toml").write_text("[tool.cslint]\n", encoding="utf-8")
    (root / "pkg").mkdir()
    (root / "pkg/__init__.py").write_text("", encoding="utf-8")
    (root / "pkg/losses.py").write_text(LOSSES, encoding="utf-8")
    (root / "pkg/model.py").write_text(MODEL, encoding="utf-8")
    return root / "pkg/model.py", root / "pkg/losses.py"


def _found(texts: dict[Path, str], warm: WarmIndexes | None) -> list[tuple[str, str, int, int]]:
    settings = load_settings(None, next(iter(texts)))
    result = lint_texts(texts, settings, enabled_codes(settings), warm=warm)
    assert not result.errors
    return sorted((d.path.name, d.code, d.line, d.column) for d in result.diagnostics)


def _flagged_lines(found: list[tuple[str, str, int, int]]) -> list[int]:
    return sorted(line for name, code, line, _ in found if name == "model.py" and code == "WSC101")


def test_reused_analyses_equal_fresh_ones_when_the_document_changes_what_helpers_read(tmp_path: Path) -> None:
    model, losses = _project(tmp_path)
    warm = WarmIndexes()
    number_threshold = MODEL.replace("self.threshold = torch.ones(1)", "self.threshold = 0.5")
    host_scale = MODEL.replace("return x.abs()", "return 1.0")
    host_relu = MODEL.replace("return torch.relu(x)", "return 1.0")
    edits = [
        {model: MODEL},
        {model: "# a comment\n" + MODEL},  # nothing a helper reads changed
        {model: number_threshold},  # threshold_of(self) reads the attribute: now a Python number
        {model: MODEL},
        {model: host_scale},  # scaled() calls the document's scale_of: no tensor any more
        {model: host_relu},  # activate() calls through the document's registry
        # scale_of is traced only through scaled(): its new finding must come from its new text, though
        # what it returns (a tensor) and so scaled()'s analysis are the same
        {model: MODEL.replace("    return x.abs()", "    if x.min() < 0:\n        x = -x\n    return x.abs()")},
        {model: MODEL, losses: LOSSES.replace("return model.threshold", "return 1")},  # the helper's own text
        # the base method forward calls through super() (traced only from there) changes
        {model: MODEL.replace("return x - 1", "return x - x.sum().item()")},
        # forward's text is unchanged, but `activate` is now the document's own function, not the helper
        {model: MODEL.replace("import activate, ", "import ") + "\n\ndef activate(x, kind):\n    return 1.0\n"},
        {model: MODEL},
    ]
    seen = []
    for texts in edits:
        fresh = _found(texts, None)
        assert _found(texts, warm) == fresh
        seen.append(_flagged_lines(fresh))
        if "x.sum().item()" in texts[model]:
            assert ("model.py", "WSC201", 20, 20) in fresh
    both = [29, 31, 33]
    moved = [line + 2 for line in both]
    assert seen == [both, [line + 1 for line in both], [31, 33], both, [29, 31], [29, 33], [15, *moved], [31, 33],
                    both, [29, 33], both]


def test_functions_an_edit_cannot_affect_are_not_analysed_again(tmp_path: Path) -> None:
    model, _ = _project(tmp_path)
    warm = WarmIndexes()
    _found({model: MODEL}, warm)
    first = warm.analyses.analysed
    # within the first run, only a function analysed again after a callee's result became known, whose
    # every answer turned out the same (a small helper's per-call answer), is reused
    reused_first = warm.analyses.reused
    assert first and reused_first < first
    _found({model: MODEL.replace("x = x + 1", "x = x + 2")}, warm)
    # cross_entropy and threshold_of read nothing the edit changed (the others call into the document)
    assert warm.analyses.reused - reused_first >= 2
    assert warm.analyses.analysed - first < first


def test_an_edited_buffers_unchanged_statements_are_not_measured_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The analysis budget's walk (budget.over_budget) measures only the top-level statements an edit
    changed, and answers as a walk of the whole file does, over the budget too."""
    from cslint.support import budget

    deep = "y = " + "[" * 60 + "]" * 60 + "\n"
    texts = [MODEL, MODEL.replace("x = x + 1", "x = x + 3"), MODEL + deep * 3, "\f" + MODEL + "a = 1; b = [[[2]]]\n",
             MODEL]
    walked: list[object] = []
    measure = budget._depths
    monkeypatch.setattr(budget, "_depths", lambda root: walked.append(root) or measure(root))
    kept: dict[tuple[str, int, int], float] = {}
    counts = []
    for text in texts:
        tree = ast.parse(text)
        whole = budget.over_budget(tree, 100)
        walked.clear()
        assert budget.over_budget(tree, 100, kept, budget.source_lines(text)) == whole
        counts.append(sum(1 for root in walked if root is not tree))
    assert budget.over_budget(ast.parse(texts[2]), 100) is not None  # three deep statements are over
    statements = len(ast.parse(MODEL).body)
    # the class edited back, then one deep statement (the others are the same text); the first line's form
    # feed and the two statements of the last line; the first line again
    assert counts == [statements, 1, 2, 3, 1]


def test_a_question_about_the_project_asked_again_is_checked_once_for_reuse(tmp_path: Path) -> None:
    """Every edit checks each kept analysis by asking its questions again; a `forward` making twenty
    `torch.*` calls asked where `torch` comes from twenty times, and its checks repeated each. The project
    does not change during a run, so a project or module question is written down once per analysis."""
    model, _ = _project(tmp_path)
    calls = "".join(f"        x = torch.relu(x) + torch.tanh(x) * {n}\n" for n in range(10))
    text = MODEL.replace("    def forward(self, x, labels):\n", "    def forward(self, x, labels):\n" + calls)
    warm = WarmIndexes()
    fresh = _found({model: text}, None)
    assert _found({model: text}, warm) == fresh
    reads = [read for kept in warm.analyses._last.values() for k in kept for read in k.reads
             if k.func.name == "forward" and k.func.cls is not None and k.func.cls.name == "Net"]
    asked = [(who, name, repr(args)) for who, name, args, _ in reads if who in ("project", "module")]
    assert asked and len(asked) == len(set(asked))
    assert ("module", "_object_in_module", repr(("torch",))) in asked
    assert _found({model: text.replace("x = x + 1", "x = x + 2")}, warm) == \
        _found({model: text.replace("x = x + 1", "x = x + 2")}, None)


def test_a_question_to_the_oracle_asked_again_with_the_same_answer_is_checked_once(tmp_path: Path) -> None:
    """The oracle's answers change as a run goes on, but not while a kept analysis is checked (its
    questions are asked again all at once): a helper called five times with the same arguments is one
    question to check, not five (on the lsp bench's nadam, 43% of the per-call questions were repeats)."""
    model, _ = _project(tmp_path)
    calls = "".join(f"        y{n} = scaled(x) + threshold_of(self)\n" for n in range(5))
    text = MODEL.replace("    def forward(self, x, labels):\n", "    def forward(self, x, labels):\n" + calls)
    warm = WarmIndexes()
    assert _found({model: text}, warm) == _found({model: text}, None)
    reads = [read for kept in warm.analyses._last.values() for k in kept for read in k.reads
             if k.func.name == "forward" and k.func.cls is not None and k.func.cls.name == "Net"]
    per_call = [repr(args) for who, name, args, _ in reads if (who, name) == ("oracle", "call_return")]
    assert any("pkg.losses.scaled" in asked for asked in per_call)
    assert len(per_call) == len(set(per_call))
    edited = text.replace("x = x + 1", "x = x + 2")
    assert _found({model: edited}, warm) == _found({model: edited}, None)
