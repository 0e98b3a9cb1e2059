"""Acceptance for the optimizer fixes: `--fix --unsafe-fixes` on the ported optimizers of
tests/fixtures/optimizers yields classes that create all state up front, follow the original's parameter
trajectories, re-lint clean and round-trip their state_dict."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.conftest import run_linter

torch = pytest.importorskip("torch")

FIXTURES = Path(__file__).parent / "fixtures" / "optimizers"
# fixture -> (class name, constructor arguments exercising every branch that creates state)
CASES: dict[str, tuple[str, dict[str, Any]]] = {
    # dampening is 0: the clone-on-first-step buffer equals a zero buffer only then (the fix is unsafe)
    "sgd": ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.0, weight_decay=1e-2, nesterov=True)),
    "adam": ("Adam", dict(lr=1e-2, weight_decay=1e-2, amsgrad=True)),
    "adamw": ("AdamW", dict(lr=1e-2, weight_decay=1e-2)),
    "adagrad": ("Adagrad", dict(lr=5e-2, lr_decay=1e-2, weight_decay=1e-3, initial_accumulator_value=0.1)),
    "rmsprop": ("RMSprop", dict(lr=1e-2, momentum=0.9, centered=True, weight_decay=1e-3)),
    "lion": ("Lion", dict(lr=1e-3, weight_decay=1e-2)),
    "adafactor": ("Adafactor", dict(lr=1e-2, beta1=0.9, weight_decay=1e-3)),
}
STEPS = 20


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def fixed_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fixed")
    files = {f"{name}.py": (FIXTURES / f"{name}.py").read_text(encoding="utf-8") for name in CASES}
    result, texts = run_linter(root, files, fix=True, unsafe=True)
    assert not result.errors, result.errors
    for name, text in texts.items():
        (root / name).write_text(text, encoding="utf-8")
    return root


def _params(seed: int) -> list[Any]:
    gen = torch.Generator().manual_seed(seed)
    shapes = [(4, 3), (5,), (2, 3, 4)]
    return [torch.nn.Parameter(torch.randn(*s, generator=gen)) for s in shapes]


def _pair(name: str, fixed_dir: Path, seed: int = 0) -> tuple[Any, Any, list[Any], list[Any]]:
    cls_name, kwargs = CASES[name]
    original = getattr(_load(FIXTURES / f"{name}.py", f"orig_{name}"), cls_name)
    fixed = getattr(_load(fixed_dir / f"{name}.py", f"fixed_{name}"), cls_name)
    p_orig, p_fixed = _params(seed), _params(seed)
    return original(p_orig, **kwargs), fixed(p_fixed, **kwargs), p_orig, p_fixed


def _run(optimizer: Any, params: list[Any], seed: int, steps: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=gen)
        optimizer.step()


@pytest.mark.parametrize("name", CASES)
def test_fixed_source_changed_and_relints_clean(fixed_dir: Path, tmp_path: Path, name: str) -> None:
    text = (fixed_dir / f"{name}.py").read_text(encoding="utf-8")
    assert "def preinitialize(self):" in text and "self.preinitialize()" in text
    result, _ = run_linter(tmp_path, {f"{name}.py": text})
    assert not result.errors
    assert [(d.code, d.line, d.message) for d in result.diagnostics] == []


@pytest.mark.parametrize("name", CASES)
def test_every_state_entry_exists_before_the_first_step(fixed_dir: Path, name: str) -> None:
    original, fixed, p_orig, p_fixed = _pair(name, fixed_dir)
    assert all(len(fixed.state[p]) > 0 for p in p_fixed)
    _run(original, p_orig, seed=1, steps=1)
    for a, b in zip(p_orig, p_fixed):
        assert set(fixed.state[b]) == set(original.state[a])
        for key, value in original.state[a].items():
            created = fixed.state[b][key]
            assert isinstance(created, torch.Tensor)
            if isinstance(value, torch.Tensor):
                assert created.shape == value.shape and created.dtype == value.dtype, key
            else:  # a Python-number counter became a float32 tensor
                assert created.dtype == torch.float32 and created.dim() == 0, key


@pytest.mark.parametrize("tensor_lr", [False, True], ids=["float-lr", "tensor-lr"])
@pytest.mark.parametrize("name", CASES)
def test_trajectories_match_the_original(fixed_dir: Path, name: str, tensor_lr: bool) -> None:
    original, fixed, p_orig, p_fixed = _pair(name, fixed_dir, seed=3)
    if tensor_lr:  # what a Cerebras scheduler puts in param_groups: a 0-d tensor
        for opt in (original, fixed):
            for group in opt.param_groups:
                group["lr"] = torch.tensor(group["lr"])
    _run(original, p_orig, seed=4, steps=STEPS)
    _run(fixed, p_fixed, seed=4, steps=STEPS)
    for a, b, initial in zip(p_orig, p_fixed, _params(3)):
        assert not torch.equal(a, initial)  # the parameters did move
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)


def test_sgd_fix_is_unsafe_because_dampening_changes_the_first_step(fixed_dir: Path, tmp_path: Path) -> None:
    _, texts = run_linter(tmp_path, {"sgd.py": (FIXTURES / "sgd.py").read_text(encoding="utf-8")}, fix=True)
    assert "def preinitialize" not in texts["sgd.py"]  # safe fixes alone leave the cloned buffer alone
    original = _load(FIXTURES / "sgd.py", "orig_sgd_damped").SGD
    fixed = _load(fixed_dir / "sgd.py", "fixed_sgd_damped").SGD
    p_orig, p_fixed = _params(0), _params(0)
    _run(original(p_orig, momentum=0.9, dampening=0.5), p_orig, seed=1, steps=2)
    _run(fixed(p_fixed, momentum=0.9, dampening=0.5), p_fixed, seed=1, steps=2)
    assert not torch.allclose(p_orig[0], p_fixed[0], rtol=1e-5)


@pytest.mark.parametrize("name", CASES)
def test_state_dict_round_trip(fixed_dir: Path, name: str) -> None:
    _, fixed, _, params = _pair(name, fixed_dir)
    _run(fixed, params, seed=5, steps=3)
    restored_params = [torch.nn.Parameter(p.detach().clone()) for p in params]
    cls_name, kwargs = CASES[name]
    restored = type(fixed)(restored_params, **kwargs)
    restored.load_state_dict(copy.deepcopy(fixed.state_dict()))  # as a checkpoint would: no shared tensors
    for a, b in zip(params, restored_params):
        for key, value in fixed.state[a].items():
            torch.testing.assert_close(restored.state[b][key], value)
    _run(fixed, params, seed=6, steps=3)
    _run(restored, restored_params, seed=6, steps=3)
    for a, b in zip(params, restored_params):
        torch.testing.assert_close(b, a)


GRAD_VALUES_OPTIMIZER = """
import copy
import torch

