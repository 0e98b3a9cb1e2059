"""cslint on the installed torch's own SGD and Adam: their lazy state is found (pinned for torch 2.13).

Their scalar-argument uses (`param.add_(grad, alpha=-lr)` in `_single_tensor_sgd`) are reached only
through `func = _single_tensor_sgd; func(...)`, a call through a variable the call graph does not follow
yet; when it does, this pin will change and should gain the WSC401 lines.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cslint.config import Settings
from cslint.runner import Linter
from cslint.selection import enabled_rules

torch = pytest.importorskip("torch")

EXPECTED = {
    "sgd.py": [("WSC302", 150)],  # step(): state["momentum_buffer"] = momentum_buffer, created on first step
    "adam.py": [("WSC301", 162)],  # _init_group(): if len(state) == 0: state["step"] = ...
}


@pytest.mark.skipif(not torch.__version__.startswith("2.13."), reason="lines pinned for torch 2.13")
@pytest.mark.parametrize("name", EXPECTED)
def test_torch_optimizer_findings_are_pinned(name: str) -> None:
    path = Path(torch.__file__).parent / "optim" / name
    settings = Settings(project_root=path.parent).with_overrides(select=("WSC3", "WSC4"))
    result = Linter(settings, enabled_rules(settings)).run([path])
    assert not result.errors
    assert [(d.code, d.line) for d in result.diagnostics] == EXPECTED[name]
    source = path.read_text(encoding="utf-8").splitlines()
    assert all("state" in source[line - 1] for _, line in EXPECTED[name])
