"""Runs in the child process: load the target, run it on the CPU, then under the lazy backend, fake tensors
(when asked) and dynamo.

`python -m cslint.runtime.worker OPTIONS_JSON` writes the report as JSON to options["result_path"].
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

from cslint.runtime.compiled_steps import is_compiled_step
from cslint.runtime.findings import COMPLETE, RUNNING, RuntimeReport, stopped
from cslint.runtime.step_factory import OptimizerStep, Step, TargetError, build, load_factory

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


def _chain(exc: BaseException) -> list[BaseException]:
    """The exception and those it was raised from, outermost first."""
    chain = [exc]
    inner = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    while inner is not None and all(inner is not e for e in chain):
        chain.append(inner)
        inner = inner.__cause__ or (None if inner.__suppress_context__ else inner.__context__)
    return chain


def _stopped_by(exc: BaseException) -> str:
    """The first line of what stopped the backend, at the user's line nearest the failure: that of the
    innermost exception it was raised from, not the line of a wrapper that re-raised it."""
    from cslint.runtime.frames import raise_site

    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    reason = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    site = next((s for s in map(raise_site, reversed(_chain(exc))) if s is not None), None)
    return stopped(reason, *site) if site else stopped(reason)


def _said(exc: BaseException) -> str:
    message = str(exc).strip()
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _stop(report: RuntimeReport, backend: str, exc: BaseException) -> None:
    """The backend's status names the first line of what stopped it; its cause keeps the whole message, and
    the exceptions it was raised from (a library's wrapper often says less than what it wraps)."""
    first, *inner = _chain(exc)
    report.causes[backend] = "\n".join([_said(first), *(f"raised from {_said(e)}" for e in inner)])
    report.set_status(backend, _stopped_by(exc))


def execute(target: str, backends: tuple[str, ...] = BACKENDS, outputs: bool = False,
            progress: bool = False, changed: Callable[[RuntimeReport], None] | None = None,
            compiled_backends: tuple[str, ...] | None = None) -> RuntimeReport:
    """Run the target on the CPU, then under each backend; `changed` is called whenever the report grows.
    With `compiled_backends`, a torch.compile step (compiled_steps.py) runs under those instead."""
    report = RuntimeReport(target)
    report.changed = changed
    def say(text: str) -> None:
        if progress:
            print(f"cslint runtime: {text}", file=sys.stderr, flush=True)


    def fail(error: str) -> RuntimeReport:
        report.error = error
        for backend in backends:
            report.status.setdefault(backend, stopped("the target could not run"))
        return report

    say(f"importing {target}")
    try:
        factory = load_factory(target)
    except TargetError as exc:
        return fail(str(exc))
    except BaseException as exc:  # noqa: BLE001 - importing user code may raise anything
        return fail(f"importing the target raised:\n{_user_traceback(exc)}")
    import torch

    from cslint.runtime.loader import compare_loader_steps, report_new_shapes
    from cslint.runtime.stability import compare_steps

    def built(device: str) -> Step | OptimizerStep:
        say(f"building the step for the {device} device")
        torch.manual_seed(0)  # the same model and data on every backend and before/after a fix
        return build(factory, device)

    try:
        reference = built("cpu")
    except TargetError as exc:
        return fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - user code
        return fail(f"the factory `{target.rpartition(':')[2]}` raised:\n{_user_traceback(exc)}")
    try:
        say("running the step on the CPU (the reference run)")
        if isinstance(reference, OptimizerStep):
            from cslint.runtime.optimizer_check import check_optimizer

            report.set_status("optimizer", RUNNING)
            check_optimizer(reference, report)
            report.set_status("optimizer", COMPLETE)
            return report
        if compiled_backends is not None and is_compiled_step(reference.fn):
            backends = compiled_backends
            say(f"a torch.compile step: running it under {' and '.join(backends)} only")
        results = [reference.fn(*batch) for batch in reference.batches]
        report.steps = len(reference.batches)
        if outputs:
            report.outputs = [_plain(r) for r in results]
    except TargetError as exc:
        return fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - user code
        return fail(f"the step raised on the CPU:\n{_user_traceback(exc)}")

    if "lazy" in backends:
        from cslint.runtime.lazy_backend import init, run_lazy

        report.set_status("lazy", RUNNING)
        try:
            init()  # before the factory: moving a module to the lazy device needs the backend
            step = built("lazy")
            assert isinstance(step, Step)
            per_step = run_lazy(step, report, say)
            if step.loader is None:
                compare_steps(per_step, report)  # type: ignore[arg-type]
            else:
                compare_loader_steps(step.loader, step.batches, per_step, report)
            report.set_status("lazy", COMPLETE)
        except Exception as exc:  # noqa: BLE001 - ops the lazy backend lacks; the CPU run worked
            _stop(report, "lazy", exc)
    if "fake" in backends:
        from cslint.runtime.fake_backend import run_fake

        report.set_status("fake", RUNNING)
        say("building the step under fake tensors")
        try:
            fake_step, per_step = run_fake(factory, report, say)
            if fake_step.loader is None:
                compare_steps(per_step, report)  # type: ignore[arg-type]
            else:
                compare_loader_steps(fake_step.loader, fake_step.batches, per_step, report)
            report.set_status("fake", COMPLETE)
        except Exception as exc:  # noqa: BLE001 - an op fake tensors cannot run; the CPU run worked
            _stop(report, "fake", exc)
    if "dynamo" in backends:
        from cslint.runtime.dynamo_backend import run_dynamo

        report.set_status("dynamo", RUNNING)
        try:
            step = built("cpu")
            assert isinstance(step, Step)
            resized = run_dynamo(step, report, say)
            if step.loader is not None:
                report_new_shapes(step.loader, step.batches, resized, report, "dynamo")
            report.set_status("dynamo", COMPLETE)
        except Exception as exc:  # noqa: BLE001
            _stop(report, "dynamo", exc)
    return report


def _limit_memory(megabytes: int) -> None:
    if megabytes > 0:
        import resource

        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _saver(path: str) -> Callable[[RuntimeReport, bool], None]:
    def save(report: RuntimeReport, finished: bool) -> None:
        data = report.to_json()
        data["outputs"] = report.outputs
        data["finished"] = finished
        partial = path + ".partial"
        with open(partial, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(partial, path)  # the parent never reads a half-written report
    return save


def _die_with_parent() -> None:
    """The worker runs in its own session (cslint ends the step's processes with it as a group): when cslint
    is killed outright, the kernel ends the worker too, rather than leaving the step running (Linux only)."""
    try:
        import ctypes
        import signal

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # cslint was gone before the request took effect
        os._exit(1)


def main() -> int:
    _die_with_parent()
    options = json.loads(sys.argv[1])
    _limit_memory(int(options.get("memory_limit_mb", 0)))
    save = _saver(options["result_path"])
    report = execute(options["target"], tuple(options.get("backends", BACKENDS)), options.get("outputs", False),
                     options.get("progress", False), changed=lambda partial: save(partial, False),
                     compiled_backends=tuple(options["compiled_backends"]) if options.get("compiled_backends")
                     else None)
    save(report, True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
