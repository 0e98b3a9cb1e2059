"""Whole-project lint results, computed once per process and looked up per file.

flake8 (and editors) hand a plugin one file at a time, but a traced chain can start in another file
(`train.py`'s module calls a helper in `ops.py`). So the first file of a project lints every Python file
under the project root (the nearest directory with pyproject.toml, setup.cfg or .git: see
`discovery.find_project_root`) and keeps the
diagnostics by resolved path; the other files of the same run are then a dictionary look-up. A file whose
text differs from what was linted (an unsaved editor buffer on stdin, or a file edited since) is linted
on its own text with the rest of the project as context.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from cslint.core import baseline
from cslint.core.config import Settings
from cslint.support.deep_stack import run_with_deep_stack
from cslint.engine.discovery import collect_files
from cslint.engine.runner import Diagnostic, Linter, RunResult
from cslint.engine.selection import enabled_codes, enabled_rules


@dataclass
class ProjectReport:
    root: Path
    settings: Settings
    files: list[Path] = field(default_factory=list)
    texts: dict[Path, str] = field(default_factory=dict)  # resolved path -> text the diagnostics are for
    diagnostics: dict[Path, list[Diagnostic]] = field(default_factory=dict)

    @classmethod
    def build(cls, root: Path, settings: Settings) -> ProjectReport:
        report = cls(root, settings)
        report.files = collect_files([root], settings)
        for path in report.files:
            try:
                report.texts[path.resolve()] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
        result = _run(settings, report.files, [])
        for d in result.diagnostics:
            report.diagnostics.setdefault(d.path.resolve(), []).append(d)
        return report

    def for_file(self, path: Path, text: str) -> list[Diagnostic]:
        resolved = path.resolve()
        if self.texts.get(resolved) == text:
            return self.diagnostics.get(resolved, [])
        if resolved.is_file() and _read(resolved) == text:
            result = _run(self.settings, [path], self.files)
        else:  # the text exists only in memory: lint a copy under the same name, beside nothing else
            with tempfile.TemporaryDirectory(prefix="cslint-") as directory:
                copy = Path(directory) / (path.name if path.suffix == ".py" else "stdin.py")
                copy.write_text(text, encoding="utf-8")
                result = _run(self.settings, [copy], [], apply_baseline=False)
            result.diagnostics = [replace(d, path=path) for d in result.diagnostics]
            baseline.apply(result, self.settings.baseline, [path], enabled_codes(self.settings))
        return result.diagnostics


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _run(settings: Settings, paths: list[Path], context: list[Path], apply_baseline: bool = True) -> RunResult:
    linter = Linter(settings, enabled_rules(settings))
    return run_with_deep_stack(lambda: linter.run(paths, context=context, apply_baseline=apply_baseline))


_REPORTS: dict[tuple[Path, str], ProjectReport] = {}


def project_report(root: Path, settings: Settings) -> ProjectReport:
    """The cached report for `root` linted with `settings` (built on first use in this process)."""
    key = (root.resolve(), repr(settings))
    if key not in _REPORTS:
        _REPORTS[key] = ProjectReport.build(root, settings)
    return _REPORTS[key]


def clear() -> None:
    _REPORTS.clear()
