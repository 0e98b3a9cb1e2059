"""Runs in the child process: load the target, run it on the CPU, the lazy backend and dynamo.

`python -m cslint.runtime.worker OPTIONS_JSON` writes the report as JSON to options["result_path"].
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from typing import Any

from cslint.runtime.findings import RuntimeReport
from cslint.runtime.targets import OptimizerStep, Step, TargetError, build, load_factory

BACKENDS = ("lazy", "dynamo")


def _user_traceback(exc: BaseException) -> str:
    """The traceback without this checker's own frames."""
    here = os.path.dirname(os.path.abspath(__file__))
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if not os.path.abspath(f.filename).startswith(here)]
    return "".join(traceback.format_list(frames)) + "".join(traceback.format_exception_only(type(exc), exc))


def _plain(value: Any) -> Any:
    """Outputs as JSON-able nested lists, for comparing before/after a fix without torch in the parent."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().to("cpu", torch.float64 if value.is_floating_point() else value.dtype).tolist()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return repr(value)


def execute(target: str, backends: tuple[str, ...] = BACKENDS, outputs: bool = False,
            progress: bool = False) -> RuntimeReport:
    import torch

    from cslint.runtime.stability import compare_steps

    report = RuntimeReport(target)
    say = (lambda text: print(f"cslint runtime: {text}", file=sys.stderr, flush=True)) if progress else None
    try:
        factory = load_factory(target)
    except TargetError as exc:
        report.error = str(exc)
        return report
    except BaseException as exc:  # noqa: BLE001 - importing user code may raise anything
        report.error = f"importing the target raised:\n{_user_traceback(exc)}"
        return report

    def built(device: str) -> Step | OptimizerStep:
        torch.manual_seed(0)  # the same model and data on every backend and before/after a fix
        return build(factory, device)

    try:
        reference = built("cpu")
        if isinstance(reference, OptimizerStep):
            from cslint.runtime.optimizer_check import check_optimizer

            check_optimizer(reference, report)
            return report
        results = [reference.fn(*batch) for batch in reference.batches]
        report.steps = len(reference.batches)
        if outputs:
            report.outputs = [_plain(r) for r in results]
    except TargetError as exc:
        report.error = str(exc)
        return report
    except Exception as exc:  # noqa: BLE001 - user code
        report.error = f"the step raised on the CPU:\n{_user_traceback(exc)}"
        return report

    if "lazy" in backends:
        from cslint.runtime.lazy_backend import init, run_lazy

        try:
            init()  # before the factory: moving a module to the lazy device needs the backend
            step = built("lazy")
            assert isinstance(step, Step)
            compare_steps(run_lazy(step, report, say), report)  # type: ignore[arg-type]
        except Exception as exc:  # noqa: BLE001 - ops the lazy backend lacks; the CPU run worked
            report.notes.append(f"lazy backend could not run this step ({type(exc).__name__}: "
                                f"{str(exc).splitlines()[0] if str(exc) else ''}); dynamo results only")
    if "dynamo" in backends:
        from cslint.runtime.dynamo_backend import run_dynamo

        try:
            step = built("cpu")
            assert isinstance(step, Step)
            run_dynamo(step, report, say)
        except Exception as exc:  # noqa: BLE001
            report.notes.append(f"dynamo could not run this step ({type(exc).__name__}: {exc})")
    return report


def main() -> int:
    options = json.loads(sys.argv[1])
    report = execute(options["target"], tuple(options.get("backends", BACKENDS)), options.get("outputs", False),
                     options.get("progress", False))
    data = report.to_json()
    data["outputs"] = report.outputs
    with open(options["result_path"], "w", encoding="utf-8") as handle:
        json.dump(data, handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
