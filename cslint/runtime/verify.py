"""`cslint check --fix --verify`: write the fixes the runtime shows to work, and say why for each other one.

The user's files are never written while verifying: the project is copied to a temporary directory, and
each `runtime-targets` entry runs there in a child process, on the original text and then on fixed text. A
target runs on its target's backend (lazy tensors for wsc, xla and rdu; dynamo for compile), and a
torch.compile step under dynamo only (cslint/runtime/compiled_steps.py).

A set of fixes passes when, for every target, the run completed, no runtime finding is new and every output
is allclose, and each of its fixes was seen by the runtime at its line before fixing and is gone after. A
fix the runtime never saw is not verified and is not written. The whole set is tried first; when it does not
pass, each file's fixes on their own, and when a file's set does not pass, each of its fixes on its own
(trials.py). The fixes of the sets that passed are written: as verified, or, when they come from several
sets, after a run of them together. Every other fix is reported on one line with its reason, and the whole
cause of a run that stopped under it. Nothing here imports torch; outputs come back as nested lists.
"""

from __future__ import annotations

import math
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cslint.core.config import Settings
from cslint.engine.fixed import FixedFinding, fixed_findings, original_lines
from cslint.core.run_result import RunResult
from cslint.runtime.api import INSTALL_HINT, check, torch_available
from cslint.runtime.compare import block_ends
from cslint.runtime.failures import cause_lines, error_lines, indented
from cslint.runtime.findings import RuntimeFinding, RuntimeReport
from cslint.runtime.step_factory import TargetError, split_target
from cslint.runtime.trials import FixChooser, Trial, TrialError, Trials, verified
from cslint.support.scratch import scratch_directory
from cslint.core.sources import SourceFile, content_hash, safe_resolve
from cslint.core.targets import get_target

NOT_COPIED = (".git", ".hg", ".svn", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache",
              ".ruff_cache", ".pytest_cache", ".cslint_cache", "node_modules", "*.egg-info")
COMPILED_BACKENDS = ("dynamo",)  # a torch.compile step is a compile root, whatever the project's target
Say = Callable[[str], None]


@dataclass
class Verdict:
    """`result`: the run whose changed files are to be written (all the fixes or the verified ones), None
    to write nothing; `notes`: what was kept and, one line each, why each other fix was not."""

    result: RunResult | None
    notes: list[str] = field(default_factory=list)


def usage_error(settings: Settings) -> str | None:
    """Why `--verify` cannot run in this project at all (a usage error), or None."""
    if not settings.runtime_targets:
        where = settings.config_path or "pyproject.toml"
        return f"--verify needs `runtime-targets` in [tool.cslint] ({where}): the steps that run the fixed code"
    if not torch_available():
        return f"--verify: {INSTALL_HINT}"
    return None


def backends_for(settings: Settings) -> tuple[str, ...]:
    """The backend of the project's target: the one that traces its steps as its compiler does."""
    return (get_target(settings.target).tracer,)


def incomplete(report: RuntimeReport) -> str | None:
    """Why a runtime run did not complete on every backend it ran (so it proves nothing), or None: one
    line, then (indented) the whole cause of each stop and the whole error."""
    if report.error:
        return f"it failed: {report.error.strip().splitlines()[-1]}" + indented(error_lines(report))
    if report.complete:
        return None
    if not report.status:
        return "no backend ran"
    return "; ".join(f"{backend} {status}" for backend, status in sorted(report.incomplete().items())) + \
        "".join(indented(cause_lines(report, backend)) for backend in sorted(report.incomplete()))


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


RECOMPILES = ("WSC702", "WSC703", "WSC704")  # dynamo's guard failures on a later step


def _problem(found: tuple[str, RuntimeFinding]) -> tuple[str, str]:
    """What a finding counts as when the runs before and after a fix are compared: a recompile is one
    wherever dynamo reports it (a fix that removes a graph break inlines the model's frame into the step's,
    and the guard on the model's Python state is then reported in the step's file)."""
    path, finding = found
    return ("", "recompile") if finding.code in RECOMPILES else (path, finding.code)


def new_problems(before: list[tuple[str, RuntimeFinding]], after: list[tuple[str, RuntimeFinding]]) -> str:
    """The problems of `after` that `before` had not, in words ("" for none); findings are (path, finding)."""
    new = Counter(map(_problem, after)) - Counter(map(_problem, before))
    return ", ".join(f"{code} in {path}" if path else f"a {code}" for path, code in sorted(new))


