"""What a run produced: its diagnostics, errors, fixes and what the baseline hid."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from cslint.core.report import Diagnostic

if TYPE_CHECKING:
    from cslint.core.baseline import BaselineOutcome
    from cslint.core.sources import SourceFile


@dataclass
class RunResult:
    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one line each; any makes the exit code 2
    fixed: int = 0
    fixed_codes: dict[Path, dict[str, int]] = field(default_factory=dict)  # per file, fixes applied per code
    changed_files: list[SourceFile] = field(default_factory=list)
    files_checked: int = 0
    baseline: BaselineOutcome | None = None  # what the baseline hid, when the run has one
    # the roots of the files checked that are checked for another target than the run's (target, function,
    # file; analysis/root_targets.py), in the order of the files
    other_roots: list[tuple[str, str, Path]] = field(default_factory=list)
