"""Tracing guards judged per target, and logging under torch.compile.

`torch.compiler.is_compiling()` and its kin are true only under dynamo: under `--target compile` the code
they skip is dead while tracing; under lazy-tensor tracing (wsc, xla, rdu) they are false and the code
after them runs traced, which the finding says.
"""

from __future__ import annotations

import pytest

from tests.conftest import codes

LAZY = ("wsc", "xla", "rdu")

HELPERS = """
import torch


def is_torchdynamo_compiling():
    try:
        import torch
        return torch.compiler.is_compiling()
    except Exception:
        return False


def is_tracing(tensor=None):
    _is_tracing = is_torchdynamo_compiling() or torch.jit.is_tracing()
    return _is_tracing
"""

MODEL = """
import torch
from torch import nn

from utils import is_tracing, is_torchdynamo_compiling


def can_skip_mask(mask):
    if is_torchdynamo_compiling() or is_tracing(mask):
        return False
    return bool(mask.all())


class Attention(nn.Module):
    def forward(self, hidden, mask):
        if can_skip_mask(mask):
            mask = None
        if not torch.compiler.is_compiling():
            hidden = hidden * hidden.amax().item()
        scale = hidden.std().item() if torch.jit.is_scripting() else 1.0
        return hidden * scale
"""


@pytest.mark.parametrize("target", LAZY)
def test_guards_do_not_protect_lazy_tensor_tracing(lint, target):
    found = lint({"utils.py": HELPERS, "model.py": MODEL}, target=target)
    lines = [(d.code, d.line) for d in found if d.path.name == "model.py"]
    assert ("WSC203", 10) in lines and ("WSC201", 18) in lines, lines
    assert not [line for _, line in lines if line == 19], lines  # is_scripting() is false: `1.0` is taken
    guarded = next(d for d in found if d.line == 10)
    assert "is_torchdynamo_compiling() or is_tracing(mask)" in " ".join(guarded.notes)
    assert "is false under lazy tracing" in " ".join(guarded.notes)


def test_under_compile_the_guarded_code_is_dead(lint):
    found = lint({"utils.py": HELPERS, "model.py": MODEL}, target="compile")
    assert codes(found) == [], codes(found)


def test_without_a_guard_compile_reports(lint):
    code = MODEL.replace("if is_torchdynamo_compiling() or is_tracing(mask):", "if mask is None:")
    code = code.replace("if not torch.compiler.is_compiling():", "if hidden.dim() == 3:")
    found = codes(lint({"utils.py": HELPERS, "model.py": code}, target="compile"))
    assert ("WSC203", 10) in found and ("WSC201", 18) in found, found


@pytest.mark.parametrize("inline", [False, True])
def test_a_mask_the_guard_returns_on_is_none_after_it_under_compile(lint, inline):
    """transformers' `if exporting() or (mask is not None and is_tracing(mask)): return False` then
    `if mask is None or mask.all():` -- under dynamo the guard returns whenever there is a mask."""
    guard = "if is_torchdynamo_compiling() or is_tracing(mask):\n        return False\n    return bool(mask.all())"
    if inline:
        body = ("if not (torch.jit.is_tracing() or (mask is not None and is_tracing(mask))) and "
                "(mask is None or mask.all()):\n        return True\n    return False")
    else:
        body = ("if torch.jit.is_tracing() or (mask is not None and is_tracing(mask)):\n        return False\n"
                "    if mask is None or mask.all():\n        return True\n    return False")
    code = MODEL.replace(guard, body)
    assert body in code
    def branches(target: str) -> list[str]:
        return [d.source_line.strip() for d in lint({"utils.py": HELPERS, "model.py": code}, target=target)
                if d.code == "WSC101"]
    assert branches("compile") == []
    assert branches("wsc") == [body.split("\n")[0 if inline else 2].strip()]


def test_an_unknown_helper_decides_nothing(lint):
    code = MODEL.replace("if is_torchdynamo_compiling() or is_tracing(mask):", "if fast_path_enabled():")
    code += "\n\ndef fast_path_enabled():\n    return CONFIG.fast_path\n"
    found = codes(lint({"utils.py": HELPERS, "model.py": code}, target="compile"))
    assert ("WSC203", 10) in found, found  # not a tracing predicate: the code after it is traced


def test_guards_outside_traced_code_are_quiet(lint):
    code = """
    import torch

    def export_stats(values):
        if torch.compiler.is_compiling():
            return None
        return [v.item() for v in values]
    """
    for target in ("wsc", "compile"):
        assert codes(lint(code, target=target)) == []


