"""bench/heldout.py's held-out sets are consistent: every step a set names is a factory of its factories text
taking the device, mapped to a package whose directory the set's scopes hold (the coverage run and the runtime
sites count only files under those scopes, so a step outside them would measure nothing)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"


def _heldout():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("heldout_sets_under_test", BENCH / "heldout.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_every_step_of_every_set_is_a_factory_of_a_scoped_package() -> None:
    heldout = _heldout()
    assert sorted(heldout.SETS) == [1, 2, 3, 4, 5]
    for number, held_out in heldout.SETS.items():
        factories = {node.name: node for node in ast.parse(held_out.factories).body
                     if isinstance(node, ast.FunctionDef)}
        assert held_out.targets, number
        assert len(set(held_out.targets)) == len(held_out.targets), number
        assert set(held_out.package_of) == set(held_out.targets), number
        for name in held_out.targets:
            assert name in factories, (number, name)
            assert [a.arg for a in factories[name].args.args] == ["device"], (number, name)
            assert held_out.package_of[name] in held_out.scopes, (number, name)


def test_set_5_is_pinned_and_shares_the_training_step() -> None:
    heldout = _heldout()
    five = heldout.SETS[5]
    assert all("==" in package for package in five.packages)
    assert five.factories.startswith(heldout.TRAIN_STEP)
    assert "def _train_step(" not in five.factories[len(heldout.TRAIN_STEP):]
    earlier = {package.split("==")[0] for number in (1, 2, 3, 4) for package in heldout.SETS[number].packages}
    assert not earlier & {package.split("==")[0] for package in five.packages}


def test_every_user_step_of_sets_3_to_5_is_its_set_step_traced_for_its_target() -> None:
    heldout = _heldout()
    assert sorted(heldout.USER_STEPS_OF_SET) == [3, 4, 5]
    for number, steps in heldout.USER_STEPS_OF_SET.items():
        assert set(steps) == set(heldout.SETS[number].targets), number
        for name, text in steps.items():
            wsc, compiled = heldout.user_file(text, "wsc"), heldout.user_file(text, "compile")
            assert "\n@cstorch.trace\ndef train_step(" in wsc and "\n@torch.compile\ndef train_step(" in compiled, name
            assert "TARGET_IMPORT" not in wsc + compiled and "@TRACED" not in wsc + compiled, name
            compile(wsc, name, "exec")
            compile(compiled, name, "exec")