class Averaged(torch.optim.Optimizer):
    def __init__(self, params, lr=0.1):
        super().__init__(params, dict(lr=lr))

    @torch.no_grad()
    def step(self):
        for group in self.param_groups:
            for p in group["params"]:
                grad = p.grad
                state = self.state[p]
                if len(state) == 0:
                    state["avg_grad"] = copy.deepcopy(grad)
                {flag}
                state["avg_grad"].mul_(0.9).add_(grad * 0.1)
                p.sub_(group["lr"] * state["avg_grad"])
"""


@pytest.mark.parametrize("flag", ["pass", "first = len(state) == 0"])
def test_no_preinitialize_fix_when_state_starts_from_gradient_values_or_a_flag_has_no_counter(tmp_path, flag):
    # state computed from the gradient's values has no gradient-free equivalent; a first-step flag needs a
    # counter created at 0 to be kept
    code = GRAD_VALUES_OPTIMIZER.replace("{flag}", flag)
    code = code.replace("copy.deepcopy(grad)", "grad.abs()" if flag == "pass" else "torch.zeros_like(p)")
    result, texts = run_linter(tmp_path, {"opt.py": code}, fix=True, unsafe=True)
    lazy = [d for d in result.diagnostics if d.code == "WSC301"]
    assert lazy and all(d.fix is None for d in lazy)
    assert "preinitialize" not in texts["opt.py"]


def test_a_deepcopy_of_the_gradient_is_a_clone(tmp_path):
    # like `grad.clone()`: a zero buffer (unsafe), never `copy.deepcopy(p)` (the parameter's values)
    code = GRAD_VALUES_OPTIMIZER.replace("{flag}", "pass")
    result, texts = run_linter(tmp_path, {"opt.py": code}, fix=True, unsafe=True)
    assert 'state["avg_grad"] = torch.zeros_like(p)' in texts["opt.py"]
    assert "deepcopy" not in texts["opt.py"].split("def step")[0]
    _, safe = run_linter(tmp_path / "safe", {"opt.py": code}, fix=True)
    assert "preinitialize" not in safe["opt.py"]  # only with --unsafe-fixes


def test_a_methods_state_aliases_are_worked_out_once_and_handed_out_as_copies(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules and the preinitialize fix ask for one method's aliases once per guard in it: the method
    is walked once, and a caller changing its answer does not change the next one."""
    import libcst as cst

    from cslint.fixers import preinitialize

    method = cst.parse_module("def step(self):\n    state = self.state[p]\n    s2 = self.state[q]\n").body[0]
    walks: list[object] = []
    plain = preinitialize._state_aliases
    monkeypatch.setattr(preinitialize, "_state_aliases", lambda m: walks.append(m) or plain(m))
    with preinitialize.aliases_remembered():
        first = preinitialize.state_aliases(method)  # type: ignore[arg-type]
        first.add("changed by a caller")
        assert preinitialize.state_aliases(method) == {"state", "s2"}  # type: ignore[arg-type]
    assert walks == [method]
    preinitialize.state_aliases(method)  # type: ignore[arg-type]
    assert walks == [method, method]  # remembered only while the rules of one function run