LOGGING = """
import logging
import warnings
from torch import nn

logger = logging.getLogger(__name__)


class Block(nn.Module):
    def forward(self, hidden, past=None):
        if past is not None and past.dim() == 2:
            logger.warning_once("2D past is deprecated")
        if hidden.dim() > 3:
            warnings.warn("reshaping 4D input")
            print("reshaping")
        logger.info("shape %s", tuple(hidden.shape))
        return hidden * 2


def describe(model):
    logger.info("model %s", model)
    print("done")
"""


def test_every_log_breaks_the_compiled_graph(lint):
    found = codes(lint(LOGGING, target="compile"))
    assert found == [("WSC701", 11), ("WSC701", 13), ("WSC701", 14), ("WSC701", 15)], found


@pytest.mark.parametrize("target", LAZY)
def test_plain_messages_run_once_on_lazy_targets(lint, target):
    assert codes(lint(LOGGING, target=target)) == []


# A project's own `is_compiling()`: the predicate looked up behind a fallback so that old torch versions
# still import (kornia's core/utils.py has the `getattr(...) or getattr(...)` shape).
PROJECT_PREDICATES = {
    "getattr_or": """
import torch
_torch_is_compiling = getattr(torch.compiler, "is_compiling", None) or getattr(torch._dynamo, "is_compiling", None)


def is_compiling() -> bool:
    return bool(_torch_is_compiling()) if _torch_is_compiling is not None else False
""",
    "hasattr_choice": """
import torch
is_compiling = torch.compiler.is_compiling if hasattr(torch.compiler, "is_compiling") else lambda: False
""",
    "version_check": """
import torch
from packaging import version

if version.parse(torch.__version__) >= version.parse("2.3"):
    is_compiling = torch.compiler.is_compiling
else:
    is_compiling = torch._dynamo.is_compiling
""",
    "try_except": """
import torch


def is_compiling():
    try:
        return torch.compiler.is_compiling()
    except AttributeError:
        return torch._dynamo.is_compiling()
""",
}

GUARDED_BY_PROJECT_PREDICATE = """
import torch
from torch import nn

from utils import is_compiling


class Blur(nn.Module):
    def forward(self, x, sigma):
        if not is_compiling():
            if not bool((sigma > 0).all()):
                raise ValueError("sigma must be positive")
        return x * sigma
"""


@pytest.mark.parametrize("shape", sorted(PROJECT_PREDICATES))
def test_a_project_is_compiling_helper_is_a_guard(lint, shape):
    files = {"utils.py": PROJECT_PREDICATES[shape], "model.py": GUARDED_BY_PROJECT_PREDICATE}
    assert [d for d in lint(files, target="compile") if d.path.name == "model.py"] == []
    assert ("WSC203", 10) in codes(lint(files, target="wsc"))  # lazy tensors: false, the read runs traced


@pytest.mark.parametrize("utils", [
    # not predicates: a plain flag, fallbacks only, a getattr whose default is a real function
    "import torch\nis_compiling = lambda: False\n",
    "import torch\nimport os\nis_compiling = os.environ.get\n",
    "import torch\nis_compiling = getattr(torch.compiler, 'is_compiling', torch.is_grad_enabled)\n",
    "import torch\nis_compiling = torch.compiler.is_compiling if hasattr(torch, 'x') else torch.is_grad_enabled\n",
])
def test_a_name_that_is_not_only_a_predicate_is_no_guard(lint, utils):
    files = {"utils.py": utils, "model.py": GUARDED_BY_PROJECT_PREDICATE}
    assert ("WSC203", 10) in codes(lint(files, target="compile"))


def test_an_availability_check_picks_the_predicate_the_installed_torch_has(lint):
    # kornia's is_exporting: torch.compiler.is_exporting when it exists (false under torch.compile), else
    # is_compiling (true there): the installed torch has the first, so a compiled step takes the loop.
    utils = """
import torch
_torch_is_exporting = getattr(torch.compiler, "is_exporting", None)


def is_exporting() -> bool:
    if _torch_is_exporting is not None:
        return bool(_torch_is_exporting())
    return torch.compiler.is_compiling()
"""
    model = """
import torch
from torch import nn

from utils import is_exporting


class Edges(nn.Module):
    def forward(self, x):
        if is_exporting():
            return x
        while (x > 1).any():
            x = x / 2
        return x
"""
    assert ("WSC102", 11) in codes(lint({"utils.py": utils, "model.py": model}, target="compile"))
