"""`cslint baseline` (write the baseline from a run) and `cslint check --prune-baseline`."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

from cslint.core import baseline
from cslint.core.config import ConfigError, Settings
from cslint.core.report import INTERNAL_ERROR
from cslint.core.run_result import RunResult

REFUSED_WHEN_WRITING = ("fix", "diff", "add_noqa", "statistics", "show_chain", "verify", "prune_baseline",
                        "output_file", "output_format", "show_files", "show_settings")


def check_flags(args: argparse.Namespace, settings: Settings) -> None:
    """Usage errors of the baseline options, before anything is linted."""
    if (getattr(args, "write_baseline", False) or args.prune_baseline) and args.baseline is None:
        _inside_project(settings)
    if getattr(args, "write_baseline", False):
        for name in REFUSED_WHEN_WRITING:
            if getattr(args, name, None) not in (None, False):
                raise ConfigError(f"`cslint baseline` writes the baseline; it takes no --{name.replace('_', '-')}")
        if args.stdin_name is not None:
            raise ConfigError("`cslint baseline` cannot read standard input")
        if settings.baseline is None:
            raise ConfigError("`cslint baseline` needs a file to write: give --baseline FILE, or set "
                              "`baseline = \"cslint-baseline.json\"` in [tool.cslint]")
        return
    if args.prune_baseline:
        if settings.baseline is None:
            raise ConfigError("--prune-baseline needs a baseline (--baseline FILE, or `baseline` in [tool.cslint])")
        if args.diff:
            raise ConfigError("--prune-baseline cannot be combined with --diff (which writes nothing)")
    if settings.baseline is not None:
        baseline.load(settings.baseline)  # unreadable: the one-line error now, before the analysis


def write_baseline(result: RunResult, settings: Settings, files: list[Path], codes: list[str],
                   destination: Path) -> int:
    """Record the run's findings in the baseline at `destination`: the entries of the files checked (for
    the rules that ran) are replaced, those of other files kept, those of files that are gone dropped.
    Nothing is written when the run had errors: a baseline must list every finding of the files it
    covers. The exit code."""
    from cslint.output.escape import escape_text

    failed = result.errors or any(d.code == INTERNAL_ERROR for d in result.diagnostics)
    if failed:
        for error in result.errors:
            print(f"cslint: error: {escape_text(error)}", file=sys.stderr)
        for d in result.diagnostics:
            if d.code == INTERNAL_ERROR:
                print(f"cslint: error: {escape_text(f'{d.path}:{d.line}: {d.message}')}", file=sys.stderr)
        print(f"cslint: error: baseline {destination} not written: the run had errors", file=sys.stderr)
        return 2
    old = baseline.load(destination) if os.path.lexists(destination) else baseline.Baseline(destination)
    kept = baseline.without_files(old, files, codes)
    for key in [key for key in kept.counts if not kept.exists(key[0])]:
        del kept.counts[key]
    new = baseline.entries_of(result.diagnostics, kept)
    baseline.write(new)
    recorded = sum(1 for d in result.diagnostics if d.code not in baseline.NEVER_BASELINED)
    total, files_with = sum(new.counts.values()), len({key[0] for key in new.counts})
    print(f"Wrote {destination}: {total} finding{'s' if total != 1 else ''} in {files_with} "
          f"file{'s' if files_with != 1 else ''} ({recorded} from this run).", file=sys.stderr)
    unlisted = len(result.diagnostics) - recorded
    if unlisted:
        print(f"cslint: warning: {unlisted} finding{'s' if unlisted != 1 else ''} that say a file was not "
              "analysed (WSC001, WSC004) cannot be baselined and will still be reported", file=sys.stderr)
    return 0


def prune_baseline(result: RunResult) -> None:
    """Rewrite the baseline without the entries no finding of this run used."""
    if result.baseline is None:
        return
    new, removed = baseline.pruned(result.baseline)
    if removed:
        baseline.write(new)
    print(f"Pruned {removed} stale entr{'ies' if removed != 1 else 'y'} from {new.path}.", file=sys.stderr)
    result.baseline = dataclasses.replace(result.baseline, baseline=new)


def _inside_project(settings: Settings) -> None:
    """A baseline named by the configuration (which the repository ships) is written only inside the
    directory of that configuration: `baseline = "../../.bashrc"` must not make `cslint baseline`
    overwrite a file of the user's. The command line's `--baseline` goes where the user says."""
    if settings.baseline is None or settings.config_path is None:
        return
    root = os.path.realpath(settings.config_path.parent)
    parent = os.path.realpath(settings.baseline.parent)
    if parent != root and not parent.startswith(root.rstrip(os.sep) + os.sep):
        raise ConfigError(f"`baseline` in {settings.config_path} is outside its project ({settings.baseline}): "
                          "cslint writes a configured baseline only under the configuration's directory "
                          "(give --baseline FILE to write elsewhere)")


def summary_for_data_formats(result: RunResult, output_format: str, quiet: bool) -> None:
    """The baseline's summary line on standard error for the formats whose report has no summary (json,
    sarif, github, ...), so a CI log still says what was hidden and what is stale."""
    from cslint.output.text import SUMMARY_FORMATS

    if result.baseline is not None and not quiet and output_format not in SUMMARY_FORMATS:
        print(f"cslint: {baseline.summary(result.baseline)}", file=sys.stderr)
