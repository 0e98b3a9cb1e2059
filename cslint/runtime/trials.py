"""Which fixes pass `--verify`: the whole set first, then each file's fixes on their own, then each fix.

A trial is a set of fixes applied to the original text (by linting again with only their findings' fixes
chosen, so a fix is tried exactly as it would be written), run by the verification's targets and judged.
A trial that fails is split, and a single fix that fails is rejected with the trial's reasons. The trials
that pass are kept; several of them are run once more together, since two fixes verified apart may still
disagree (when they do, the largest trial is kept and the others are rejected with that run's reasons).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cslint.engine.fixed import FixedFinding, fixed_findings
from cslint.core.report import Diagnostic
from cslint.core.run_result import RunResult
from cslint.runtime.findings import RuntimeReport
from cslint.core.sources import SourceFile

FixChooser = Callable[[Callable[[Diagnostic], bool]], RunResult]  # lint again, applying the chosen fixes only
Runner = Callable[[dict[str, str], str], list[RuntimeReport]]  # (relative path -> text, what it is) -> reports
# (trial, its reports) -> (reasons against the whole trial, reasons against single fixes)
Judge = Callable[["Trial", list[RuntimeReport]], tuple[list[str], dict[FixedFinding, str]]]
Relative = Callable[[Path], str]


class TrialError(Exception):
    """The verification cannot go on (a file changed on disk while it ran)."""


@dataclass
class Trial:
    name: str  # what is tried, for progress and reasons: "all 3 fixes", "the fix of model.py:24 WSC101"
    fixes: list[FixedFinding]
    result: RunResult  # the lint run that applied them: what is written if they pass
    texts: dict[str, str]  # relative path -> fixed text; every other file as it is
    after: list[RuntimeReport] = field(default_factory=list)  # each target's report on the fixed text


@dataclass
class Outcome:
    kept: Trial | None  # the trial whose files are written
    rejected: dict[FixedFinding, str]  # each fix not written -> why (one line, then its whole cause)


def _name(fix: FixedFinding, relative: Relative) -> str:
    return f"{relative(fix.path)}:{fix.line} {fix.code}"


def _fixes(count: int) -> str:
    return f"{count} fix{'es' if count != 1 else ''}"


class Trials:
    def __init__(self, plain: RunResult, originals: dict[str, SourceFile], fix_only: FixChooser, unsafe: bool,
                 relative: Relative, run: Runner, judge: Judge, say: Callable[[str], None]) -> None:
        self.plain, self.originals, self.fix_only, self.unsafe = plain, originals, fix_only, unsafe
        self.relative, self.run, self.judge, self.say = relative, run, judge, say
        self.passed: list[Trial] = []
        self.rejected: dict[FixedFinding, str] = {}

    def make(self, fixes: list[FixedFinding], name: str, result: RunResult | None = None) -> Trial:
        """The trial of `fixes` (from `result`, a run that applied exactly them, else a new run); a fix that
        does not apply on its own (it waits for another fix of the same code) is rejected."""
        if result is None:
            keys = {(f.path, f.line, f.code) for f in fixes}
            result = self.fix_only(lambda d: (d.path, d.line, d.code) in keys)
        for source in result.changed_files:
            original = self.originals.get(self.relative(source.path))
            if original is None or original.original_text != source.original_text:
                raise TrialError(f"{self.relative(source.path)}: changed on disk during verification; "
                                 "not overwritten")
        applied = set(fixed_findings(self.plain.diagnostics, result.diagnostics, result.changed_files, self.unsafe))
        for fix in fixes:
            if fix not in applied:
                self.rejected[fix] = "this fix applies only after another one on the same code; write the " \
                                     "others first, then verify it on its own"
        return Trial(name, [f for f in fixes if f in applied], result,
                     {self.relative(s.path): s.text for s in result.changed_files})

    def _try(self, trial: Trial) -> tuple[list[str], dict[FixedFinding, str]]:
        trial.after = self.run(trial.texts, trial.name)
        return self.judge(trial, trial.after)

    def search(self, trial: Trial, by_file: bool = True) -> None:
        """Keep `trial` if it passes; else split it (by file, then by fix) and try the parts."""
        if not trial.fixes:
            return
        shared, single = self._try(trial)
        if not shared and not single:
            self.passed.append(trial)
            return
        if len(trial.fixes) == 1:
            self.rejected[trial.fixes[0]] = "; ".join(shared) or single[trial.fixes[0]]
            return
        files = sorted({self.relative(f.path) for f in trial.fixes})
        if by_file and len(files) > 1:
            self.say(f"{trial.name} did not pass together; trying each file's fixes on its own")
            for path in files:
                own = [f for f in trial.fixes if self.relative(f.path) == path]
                name = f"the fix of {_name(own[0], self.relative)}" if len(own) == 1 else \
                    f"the {_fixes(len(own))} of {path}"
                self.search(self.make(own, name), by_file=False)
            return
        self.say(f"{trial.name} did not pass together; trying each fix on its own")
        for fix in trial.fixes:
            self.search(self.make([fix], f"the fix of {_name(fix, self.relative)}"), by_file=False)

    def settle(self) -> Trial | None:
        """The trial whose files are written: the one that passed, or those that passed, together."""
        if len(self.passed) <= 1:
            return self.passed[0] if self.passed else None
        fixes = [f for trial in self.passed for f in trial.fixes]
        together = self.make(fixes, f"the {_fixes(len(fixes))} that passed, together")
        shared, single = self._try(together)
        if not shared and not single and len(together.fixes) == len(fixes):
            return together
        best = max(self.passed, key=lambda t: len(t.fixes))
        why = "; ".join(shared) or "; ".join(f"{_name(f, self.relative)}: {r}" for f, r in single.items()) \
            or "not every fix applied"
        for trial in self.passed:
            if trial is not best:
                for fix in trial.fixes:
                    self.rejected[fix] = f"passed on its own, but not with the fixes that are kept: {why}"
        return best


def verified(candidates: list[FixedFinding], whole: RunResult | None, trials: Trials) -> Outcome:
    """Search the candidates' trials; `whole`: the run that applied exactly all of them, if there is one."""
    if candidates:
        name = f"the fix of {_name(candidates[0], trials.relative)}" if len(candidates) == 1 else \
            "both fixes" if len(candidates) == 2 else f"all {_fixes(len(candidates))}"
        trials.search(trials.make(candidates, name, whole))
    return Outcome(trials.settle(), trials.rejected)