class _Lab:
    """The project's copy, where the targets run on the original text with some files replaced."""

    def __init__(self, settings: Settings, root: Path, scratch: Path, sources: dict[str, SourceFile],
                 tolerance: float, timeout: float, say: Say, progress: bool) -> None:
        self.root, self.sources, self.tolerance, self.timeout = root, sources, tolerance, timeout
        self.say, self.progress = say, progress
        self.copy = _copy_project(root, scratch)
        self.targets = [(t, _target_in(t, root, self.copy)) for t in settings.runtime_targets]
        self.backends = backends_for(settings)
        self.before: list[RuntimeReport] = []
        self.blocks: dict[Path, dict[int, int]] = {}

    def where(self) -> str:
        """Where the targets run, in words."""
        names = " and ".join(self.backends)
        if self.backends == COMPILED_BACKENDS:
            return f"the {names} backend"
        return f"the {names} backend (a torch.compile step: the {' and '.join(COMPILED_BACKENDS)} backend)"

    def run(self, texts: dict[str, str], what: str) -> list[RuntimeReport]:
        """Each target's report with the files of `texts` (relative path -> text) fixed, the others original."""
        for relative, source in self.sources.items():
            _write(self.copy / relative, source, texts.get(relative, source.original_text or ""))
        reports = []
        with _importing_from(self.copy):
            for name, there in self.targets:
                self.say(f"running {name} on {what}")
                reports.append(check(there, self.backends, outputs=True, timeout=self.timeout, cwd=str(self.copy),
                                     progress=self.progress, compiled_backends=COMPILED_BACKENDS))
        return reports

    def text(self, message: str, texts: dict[str, str] | None = None) -> str:
        """A message about the copy, naming the project's files by their paths in the project and, in a
        file the run had fixed (`texts`), the line of the original text (the one the user has)."""
        def place(match: re.Match[str]) -> str:
            path, line = match[1], int(match[2])
            fixed = (texts or {}).get(path)
            if fixed is None or path not in self.sources:
                return f"{path}:{line}"
            lines = original_lines(self.sources[path].original_text or "", fixed)(line)
            if len(lines) == 1:
                return f"{path}:{lines[0]}"
            return f"{path}:{lines.start} (in the fixed code)" if lines else f"{path}:{line} (of the fixed code)"

        located = re.sub(re.escape(str(self.copy) + os.sep) + r"([^\s:()]+):(\d+)", place, message)
        return located.replace(str(self.copy) + os.sep, "")

    def findings(self, report: RuntimeReport) -> list[tuple[str, RuntimeFinding]]:
        return [(_relative(f.path, self.copy), f) for f in report.findings]

    def strays(self, reports: list[RuntimeReport], when: str) -> list[str]:
        reasons = []
        for (name, _), report in zip(self.targets, reports):
            outside = sorted({f.path for f in report.findings if _inside(f.path, self.root)
                              and not _inside(f.path, self.copy)})
            if outside:
                reasons.append(f"{name}: the run {when} used the project's own files ({outside[0]}), not the "
                               "temporary copy under verification (is the project installed in this environment?)")
        return reasons

    def lines(self, fix: FixedFinding) -> range:
        """The lines of the original text where the runtime reports the fix's problem: its own, and the
        block it heads (the static WSC301 is at `if len(state) == 0:`, the runtime's at the assignment in it)."""
        ends = self.blocks.setdefault(fix.path, block_ends(self.sources[self.relative(fix.path)].original_text or ""))
        return range(fix.line, max(fix.end_line, ends.get(fix.line, 0)) + 1)

    def relative(self, path: Path | str) -> str:
        return _relative(path, self.root)

    def seen_before(self, fix: FixedFinding) -> bool:
        path, lines = self.relative(fix.path), self.lines(fix)
        return any(p == path and f.code == fix.code and f.line in lines
                   for report in self.before for p, f in self.findings(report))

    def judge(self, trial: Trial, after: list[RuntimeReport]) -> tuple[list[str], dict[FixedFinding, str]]:
        """Why the trial's fixes cannot all be kept: reasons of the whole run, and reasons of single fixes."""
        shared = []
        for (name, _), report in zip(self.targets, after):
            why = incomplete(report)
            if why is not None:
                shared.append(self.text(f"{name}: the runtime run after fixing did not complete: {why}", trial.texts))
        shared += self.strays(after, "after fixing")
        if shared:
            return shared, {}
        for (name, _), before, report in zip(self.targets, self.before, after):
            new = new_problems(self.findings(before), self.findings(report))
            if new:
                shared.append(f"{name}: the fixed code has runtime finding(s) the original had not: {new}")
            why = outputs_differ(before.outputs, report.outputs, self.tolerance)
            if why is not None:
                shared.append(f"{name}: {why}")
        single = {}
        for fix in trial.fixes:
            path, lines = self.relative(fix.path), self.lines(fix)
            text = trial.texts.get(path)
            mapped = original_lines(self.sources[path].original_text or "", text) if text is not None else None
            still = [f for report in after for p, f in self.findings(report)
                     if p == path and f.code == fix.code and mapped is not None
                     and any(line in lines for line in mapped(f.line))]
            if still:
                single[fix] = f"the runtime still finds it after fixing (line {still[0].line})"
        return shared, single

    def summary(self, after: list[RuntimeReport]) -> str:
        return "; ".join(f"{name}: runtime findings {len(before.findings)} -> {len(report.findings)}, outputs "
                         f"allclose ({', '.join(report.status) or 'no backend'})"
                         for (name, _), before, report in zip(self.targets, self.before, after))


