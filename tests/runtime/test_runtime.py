"""Runtime checker acceptance: findings at the right line and family, optimizer state, stability, isolation."""

from __future__ import annotations

import linecache
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from cslint.runtime import RuntimeReport, check  # noqa: E402
from cslint.runtime.cli import main as runtime_main  # noqa: E402

TARGETS = Path(__file__).parent / "targets"
FAMILIES = TARGETS / "families.py"
OPTIMIZERS = TARGETS / "optimizers.py"


def expected_line(path: Path, code: str) -> int:
    """The line marked `# runtime: CODE` in a target file."""
    for number, text in enumerate(path.read_text().splitlines(), start=1):
        if re.search(rf"# runtime: {code}\b", text):
            return number
    raise AssertionError(f"no `# runtime: {code}` marker in {path}")


def run(target: str, path: Path = FAMILIES, backends: tuple[str, ...] = ("lazy", "dynamo")) -> RuntimeReport:
    report = check(f"{path}:{target}", backends, isolate=False)
    assert not report.error, report.error
    return report


@pytest.mark.parametrize("factory, code", [
    ("control_flow", "WSC101"),
    ("host_transfer", "WSC201"),
    ("scalar_argument", "WSC401"),
    ("dynamic_shape", "WSC502"),
    ("wide_dtype", "WSC601"),
    ("python_counter", "WSC703"),
])
def test_each_family_lands_on_its_line(factory: str, code: str) -> None:
    report = run(factory)
    line = expected_line(FAMILIES, code)
    assert (code, str(FAMILIES), line) in {(f.code, f.path, f.line) for f in report.findings}, report.findings
    assert {f.code[:4] for f in report.findings} == {code[:4]}, report.findings  # nothing from other families


def test_lazy_backend_alone_finds_the_tensor_branch() -> None:
    report = run("control_flow", backends=("lazy",))
    assert [(f.code, f.line, f.backend) for f in report.findings] == \
        [("WSC101", expected_line(FAMILIES, "WSC101"), "lazy")]


def test_dynamo_counts_graph_breaks_with_reasons() -> None:
    report = run("control_flow", backends=("dynamo",))
    assert report.graph_breaks == 1
    assert "data-dependent branching" in report.findings[0].message.lower()


def test_static_look_alikes_give_nothing() -> None:
    assert run("look_alikes").findings == []


def test_factory_without_device_argument_is_moved_by_the_checker() -> None:
    report = run("no_device_argument", backends=("lazy",))
    assert [f.code for f in report.findings] == ["WSC101"]


def test_python_counter_is_unstable_and_tensor_buffer_is_stable() -> None:
    unstable = run("python_counter")
    messages = " ".join(f.message for f in unstable.findings)
    assert "changes between step 1 and step 2" in messages and "0.1 -> 0.2" in messages
    assert any(f.code == "WSC702" and f.line == expected_line(FAMILIES, "WSC703") - 2 for f in unstable.findings)
    assert run("tensor_counter").findings == []


@pytest.mark.parametrize("factory, keys", [
    ("adam", {"step", "exp_avg", "exp_avg_sq"}),
    ("sgd_momentum", {"momentum_buffer"}),
])
def test_stock_optimizers_report_lazy_state_where_it_is_created(factory: str, keys: set[str]) -> None:
    report = run(factory, OPTIMIZERS)
    assert {f.code for f in report.findings} == {"WSC301"}
    found = set()
    for finding in report.findings:
        key = re.search(r"state `(\w+)`", finding.message)[1]  # type: ignore[index]
        found.add(key)
        assert Path(finding.path).parent.name == "optim"  # torch/optim/adam.py, torch/optim/sgd.py
        assert f'"{key}"' in linecache.getline(finding.path, finding.line)  # the line assigning state[key]
    assert found == keys


def test_complete_preinitialize_passes() -> None:
    assert run("preinit_sgd", OPTIMIZERS).findings == []


def test_incomplete_preinitialize_and_python_counter_in_state() -> None:
    partial = run("half_preinit_adam", OPTIMIZERS)
    assert [(f.code, f.line) for f in partial.findings] == [("WSC301", expected_line(OPTIMIZERS, "WSC301"))]
    assert "preinitialize()` does not create state `exp_avg_sq`" in partial.findings[0].message
    counting = run("counting_sgd", OPTIMIZERS)
    assert [(f.code, f.line) for f in counting.findings] == [("WSC303", expected_line(OPTIMIZERS, "WSC303"))]


