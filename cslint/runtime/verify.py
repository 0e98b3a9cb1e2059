"""`cslint check --fix --verify`: keep the fixes only when the runtime shows they work, all or none.

The user's files are never written while verifying: the project is copied to a temporary directory, and
each `runtime-targets` entry runs there (in a child process, lazy backend and dynamo) on the original text
and then on the fixed text. The fixes are kept, all of them, only when for every target both runs
completed on both backends, every fixed finding was seen by the runtime at its line before and is gone
after, no runtime finding is new and every output is allclose. Otherwise none is kept, and each reason is
one line naming the fix or target. Nothing here imports torch; outputs come back as nested lists.
"""

from __future__ import annotations

import math
import os
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cslint.config import Settings
from cslint.fixed import FixedFinding, original_lines
from cslint.runtime.api import INSTALL_HINT, check, torch_available
from cslint.runtime.findings import RuntimeFinding, RuntimeReport
from cslint.runtime.targets import TargetError, split_target
from cslint.scratch import scratch_directory
from cslint.sources import SourceFile, content_hash, safe_resolve

VERIFY_BACKENDS = ("lazy", "dynamo")
NOT_COPIED = (".git", ".hg", ".svn", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache",
              ".ruff_cache", ".pytest_cache", ".cslint_cache", "node_modules", "*.egg-info")


@dataclass
class Verdict:
    kept: bool
    notes: list[str] = field(default_factory=list)


def usage_error(settings: Settings) -> str | None:
    """Why `--verify` cannot run in this project at all (a usage error), or None."""
    if not settings.runtime_targets:
        where = settings.config_path or "pyproject.toml"
        return f"--verify needs `runtime-targets` in [tool.cslint] ({where}): the steps that run the fixed code"
    if not torch_available():
        return f"--verify: {INSTALL_HINT}"
    return None


def incomplete(report: RuntimeReport) -> str | None:
    """Why a runtime run did not complete on every backend it ran (so it proves nothing), or None."""
    if report.error:
        return f"it failed: {report.error.strip().splitlines()[-1]}"
    if report.complete:
        return None
    if not report.status:
        return "no backend ran"
    return "; ".join(f"{backend} {status}" for backend, status in sorted(report.incomplete().items()))


