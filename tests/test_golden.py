"""Golden fixer tests: every `tests/golden/**/NAME.in.py` fixed by cslint equals `NAME.out.py`.

`NAME.in.py` gets safe fixes only; `NAME.unsafe.in.py` gets unsafe fixes too; `NAME.compile.[unsafe.]in.py`
is fixed for `--target compile` (the others for the default target). Each pair also:
- re-parses, and a second `--fix` run changes nothing (idempotent);
- when torch is installed and the file defines `run(seed)`, the original and fixed modules return
  equal tensors for several seeds (the file's own `run` builds the model and random inputs).
"""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import libcst as cst
import pytest

from tests.conftest import run_linter

GOLDEN = Path(__file__).parent / "golden"
CASES = sorted(GOLDEN.rglob("*.in.py"))
SEEDS = (0, 1, 2, 3, 4)


def _out_path(case: Path) -> Path:
    return case.with_name(case.name.replace(".in.py", ".out.py"))


def target_of(case: Path) -> str | None:
    """The target a golden file is fixed for: `compile` when its name says so, else the default."""
    return "compile" if ".compile." in case.name else None


def _fix_text(tmp_path: Path, case: Path, text: str) -> str:
    unsafe = ".unsafe." in case.name
    _, texts = run_linter(tmp_path, {case.name.replace(".in.py", ".py"): text}, fix=True, unsafe=unsafe,
                          target=target_of(case))
    return next(iter(texts.values()))


@pytest.mark.parametrize("case", CASES, ids=[str(c.relative_to(GOLDEN)) for c in CASES])
def test_fix_matches_golden(tmp_path: Path, case: Path) -> None:
    fixed = _fix_text(tmp_path, case, case.read_text(encoding="utf-8"))
    assert fixed == _out_path(case).read_text(encoding="utf-8")
    cst.parse_module(fixed)
    again = _fix_text(tmp_path / "again", case, fixed)
    assert again == fixed, "a second --fix run changed the file"


@pytest.mark.parametrize("case", CASES, ids=[str(c.relative_to(GOLDEN)) for c in CASES])
def test_a_fix_leaves_no_finding_of_its_kind(tmp_path: Path, case: Path) -> None:
    """Per rule code, the fixed file has at most the findings the fixes did not address: a fix that moves
    the problem to a line it writes (`to_drop = torch.where(...)` then `if not to_drop:`) fails here."""
    unsafe = ".unsafe." in case.name
    before, _ = run_linter(tmp_path / "before", {"m.py": case.read_text(encoding="utf-8")}, target=target_of(case))
    after, _ = run_linter(tmp_path / "after", {"m.py": _out_path(case).read_text(encoding="utf-8")},
                          target=target_of(case))
    for code in {d.code for d in before.diagnostics}:
        fixed = sum(1 for d in before.diagnostics if d.code == code and d.fix is not None
                    and (unsafe or d.fix.applicability == "safe"))
        total = sum(1 for d in before.diagnostics if d.code == code)
        left = [d.line for d in after.diagnostics if d.code == code]
        assert len(left) <= total - fixed, f"{code}: {fixed} of {total} fixed, {len(left)} left at lines {left}"


def _load(path: Path, name: str):  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("case", CASES, ids=[str(c.relative_to(GOLDEN)) for c in CASES])
def test_fixed_code_computes_the_same(tmp_path: Path, case: Path) -> None:
    torch = pytest.importorskip("torch")
    if "def run(" not in case.read_text(encoding="utf-8"):
        pytest.skip("golden file defines no run(seed)")
    before = shutil.copy(case, tmp_path / "before_mod.py")
    after = shutil.copy(_out_path(case), tmp_path / "after_mod.py")
    original, fixed = _load(Path(before), f"golden_before_{case.stem}"), _load(Path(after), f"golden_after_{case.stem}")
    for seed in SEEDS:
        expected, actual = original.run(seed), fixed.run(seed)
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6, equal_nan=True)
