"""cslint on the installed torch's own SGD and Adam: their lazy state and their scalar-argument uses
(`param.add_(grad, alpha=-lr)`, reached through `func = _single_tensor_sgd; func(...)`) are found.
Lines are pinned for torch 2.13.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cslint.core.config import Settings
from cslint.engine.runner import Linter
from cslint.engine.selection import enabled_rules

torch = pytest.importorskip("torch")

EXPECTED = {
    # step(): state["momentum_buffer"] = ... created on the first step; alpha=-lr in both functional paths,
    # where `isinstance(lr, Tensor)` holds (its `else:` at 379 runs only for a Python lr)
    "sgd.py": [("WSC302", 150), ("WSC401", 377), ("WSC401", 472), ("WSC401", 476)],
    # _init_group(): if len(state) == 0: state["step"] = ...; addcdiv_(..., value=-step_size)
    "adam.py": [("WSC301", 162), ("WSC401", 546)],
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
    assert all("state" in source[line - 1] for code, line in EXPECTED[name] if code.startswith("WSC3"))
    assert all("=-" in source[line - 1] for code, line in EXPECTED[name] if code == "WSC401")