def _flatten(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [x for k in sorted(value) for x in _flatten(value[k])]
    if isinstance(value, list):
        return [x for v in value for x in _flatten(v)]
    return [value]


def outputs_differ(before: list[Any], after: list[Any], tolerance: float) -> str | None:
    """Why two output structures are not allclose (rtol = atol = tolerance), or None."""
    a, b = _flatten(before), _flatten(after)
    if len(a) != len(b):
        return f"the outputs have a different structure ({len(a)} values before, {len(b)} after)"
    worst = 0.0
    for x, y in zip(a, b):
        if isinstance(x, (int, float)) and isinstance(y, (int, float)):
            if math.isnan(x) and math.isnan(y):
                continue
            if not abs(x - y) <= tolerance + tolerance * abs(y):
                worst = max(worst, abs(x - y))
        elif x != y:
            return f"an output changed ({x!r} -> {y!r})"
    return f"the outputs changed (largest difference {worst:.3g}, tolerance {tolerance:g})" if worst else None


def _relative(path: Path | str, root: Path) -> str:
    try:
        return str(safe_resolve(Path(path)).relative_to(root))
    except ValueError:
        return str(path)


@dataclass
class _Run:
    """One target's runs before and after, its findings keyed by path relative to the project."""

    target: str
    before: RuntimeReport
    after: RuntimeReport

    def findings(self, report: RuntimeReport, copy: Path) -> list[tuple[str, RuntimeFinding]]:
        return [(_relative(f.path, copy), f) for f in report.findings]


def _judge(runs: list[_Run], fixed: list[FixedFinding], changed: dict[str, SourceFile], root: Path, copy: Path,
           tolerance: float) -> list[str]:
    """Every reason not to keep the fixes, one line each (none: keep them)."""
    reasons = []
    for run in runs:
        for when, report in (("before fixing", run.before), ("after fixing", run.after)):
            why = incomplete(report)
            if why is not None:
                reasons.append(f"{run.target}: the runtime run {when} did not complete: {why}")
            strays = sorted({f.path for f in report.findings if _inside(f.path, root) and not _inside(f.path, copy)})
            if strays:
                reasons.append(f"{run.target}: the run {when} used the project's own files ({strays[0]}), not the "
                               "temporary copy under verification (is the project installed in this environment?)")
    if reasons:
        return reasons
    for run in runs:
        before = run.findings(run.before, copy)
        after = run.findings(run.after, copy)
        new = Counter((p, f.code) for p, f in after) - Counter((p, f.code) for p, f in before)
        if new:
            found = ", ".join(f"{code} in {path}" for path, code in sorted(new))
            reasons.append(f"{run.target}: the fixed code has runtime finding(s) the original had not: {found}")
        why = outputs_differ(run.before.outputs, run.after.outputs, tolerance)
        if why is not None:
            reasons.append(f"{run.target}: {why}")
    for fix in fixed:
        path = _relative(fix.path, root)
        name = f"{path}:{fix.line} {fix.code}"
        lines = range(fix.line, fix.end_line + 1)
        seen = any(p == path and f.code == fix.code and f.line in lines
                   for run in runs for p, f in run.findings(run.before, copy))
        if not seen:
            reasons.append(f"{name}: the runtime never saw this finding before fixing (no target reaches "
                           "this line, or it is not a runtime problem); the fix is unverified")
            continue
        mapped = original_lines(changed[path].original_text or "", changed[path].text) if path in changed else None
        still = [f for run in runs for p, f in run.findings(run.after, copy)
                 if p == path and f.code == fix.code and mapped is not None
                 and any(line in lines for line in mapped(f.line))]
        if still:
            reasons.append(f"{name}: the runtime still finds it after fixing (line {still[0].line})")
    return reasons


def _inside(path: str | Path, directory: Path) -> bool:
    try:
        safe_resolve(Path(path)).relative_to(directory)
        return True
    except ValueError:
        return False


def _unchanged_on_disk(source: SourceFile) -> bool:
    """The file still holds the bytes it was read from (its modification time may have been kept)."""
    try:
        data = source.path.read_bytes()
    except OSError:
        return False
    if source.digest:
        return content_hash(data) == source.digest
    return data == _encoded(source, source.original_text or "")


def _copy_project(root: Path, into: Path) -> Path:
    copy = safe_resolve(into) / (root.name or "project")
    shutil.copytree(root, copy, symlinks=True, ignore=shutil.ignore_patterns(*NOT_COPIED))
    return copy


def _encoded(source: SourceFile, text: str) -> bytes:
    """The file's bytes for `text` (a notebook's code cells go back into its JSON)."""
    if source.notebook is not None:
        text = source.notebook.with_python(text)
    return (b"\xef\xbb\xbf" if source.bom else b"") + text.encode(source.encoding)


def _write(path: Path, source: SourceFile, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_encoded(source, text))


def _target_in(target: str, root: Path, copy: Path) -> str:
    """The target as it names the copy: a file in the project becomes the same file in the copy."""
    location, factory = split_target(target)
    if not (location.endswith(".py") or "/" in location or os.sep in location):
        return target  # a module: found in the copy, which is the working directory and first on the path
    path = Path(location)
    if not path.is_absolute():
        return f"{copy / path}:{factory}"
    if _inside(path, root):
        return f"{copy / safe_resolve(path).relative_to(root)}:{factory}"
    return target


@contextmanager
def _importing_from(copy: Path) -> Iterator[None]:
    """The target's child process imports the project's modules from the copy, also in a src/ layout
    and when the project is installed in editable mode (PYTHONPATH comes before site-packages)."""
    saved = os.environ.get("PYTHONPATH")
    entries = [str(copy)] + ([str(copy / "src")] if (copy / "src").is_dir() else [])
    os.environ["PYTHONPATH"] = os.pathsep.join(entries + ([saved] if saved else []))
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = saved


def verify_fixes(settings: Settings, changed: list[SourceFile], fixed: list[FixedFinding],
                 tolerance: float = 1e-5, timeout: float = 300.0) -> Verdict:
    """Whether to write the `changed` files (all of them or none), with one line per reason."""
    if not changed:
        return Verdict(True)
    problem = usage_error(settings)
    if problem is not None:
        return Verdict(False, [problem])
    root = safe_resolve(settings.project_root or Path.cwd())
    outside = [s.path for s in changed if not _inside(s.path, root)]
    if outside:
        return Verdict(False, [f"{outside[0]}: outside the project ({root}), so it cannot be verified there"])
    with scratch_directory("cslint-verify-") as scratch:
        try:
            copy = _copy_project(root, Path(scratch))
            targets = [(t, _target_in(t, root, copy)) for t in settings.runtime_targets]
        except (OSError, shutil.Error, TargetError) as exc:
            return Verdict(False, [f"cannot prepare the verification: {exc}"])
        by_path = {_relative(s.path, root): s for s in changed}

        def run_all(text_of: Callable[[SourceFile], str]) -> list[RuntimeReport]:
            for relative, source in by_path.items():
                _write(copy / relative, source, text_of(source))
            with _importing_from(copy):
                return [check(there, VERIFY_BACKENDS, outputs=True, timeout=timeout, cwd=str(copy))
                        for _, there in targets]

        before = run_all(lambda s: s.original_text or "")
        after = run_all(lambda s: s.text)
        runs = [_Run(name, b, a) for (name, _), b, a in zip(targets, before, after)]
        reasons = _judge(runs, fixed, by_path, root, copy, tolerance)
    reasons += [f"{_relative(s.path, root)}: changed on disk during verification; not overwritten"
                for s in changed if not _unchanged_on_disk(s)]
    if reasons:
        return Verdict(False, [f"--verify: no fix written: {reason}" for reason in reasons])
    return Verdict(True, [f"--verify: {run.target}: runtime findings {len(run.before.findings)} -> "
                          f"{len(run.after.findings)}, outputs allclose on both backends; fixes kept"
                          for run in runs])