@pytest.fixture
def in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run CLI-driven checks in this process: the child process costs seconds of torch import per run."""
    def check_here(target: str, backends: tuple[str, ...] = ("lazy", "dynamo"), **kwargs: object) -> RuntimeReport:
        return check(target, backends, outputs=bool(kwargs.get("outputs")), isolate=False)
    monkeypatch.setattr("cslint.runtime.cli.check", check_here)
    monkeypatch.setattr("cslint.runtime.verify.check", check_here)


# ---- isolation: a child process, a timeout, user exceptions with their traceback -------------------

def test_subprocess_run_reports_like_in_process() -> None:
    report = check(f"{FAMILIES}:host_transfer", ("lazy",))
    assert [(f.code, f.line) for f in report.findings] == [("WSC201", expected_line(FAMILIES, "WSC201"))]


def test_user_exception_is_reported_with_its_traceback() -> None:
    report = check(f"{TARGETS / 'broken.py'}:raises", ("lazy",), isolate=False)
    assert "the step raised" in report.error and "broken.py" in report.error and "x.reshape(3, 7)" in report.error
    assert "RuntimeError" in report.error and "cslint/runtime" not in report.error


def test_timeout_is_an_error_not_a_hang() -> None:
    report = check(f"{TARGETS / 'broken.py'}:hangs", ("lazy",), timeout=4)
    assert "timeout" in report.error


def test_bad_targets_are_errors(in_process: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert "must return" in check(f"{TARGETS / 'broken.py'}:wrong_return", isolate=False).error
    assert "no such file" in check("nowhere/model.py:make", isolate=False).error
    assert runtime_main(["not-a-target"]) == 2


def test_cli_exit_codes_and_output(in_process: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert runtime_main([f"{FAMILIES}:control_flow", "--backend", "lazy"]) == 1
    out = capsys.readouterr().out
    assert f"families.py:{expected_line(FAMILIES, 'WSC101')}: WSC101 [lazy]" in out
    assert runtime_main([f"{FAMILIES}:look_alikes", "--backend", "lazy"]) == 0


def test_compare_static_is_a_table_per_line(in_process: None, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FAMILIES.parent)
    runtime_main([f"{FAMILIES}:control_flow", "--backend", "lazy", "--compare-static"])
    out = capsys.readouterr().out
    assert "static vs runtime, per line:" in out
    # the branch both passes see; `.item()` in another model of the same file, which this target never runs
    assert re.search(rf"\n  families.py:{expected_line(FAMILIES, 'WSC101')} +WSC101 +WSC101 \[lazy\] +both\n", out), out
    assert re.search(rf"\n  families.py:{expected_line(FAMILIES, 'WSC201')} +WSC201 +- +static only \(not seen at "
                     r"runtime\)\n", out), out
    assert re.search(r"\n  1 both, \d+ static only, 0 runtime only\n", out), out


def test_a_factory_error_is_the_factorys_with_the_users_traceback() -> None:
    report = check(f"{TARGETS / 'broken.py'}:factory_raises", ("lazy",), isolate=False)
    assert report.error.startswith("the factory `factory_raises` raised:"), report.error
    assert "broken.py" in report.error and "_load_config" in report.error
    assert "ValueError: no such config" in report.error
    assert "the step raised" not in report.error and "cslint/runtime" not in report.error


def test_without_torch_runtime_says_how_to_install(monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr("cslint.runtime.cli.torch_available", lambda: False)
    assert runtime_main([f"{FAMILIES}:control_flow"]) == 2
    err = capsys.readouterr().err
    assert "pip install -e '.[runtime]'" in err and "git+https://github.com/cslint/cslint" in err
    assert "pip install 'cslint[runtime]'" not in err  # no package index serves cslint yet


def test_importing_the_cli_does_not_import_torch() -> None:
    code = "import sys, cslint.cli.main, cslint.runtime, cslint.runtime.cli, cslint.runtime.verify; " \
           "print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_dynamo_check_of_a_cpu_optimizer_step_skips_dynamos_gpu_and_debug_log_work() -> None:
    """Tracing `opt.step()`, dynamo imports inductor's CUDA-graph machinery to ask about each state tensor, and
    tokenizes every traced file for a debug log that is off: neither is needed for a CPU step's findings."""
    code = """if True:
        import sys, torch, torch._dynamo.symbolic_convert as sc, torch._dynamo.variables.optimizer as ov
        from torch._dynamo.funcname_cache import cache as tokenized
        from cslint.runtime.dynamo_backend import run_dynamo
        from cslint.runtime.findings import RuntimeReport
        from cslint.runtime.step_factory import Step
        originals = (ov._is_static_for_cudagraphs, sc.get_funcname)
        model = torch.nn.Linear(4, 2)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        def step(x):
            if x.sum() > 0:
                x = x * 2
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss.detach()
        report = RuntimeReport("step")
        run_dynamo(Step(step, [(torch.ones(3, 4),), (torch.ones(3, 4),)]), report)
        print(sorted(f.code for f in report.findings))
        print("torch._inductor.cudagraph_trees" in sys.modules, len(tokenized))
        print((ov._is_static_for_cudagraphs, sc.get_funcname) == originals)
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out[0] == "['WSC101']", out  # the tensor `if`: still found
    assert out[1] == "False 0", out  # nothing imported for CUDA graphs, no file tokenized
    assert out[2] == "True", out  # dynamo's own functions are back


def test_a_distributions_validation_is_reported_where_it_is_made_and_where_it_tests_a_value() -> None:
    """Both checks run inside torch.distributions; the lazy backend names them WSC108 at the user's lines, as
    the static rule does, and the same step with validation off has nothing."""
    path = TARGETS / "distributions.py"
    made = expected_line(path, "WSC108")

    def isolated(target: str, backends: tuple[str, ...]) -> RuntimeReport:
        # in a child process, as `cslint runtime` runs: dynamo's first use in a process turns validation off
        # for every distribution after it (torch 2.13, eval_frame.py), which an earlier test may have done here
        report = check(f"{path}:{target}", backends)
        assert not report.error, report.error
        return report

    report = isolated("validating", ("lazy", "dynamo"))
    assert {(f.code, f.line, f.backend) for f in report.findings} == \
        {("WSC108", made, "lazy"), ("WSC108", made + 1, "lazy")}, report.findings
    assert isolated("unvalidated", ("lazy",)).findings == []
