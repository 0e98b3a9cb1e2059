"""ruff's conventions for `cslint check`: `--fix-only`, `--show-fixes`, `--exit-non-zero-on-fix`,
`--fixable`/`--unfixable`/`--extend-fixable`, `-v`/`--verbose` and colour (the flags are declared in
cli.py, in one block; `--watch` is in watch.py, the fixability rule in fixability.py).

`--fix-only` as ruff: fixes are applied and written, the findings that remain are not reported, and the
exit code is 0 even when some remain (`--exit-non-zero-on-fix`: 1 when something was fixed). One
difference, for "a clean report must be true": a file cslint could not check (a syntax error, WSC001;
not analysed, WSC004; an internal error, WSC002) is still reported, with the exit code it has without
`--fix-only`, since nothing in it was fixed either.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cslint.core.config import ConfigError, Settings
from cslint.core.report import INTERNAL_ERROR, NOT_ANALYSED, SYNTAX_ERROR
from cslint.core.run_result import RunResult

if TYPE_CHECKING:
    from cslint.output import FormatOptions

UNCHECKED = (SYNTAX_ERROR, INTERNAL_ERROR, NOT_ANALYSED)
TEXT_FORMATS = ("text", "concise", "grouped")
# flags whose meaning --fix-only would drop (ruff lets --diff win silently; here it is a usage error)
FIX_ONLY_CONFLICTS = ("--diff", "--add-noqa", "--statistics", "--show-files", "--show-settings", "--verify")

log = logging.getLogger("cslint")


def check_convention_flags(args: argparse.Namespace) -> None:
    """Usage errors of these flags; then `--fix-only` implies `--fix`."""
    given = {"--diff": args.diff, "--add-noqa": args.add_noqa, "--statistics": args.statistics,
             "--show-files": args.show_files, "--show-settings": args.show_settings, "--verify": args.verify}
    if args.fix_only:
        for flag in FIX_ONLY_CONFLICTS:
            if given[flag]:
                raise ConfigError(f"--fix-only cannot be combined with {flag}")
        args.fix = True
    if args.exit_non_zero_on_fix and not args.fix:
        raise ConfigError("--exit-non-zero-on-fix needs --fix or --fix-only")
    from cslint.engine.selection import validate_codes

    for option in ("fixable", "unfixable", "extend_fixable"):
        validate_codes(tuple(getattr(args, option) or ()), f"--{option.replace('_', '-')}")


def fixability_overrides(args: argparse.Namespace, settings: Settings) -> dict[str, tuple[str, ...] | None]:
    """As ruff: `--fixable` and `--unfixable` replace the configuration's lists, `--extend-fixable` adds."""
    return {
        "fixable": tuple(args.fixable) if args.fixable else None,
        "unfixable": tuple(args.unfixable) if args.unfixable else None,
        "extend_fixable": settings.extend_fixable + tuple(args.extend_fixable) if args.extend_fixable else None,
    }


def fix_only_result(result: RunResult) -> RunResult:
    """What `--fix-only` reports: only the findings of files cslint could not check."""
    return RunResult(diagnostics=[d for d in result.diagnostics if d.code in UNCHECKED], errors=result.errors,
                     fixed=result.fixed, fixed_codes=result.fixed_codes, changed_files=result.changed_files,
                     files_checked=result.files_checked)


def fix_only_report(result: RunResult, output_format: str, options: FormatOptions) -> str:
    """ruff prints, for the text formats, the fixes (with --show-fixes) and `Fixed N findings.`, and
    nothing for the others; here the findings of files not checked are reported first, in full."""
    from cslint.output import FORMATS
    from cslint.output.text import fixes_shown

    if result.diagnostics:
        return FORMATS[output_format](result, options)
    if output_format not in TEXT_FORMATS or options.quiet:
        return ""
    lines = fixes_shown(result, options)
    if result.fixed:
        lines.append(f"Fixed {result.fixed} finding{'s' if result.fixed != 1 else ''}.")
    return "\n".join(lines) + "\n" if lines else ""


def fix_exit_code(args: argparse.Namespace, result: RunResult, reported: RunResult) -> int:
    """The exit code of a fix run without errors: 1 when findings are reported (not with --fix-only, where
    only unchecked files are) or, with --exit-non-zero-on-fix, when something was fixed; else 0."""
    if args.exit_zero:
        return 0
    if reported.diagnostics or (args.exit_non_zero_on_fix and result.fixed):
        return 1
    return 0


def show_fixes_wanted(args: argparse.Namespace, settings: Settings) -> bool:
    return bool(args.show_fixes if args.show_fixes is not None else settings.show_fixes)


# ---- -v / --verbose ---------------------------------------------------------------------------------

class _Format(logging.Formatter):
    """ruff's verbose lines: `[HH:MM:SS.micro][cslint.module][DEBUG] message`."""

    def format(self, record: logging.LogRecord) -> str:
        micro = int(record.created % 1 * 1_000_000)
        stamp = f"{time.strftime('%H:%M:%S', time.localtime(record.created))}.{micro:06d}"
        return f"[{stamp}][{record.name}][{record.levelname}] {record.getMessage()}"


class _StandardError(logging.Handler):
    """Writes to the sys.stderr of the moment (not the one of when it was made: a process may run
    several checks, each with its own)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except (OSError, ValueError):
            pass


def set_verbose(verbose: bool) -> None:
    """Verbose logging on or off for this run (a process may run several: --watch, the server)."""
    if not any(isinstance(h, _StandardError) for h in log.handlers):
        handler = _StandardError()
        handler.setFormatter(_Format())
        log.addHandler(handler)
        log.propagate = False
    log.setLevel(logging.DEBUG if verbose else logging.WARNING)


def log_settings(settings: Settings, first: Path) -> None:
    if not log.isEnabledFor(logging.DEBUG):
        return
    if settings.config_path is not None:
        log.debug("Using configuration file at: %s", settings.config_path)
    else:
        log.debug("No configuration file found for %s; using the defaults", first)
    log.debug("Target: %s (%s)", settings.target, settings.target_reason or "the default")


def log_files(files: list[Path], context: list[Path], cache_dir: Path | None) -> None:
    if not log.isEnabledFor(logging.DEBUG):
        return
    for path in files:
        log.debug("Checking: %s", path)
    log.debug("Analysed with the rest of the project: %d more files", len(context))
    log.debug("Cache: %s", cache_dir if cache_dir is not None else "off (--no-cache)")


def log_done(result: RunResult, started: float) -> None:
    if log.isEnabledFor(logging.DEBUG):
        log.debug("Checked %d files in %.3fs (%d findings, %d fixed)", result.files_checked,
                  time.perf_counter() - started, len(result.diagnostics), result.fixed)