def verify_fixes(settings: Settings, plain: RunResult, fixed: RunResult, fix_only: FixChooser,
                 tolerance: float = 1e-5, timeout: float = 300.0, say: Say | None = None,
                 progress: bool = False) -> Verdict:
    """Which of the fixes of `fixed` (the fix run of the files `plain` linted) to write. `fix_only(choice)`
    lints again, applying only the fixes of the findings `choice` picks; `say` reports progress, and with
    `progress` the runs' own progress lines go to stderr too."""
    if not fixed.changed_files:
        return Verdict(fixed)
    problem = usage_error(settings)
    if problem is not None:
        return Verdict(None, [problem])
    root = safe_resolve(settings.project_root or Path.cwd())
    outside = [s.path for s in fixed.changed_files if not _inside(s.path, root)]
    if outside:
        return Verdict(None, [f"{outside[0]}: outside the project ({root}), so it cannot be verified there"])
    say = say or (lambda text: None)
    fixes = fixed_findings(plain.diagnostics, fixed.diagnostics, fixed.changed_files, settings.unsafe_fixes)
    sources = {_relative(s.path, root): s for s in fixed.changed_files}
    if not fixes:  # text changed, no finding removed: no run can tell whether that worked
        return Verdict(None, [f"--verify: no fix written: the fixes of {', '.join(sorted(sources))} remove no "
                              "finding, so there is nothing to verify"])
    with scratch_directory("cslint-verify-") as scratch:
        try:
            lab = _Lab(settings, root, Path(scratch), sources, tolerance, timeout, say, progress)
        except (OSError, shutil.Error, TargetError) as exc:
            return Verdict(None, [f"--verify: no fix written: cannot prepare the verification: {exc}"])
        say(f"verifying {len(fixes)} fix{'es' if len(fixes) != 1 else ''} in a copy of the project: "
            f"{len(lab.targets)} target{'s' if len(lab.targets) != 1 else ''} on {lab.where()}")
        lab.before = lab.run({}, "the original code")
        reasons = [lab.text(f"{name}: the runtime run before fixing did not complete: {why}")
                   for (name, _), report in zip(lab.targets, lab.before) if (why := incomplete(report)) is not None]
        reasons += lab.strays(lab.before, "before fixing")
        if reasons:
            return Verdict(None, [f"--verify: no fix written: {reason}" for reason in reasons])
        unseen = {fix: "the runtime never saw this finding before fixing (no target reaches this line, or it is "
                       "not a runtime problem); the fix is unverified" for fix in fixes if not lab.seen_before(fix)}
        trials = Trials(plain, sources, fix_only, settings.unsafe_fixes, lambda path: _relative(path, root),
                        lab.run, lab.judge, say)
        trials.rejected.update(unseen)
        try:
            outcome = verified([f for f in fixes if f not in unseen], None if unseen else fixed, trials)
        except TrialError as exc:
            return Verdict(None, [f"--verify: no fix written: {exc}"])
    notes = [f"--verify: not written: {_relative(fix.path, root)}:{fix.line} {fix.code}: {reason}"
             for fix, reason in sorted(outcome.rejected.items(), key=lambda item: (str(item[0].path), item[0].line))]
    kept = outcome.kept
    if kept is not None:
        moved = [s for s in kept.result.changed_files if not _unchanged_on_disk(s)]
        if moved:
            return Verdict(None, notes + [f"--verify: no fix written: {_relative(s.path, root)}: changed on disk "
                                          "during verification; not overwritten" for s in moved])
    if kept is None:
        return Verdict(None, notes + ["--verify: no fix written"])
    if not outcome.rejected:
        return Verdict(kept.result, [f"--verify: {lab.summary(kept.after)}; fixes kept"])
    notes += [f"--verify: kept: {_relative(fix.path, root)}:{fix.line} {fix.code}" for fix in kept.fixes]
    return Verdict(kept.result, notes + [f"--verify: {lab.summary(kept.after)}; {len(kept.fixes)} of "
                                         f"{len(fixes)} fixes kept"])
