"""`cslint check`, `cslint rule`, `cslint runtime`: the command line.

Exit codes: 0 no findings, 1 findings remain, 2 usage, configuration or internal error (130 interrupted,
141 the output's reader went away).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from cslint import __version__
from cslint.cli.check_options import check_flags, paths_without_python, show_files, show_settings, unmatched_trace_roots
from cslint.core.config import OUTPUT_FORMATS, ConfigError, Settings, load_settings
from cslint.cli.conventions import fixability_overrides
from cslint.support.progress import Progress
from cslint.core.run_result import RunResult
from cslint.core.targets import TARGETS

if TYPE_CHECKING:
    from cslint.engine.check import Analyse, CheckOutcome, CheckRequest, Discovery, Lint
    from cslint.runtime_logs.match import LogReport

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a program killed by it, and as 130 is 128 + SIGINT


class _Parser(argparse.ArgumentParser):
    commands: dict[str, argparse.ArgumentParser] = {}  # the subcommands' parsers, by name (set on the top one)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"cslint: error: {message} (see `{self.prog} --help`)\n")

    def parse_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def,override]
        """Unknown arguments are reported by the command they were given to, so its --help is named."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            command = self.commands.get(getattr(parsed, "command", None) or "")
            (command or self).error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed


def _jobs(value: str) -> int:
    try:
        jobs = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {value!r}") from None
    if jobs < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return jobs


def _size(value: str) -> int:
    from cslint.core.config import parse_size

    try:
        return parse_size(value, "--max-file-size")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _budget(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {value!r}")
    return int(value)


def _codes(value: str) -> list[str]:
    return [c.strip().upper() for c in value.split(",") if c.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="cslint", description="Make PyTorch code run on static-graph accelerators.")
    parser.add_argument("--version", action="version", version=f"cslint {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    parser.commands = sub.choices

    check = sub.add_parser("check", help="find (and fix) code a static-graph trace rejects")
    check.add_argument("paths", nargs="*", type=Path,
                       help="files or directories (default: .); `-` reads one file from standard input")
    check.add_argument("--stdin-filename", type=Path, metavar="PATH",
                       help="the path standard input stands for: its project, settings and report name "
                            "(with --fix, the fixed text goes to standard output)")
    check.add_argument("--fix", action="store_true", help="apply safe fixes")
    check.add_argument("--unsafe-fixes", action="store_true", default=None,
                       help="also apply (and show as fixable) unsafe fixes")
    check.add_argument("--diff", action="store_true", help="print the fixes as a diff (to -o FILE if given), and "
                       "a summary on stderr; write nothing; exit 1 when something would change")
    check.add_argument("--select", type=_codes, help="rule codes or prefixes to enable (comma-separated)")
    check.add_argument("--extend-select", type=_codes, help="codes or prefixes to enable on top of select")
    check.add_argument("--ignore", type=_codes, help="codes or prefixes to disable")
    check.add_argument("--target", choices=list(TARGETS),
                       help="accelerator whose rules, messages and fixes to use (default: `target` in the "
                            "configuration, else inferred from what the project imports; docs/targets.md)")
    check.add_argument("--python", metavar="PYTHON",
                       help="the Python interpreter whose installed libraries to read the functions traced code "
                            "calls from (default: the one cslint runs in; `none`: do not read libraries)")
    check.add_argument("--trace-roots", action="append", metavar="PATTERN",
                       help="glob over qualified names (pkg.mod.Class.method) of extra traced roots")
    check.add_argument("--include-uncertain", action="store_true",
                       help="also report findings that rest on an assumption: in a library with no step of its "
                            "own, its public functions are taken to be called by a user's step")
    check.add_argument("--output-format", choices=OUTPUT_FORMATS,
                       help="how findings are reported (default: `output-format` in the configuration, else text)")
    check.add_argument("-o", "--output-file", type=Path, help="write the report to this file, not stdout")
    check.add_argument("--add-noqa", action="store_true",
                       help="append `# noqa: CODE` to every line with a finding (to adopt cslint gradually)")
    scope = check.add_mutually_exclusive_group()
    scope.add_argument("--isolated", action="store_true",
                       help="analyse only the files named, not the rest of their project: a helper traced "
                            "only from a file not named then goes unchecked")
    scope.add_argument("--project-context", action="store_true",
                       help="the default, kept for older hook configurations: the files named are analysed "
                            "with the rest of their project (the nearest directory above them with "
                            "pyproject.toml, setup.cfg or .git) and only they are reported")
    check.add_argument("--statistics", action="store_true", help="count findings per rule (text or json)")
    check.add_argument("--force-exclude", action="store_true",
                       help="apply exclude/extend-exclude to files named on the command line too (for pre-commit)")
    check.add_argument("--show-files", action="store_true", help="list the files that would be checked, and exit")
    check.add_argument("--show-settings", action="store_true",
                       help="print the settings that apply (configuration file, options, rules), and exit")
    check.add_argument("--show-chain", action="store_true", help="show why each finding's code is traced")
    check.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    check.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    check.add_argument("--max-file-size", type=_size, metavar="SIZE",
                       help="files larger than this are reported (WSC004), not analysed (default 5MB)")
    check.add_argument("--max-file-tokens", type=_budget, metavar="TOKENS",
                       help="files of more tokens than this are reported (WSC004), not analysed (default 500000)")
    check.add_argument("--analysis-budget", type=_budget, metavar="UNITS",
                       help="parsing work a file may cost before it is reported (WSC004), not analysed "
                            "(default 200000; docs/configuration.md)")
    check.add_argument("--config", type=Path, help="read settings from this file instead of pyproject.toml")
    check.add_argument("--verify", action="store_true", help="with --fix: run `runtime-targets` from a temporary "
                       "copy of the project and write the fixes whose runtime findings go away with the runs "
                       "complete and the outputs allclose (all, else each file's, else each fix); says why for "
                       "the others (needs torch)")
    check.add_argument("--verify-tolerance", type=float, help="rtol and atol for --verify (default 1e-5)")
    check.add_argument("--runtime-log", type=Path, nargs="+", action="extend", metavar="LOG",
                       help="runtime logs (TORCH_LOGS output, a TORCH_TRACE directory, a torch_xla or lazy metrics "
                            "report, `cslint runtime --output-format json`): each event next to the static finding "
                            "at its line; with --fix, fix only what a log confirmed (docs/runtime.md)")
    check.add_argument("--no-cache", action="store_true", default=bool(os.environ.get("CSLINT_NO_CACHE")),
                       help="neither read nor write .cslint_cache/ (also CSLINT_NO_CACHE=1)")
    check.add_argument("--cache-dir", type=Path, help="where the cache lives (default: .cslint_cache/ next to "
                       "pyproject.toml, else in the current directory; also CSLINT_CACHE_DIR)")
    check.add_argument("-j", "--jobs", type=_jobs, default=None,
                       help="worker processes for independent parts of the tree (default: the number of cores)")
    check.add_argument("--profile", action="store_true", help="print where the time went (phases, rules)")
    check.add_argument("--progress", action="store_true",
                       help="print a line of progress every few seconds on stderr, for CI logs (on a terminal, "
                            "a run over a second shows one line of progress unless -q)")
    check.add_argument("--server", action="store_true",
                       help="run in a background server that has cslint loaded already (starts one if none "
                            "is up; not under CI or CSLINT_NO_SERVER; see `cslint server`)")
    check.add_argument("--baseline", type=Path, metavar="FILE",
                       help="do not report the findings this baseline file lists (default: `baseline` in the "
                            "configuration; write it with `cslint baseline`; docs/configuration.md)")
    check.add_argument("--prune-baseline", action="store_true",
                       help="rewrite the baseline without its entries that no longer match a finding")
    sub.add_parser("baseline", add_help=False,
                   help="write the baseline: the findings of the paths checked (takes check's paths and options)")

    # ruff's conventions (docs/configuration.md); their logic: conventions.py, watch.py, fixability.py
    check.add_argument("-w", "--watch", action="store_true",
                       help="run again whenever a checked file or the configuration changes (Ctrl-C stops)")
    check.add_argument("--fix-only", action="store_true",
                       help="apply safe fixes and do not report the findings that remain (implies --fix); "
                            "exit 0 unless --exit-non-zero-on-fix")
    check.add_argument("--show-fixes", action="store_true", default=None,
                       help="list the fixes applied, per file and rule (also `show-fixes = true`)")
    check.add_argument("--exit-non-zero-on-fix", action="store_true",
                       help="with --fix or --fix-only: exit 1 when a fix was applied, even if no finding remains")
    check.add_argument("--fixable", type=_codes, help="rule codes or prefixes whose fixes are offered and "
                       "applied (default: ALL; replaces `fixable` in the configuration)")
    check.add_argument("--unfixable", type=_codes, help="rule codes or prefixes whose fixes are never offered "
                       "or applied (replaces `unfixable` in the configuration)")
    check.add_argument("--extend-fixable", type=_codes, help="codes or prefixes to make fixable on top of "
                       "`fixable`")
    check.add_argument("-v", "--verbose", action="store_true",
                       help="log the settings used, the files checked, the cache and the time taken (stderr)")

    server = sub.add_parser("server", help="the background server of `check --server`: status or stop")
    server.add_argument("action", choices=["status", "stop"])

    lsp = sub.add_parser("lsp", help="run the language server for editors (stdio; needs the `lsp` extra)")
    lsp.add_argument("--tcp", type=int, metavar="PORT", help="listen on 127.0.0.1:PORT instead of stdio")

    clean = sub.add_parser("clean", help="remove the cache directory")
    clean.add_argument("--cache-dir", type=Path, help="the cache directory to remove (default as for check)")

    rule = sub.add_parser("rule", help="explain a rule")
    rule.add_argument("code", nargs="?", help="rule code or name, e.g. WSC101 or tensor-if")
    rule.add_argument("--all", action="store_true", help="list every rule")
    rule.add_argument("--output-format", choices=["text", "json"], default="text",
                      help="text (default) or json (ruff's fields; cslint/cli/rule_info.py)")

    runtime = sub.add_parser("runtime", help="run a step under a static-graph backend (needs torch)")
    runtime.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    # `cslint runtime` parses its own options (its --help lists them), so it is routed before this parser
    if argv[:1] == ["baseline"]:  # a check whose findings are written to the baseline, not reported
        parser = build_parser()
        check = parser.commands["check"]
        check.prog = "cslint baseline"
        check.description = ("Write the baseline (--baseline FILE, else `baseline` in the configuration): the "
                             "findings of the paths checked, which `cslint check` then does not report. Takes "
                             "check's paths and options.")
        args = parser.parse_args(["check", *argv[1:]])
        args.write_baseline = True
    else:
        args = build_parser().parse_args(argv if argv[:1] != ["runtime"] else ["runtime"])
    try:
        if args.command == "check":
            return run_check(args)
        if args.command == "rule":
            return run_rule(args)
        if args.command == "clean":
            return run_clean(args)
        if args.command == "server":
            return run_server_command(args)
        if args.command == "lsp":
            return run_lsp(args)
        if args.command == "runtime":
            from cslint.runtime.cli import main as runtime_main

            return runtime_main(argv[1:])
    except ConfigError as exc:
        from cslint.output.escape import escape_text

        print(f"cslint: error: {escape_text(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("cslint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader went away (`cslint rule WSC101 | head -3`): not an error of cslint's
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's flush at exit would fail again
        return EXIT_BROKEN_PIPE
    except Exception as exc:  # a bug in cslint: one line, not a traceback (CSLINT_DEBUG=1 shows it)
        if os.environ.get("CSLINT_DEBUG"):
            raise
        from cslint.core.report import BUG_HINT

        print(f"cslint: internal error: {type(exc).__name__}: {exc}; {BUG_HINT}", file=sys.stderr)
        return EXIT_ERROR
    build_parser().print_help(sys.stderr)
    return EXIT_ERROR


def working_directory() -> Path:
    """The current directory; one that was deleted (or cannot be read) is a usage error: paths are
    reported, and the project found, relative to it."""
    try:
        return Path(os.getcwd())
    except OSError as exc:
        if isinstance(exc, FileNotFoundError):
            raise ConfigError("the current directory no longer exists (deleted?): run cslint from an existing "
                              "directory") from None
        raise ConfigError(f"cannot read the current directory: {exc.strerror or exc}") from None


STDIN_PATHS = {Path("-"), Path("/dev/stdin"), Path("/dev/fd/0"), Path("/proc/self/fd/0")}


def stdin_name(args: argparse.Namespace) -> Path | None:
    """The path standard input is linted as, when it is the input (`-`, or `/dev/stdin`, which would
    otherwise be read as an empty or half-read file); None when the inputs are files."""
    reads_stdin = any(p in STDIN_PATHS for p in args.paths)
    if not reads_stdin and not (args.stdin_filename is not None and not args.paths):
        if args.stdin_filename is not None:
            raise ConfigError("--stdin-filename needs `-` (standard input) as the only path")
        return None
    if len(args.paths) > 1:
        raise ConfigError("`-` (standard input) cannot be combined with other paths")
    for flag, given in (("--add-noqa", args.add_noqa), ("--verify", args.verify), ("--server", args.server)):
        if given:
            raise ConfigError(f"{flag} cannot be used on standard input")
    return args.stdin_filename or Path("-")


def settings_from_args(args: argparse.Namespace) -> Settings:
    paths = args.paths or [Path(".")]
    if getattr(args, "stdin_name", None) is not None:
        paths = [args.stdin_name]
    settings = load_settings(args.config, paths[0])
    for warning in settings.warnings:
        print(f"cslint: warning: {warning}", file=sys.stderr)
    return settings.with_overrides(
        select=tuple(args.select) if args.select else None,
        extend_select=tuple(settings.extend_select + tuple(args.extend_select)) if args.extend_select else None,
        ignore=tuple(settings.ignore + tuple(args.ignore)) if args.ignore else None,
        trace_roots=tuple(settings.trace_roots + tuple(args.trace_roots)) if args.trace_roots else None,
        include_uncertain=True if getattr(args, "include_uncertain", False) else None,
        unsafe_fixes=args.unsafe_fixes,
        target=getattr(args, "target", None),
        target_reason="set by --target" if getattr(args, "target", None) else None,
        max_file_size=getattr(args, "max_file_size", None),
        max_file_tokens=getattr(args, "max_file_tokens", None),
        analysis_budget=getattr(args, "analysis_budget", None),
        python=getattr(args, "python", None),
        **(fixability_overrides(args, settings) if hasattr(args, "fixable") else {}),
        baseline=Path(os.path.abspath(args.baseline)) if getattr(args, "baseline", None) else None,
    )


def run_check(args: argparse.Namespace) -> int:
    """`cslint check`: the command line as a request to the engine (engine/check.py), then the warnings,
    the report and the exit code."""
    from cslint.cli import baseline_cli, conventions
    from cslint.engine.check import as_reported, check, discover

    if args.watch:
        from cslint.cli.watch import watch

        return watch(args, run_check)
    started = time.perf_counter()
    request, writing_baseline = check_request(args)
    found = discover(request)
    conventions.log_settings(found.settings, found.paths[0])
    conventions.log_files(found.files, found.context, found.memo_dir)
    _warn_skipped(found)
    if args.show_settings:
        sys.stdout.write(show_settings(found.settings, list(request.codes), found.paths[0]))
        return EXIT_CLEAN
    if args.show_files:
        sys.stdout.write(show_files(found.files))
        return EXIT_CLEAN
    _warn_nothing_selected(args, request, found)
    progress = _progress(args)
    logs = _LoggedRun(args.runtime_log, args.fix or args.diff) if args.runtime_log else None
    outcome = check(request, found, progress, _verified_fix(args, progress) if args.verify else logs)
    if writing_baseline is not None:
        return baseline_cli.write_baseline(outcome.result, outcome.settings, outcome.files, list(request.codes),
                                           writing_baseline)
    if args.prune_baseline:
        baseline_cli.prune_baseline(outcome.result)
    if outcome.noqa is not None:
        return _noqa_added(outcome)
    fixed_to_stdout = args.fix and not args.diff and bool(request.buffers)
    if fixed_to_stdout:  # as ruff: the fixed text on standard output, the report on standard error
        sys.stdout.write(outcome.buffers[args.stdin_name])
        sys.stdout.flush()
    progress.finish()
    as_reported(outcome)
    reported = conventions.fix_only_result(outcome.result) if args.fix_only else outcome.result
    log_report = logs.report if logs is not None else None
    _print_report(args, outcome, reported, log_report, fixed_to_stdout)
    if args.profile:
        sys.stderr.write(request.profile.report(time.perf_counter() - started))
    conventions.log_done(outcome.result, started)
    return _exit_code(args, outcome.result, reported, log_report)


def check_request(args: argparse.Namespace) -> tuple[CheckRequest, Path | None]:
    """The engine's request for `cslint check ARGS` (usage and configuration errors first), and the
    baseline file to write when the command is `cslint baseline` (its run reports every finding)."""
    from cslint.cli import baseline_cli, conventions
    from cslint.engine.check import CheckRequest
    from cslint.engine.selection import enabled_codes
    from cslint.support.profile import Profile

    working_directory()
    profile = Profile(enabled=args.profile)
    check_flags(args)
    conventions.check_convention_flags(args)
    conventions.set_verbose(args.verbose)
    args.stdin_name = stdin_name(args)
    settings = settings_from_args(args)
    codes = enabled_codes(settings)
    if args.runtime_log and (args.stdin_name is not None or args.verify or args.add_noqa):
        raise ConfigError("--runtime-log cannot be combined with standard input, --verify or --add-noqa")
    if args.verify or args.verify_tolerance is not None:
        _check_verify(args, settings)
    baseline_cli.check_flags(args, settings)
    writing_baseline = settings.baseline if getattr(args, "write_baseline", False) else None
    if writing_baseline is not None:
        settings = dataclasses.replace(settings, baseline=None)
    buffers = {args.stdin_name: read_stdin()} if args.stdin_name is not None else {}
    return CheckRequest(paths=tuple(args.paths or [Path(".")]), settings=settings, codes=tuple(codes), fix=args.fix,
                        diff=args.diff, buffers=buffers, isolated=args.isolated, force_exclude=args.force_exclude,
                        cache=not args.no_cache, cache_dir=args.cache_dir, jobs=args.jobs, add_noqa=args.add_noqa,
                        profile=profile), writing_baseline


def _warn_skipped(found: Discovery) -> None:
    from cslint.output.escape import escape_text

    for note in found.skipped:
        if not note.named:  # those named are the run's errors
            print(f"cslint: warning: {escape_text(str(note))} (skipped)", file=sys.stderr)


def _warn_nothing_selected(args: argparse.Namespace, request: CheckRequest, found: Discovery) -> None:
    """Directories named that hold no Python file, and --trace-roots patterns that match no function."""
    for empty in paths_without_python(found.paths, found.files) if not request.buffers else []:
        print(f"cslint: warning: {empty}: no Python files (nothing checked there)", file=sys.stderr)
    if args.trace_roots:
        for pattern in unmatched_trace_roots(args.trace_roots, found.files + found.context, found.settings):
            print(f"cslint: warning: --trace-roots pattern `{pattern}` matches no function or method of the files "
                  "checked (patterns match qualified names: pkg.mod.func, pkg.mod.Class.method)", file=sys.stderr)


def _noqa_added(outcome: CheckOutcome) -> int:
    assert outcome.noqa is not None
    added, edited = outcome.noqa
    print(f"Added {added} noqa directive{'s' if added != 1 else ''} to {edited} "
          f"file{'s' if edited != 1 else ''}.", file=sys.stderr)
    for error in outcome.result.errors:
        print(f"cslint: error: {error}", file=sys.stderr)
    return EXIT_ERROR if outcome.result.errors else EXIT_CLEAN


def _print_report(args: argparse.Namespace, outcome: CheckOutcome, reported: RunResult,
                  log_report: LogReport | None, fixed_to_stdout: bool) -> None:
    """The report (to -o FILE; on standard error when standard output has the fixed text), then the errors."""
    from cslint.cli import baseline_cli, conventions
    from cslint.output import FORMATS, FormatOptions
    from cslint.output.diff import diff_summary, render_diff
    from cslint.output.escape import escape_text
    from cslint.output.style import Style, colour_wanted
    from cslint.output.text import target_line

    result, settings = outcome.result, outcome.settings
    output_format, show_chain = report_style(args, settings)
    options = FormatOptions(show_chain=show_chain, unsafe_fixes=settings.unsafe_fixes,
                            statistics=args.statistics, quiet=args.quiet, fix_mode=args.fix,
                            show_fixes=conventions.show_fixes_wanted(args, settings),
                            style=Style(args.output_file is None and not fixed_to_stdout
                                        and colour_wanted(sys.stdout)), target=settings.target)
    if args.fix_only:
        report = conventions.fix_only_report(reported, output_format, options)
    elif args.diff:
        report = render_diff(result)
        if not args.quiet:
            print(diff_summary(result, settings.unsafe_fixes), file=sys.stderr)
    elif log_report is not None:
        from cslint.runtime_logs.render import render_json, render_text

        report = (render_json if output_format in ("json", "json-lines") else render_text)(log_report)
    else:
        report = FORMATS[output_format](result, options)
        if output_format == "text" and not args.quiet:  # which target the findings are for, and why
            report += target_line(settings.target, settings.target_reason, result.other_roots) + "\n"
    if args.output_file is not None:
        try:
            args.output_file.write_text(report, encoding="utf-8")
        except OSError as exc:
            result.errors.append(f"{args.output_file}: cannot write the report: {exc.strerror or exc}")
    elif fixed_to_stdout:
        sys.stderr.write(report)
    else:
        sys.stdout.write(report)
    baseline_cli.summary_for_data_formats(result, output_format, args.quiet or args.diff)
    for error in result.errors:
        print(f"cslint: error: {escape_text(error)}", file=sys.stderr)


def _exit_code(args: argparse.Namespace, result: RunResult, reported: RunResult, log_report: LogReport | None) -> int:
    """2 on an error or an internal error's finding; 1 when findings remain (with --diff, when something
    would change; with --fix, conventions.fix_exit_code); else 0."""
    from cslint.cli import conventions
    from cslint.core.report import INTERNAL_ERROR

    if result.errors or any(d.code == INTERNAL_ERROR for d in result.diagnostics):
        return EXIT_ERROR
    if args.fix and not args.diff:
        return conventions.fix_exit_code(args, result, reported)
    if args.diff:
        return EXIT_FINDINGS if result.changed_files and not args.exit_zero else EXIT_CLEAN
    if (result.diagnostics or (log_report is not None and log_report.matched)) and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def report_style(args: argparse.Namespace, settings: Settings) -> tuple[str, bool]:
    """The output format and whether chains are shown: the command line's, else the configuration's
    where the report can take it (--statistics prints only some formats; it and --diff show no chains)."""
    from cslint.cli.check_options import STATISTICS_FORMATS

    output_format = args.output_format or settings.output_format or "text"
    if args.output_format is None and args.statistics and output_format not in STATISTICS_FORMATS:
        output_format = "text"
    return output_format, args.show_chain or (settings.show_chain and not (args.statistics or args.diff))


def _progress(args: argparse.Namespace) -> Progress:
    """Plain lines with --progress; on a terminal, one line updated in place, unless -q."""
    if args.progress:
        return Progress(sys.stderr, "lines")
    if args.quiet or args.server or not _is_terminal(sys.stderr):
        return Progress.off()
    return Progress(sys.stderr, "terminal")


def _is_terminal(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError, OSError):
        return False


def read_stdin() -> str:
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"standard input is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None


def run_lsp(args: argparse.Namespace) -> int:
    try:
        from cslint.lsp.server import main as serve
    except ImportError as exc:
        from cslint.support.install_hint import install_hint

        raise ConfigError(f"`cslint lsp` needs the lsp extra ({install_hint('lsp')}): {exc}") from None
    serve(args.tcp)
    return EXIT_CLEAN


def _check_verify(args: argparse.Namespace, settings: Settings) -> None:
    """`--verify` that cannot verify is a usage error, before anything is linted or written."""
    from cslint.runtime.verify import usage_error

    if not args.verify:
        raise ConfigError("--verify-tolerance needs --verify")
    if not args.fix or args.diff:
        raise ConfigError("--verify checks fixes before writing them: use it with --fix (not --diff)")
    problem = usage_error(settings)
    if problem is not None:
        raise ConfigError(problem)


def _verified_fix(args: argparse.Namespace, progress: Progress) -> Analyse:
    """--verify's run: the fix run with the fixes that pass verification (all, some, or none: then the
    plain run, and the files stay as they are)."""
    from cslint.runtime.verify import verify_fixes

    def say(text: str) -> None:
        progress.finish()  # the terminal's progress line, before a line of its own
        print(f"cslint: --verify: {text}", file=sys.stderr, flush=True)

    def analyse(lint: Lint, files: list[Path], settings: Settings) -> RunResult:
        plain = lint(files, False)
        fixed = lint(files, True)
        verdict = verify_fixes(settings, plain, fixed, lambda choice: lint(files, choice),
                               1e-5 if args.verify_tolerance is None else args.verify_tolerance,
                               say=None if args.quiet else say, progress=not args.quiet)
        for note in verdict.notes:
            print(f"cslint: {note}", file=sys.stderr)
        if verdict.result is not None:
            return verdict.result
        plain.errors = list(dict.fromkeys(plain.errors + fixed.errors))
        return plain

    return analyse


class _LoggedRun:
    """--runtime-log's run: the static pass, the logs' events matched to it (kept for the report), and with
    --fix only the fixes of the findings a log confirmed."""

    def __init__(self, logs: list[Path], fixing: bool) -> None:
        self.logs, self.fixing = logs, fixing
        self.report: LogReport | None = None

    def __call__(self, lint: Lint, files: list[Path], settings: Settings) -> RunResult:
        from cslint.runtime_logs.command import lint_with_logs

        result, self.report = lint_with_logs(self.logs, lint, files, self.fixing, settings.target, settings.python)
        return result


def run_clean(args: argparse.Namespace) -> int:
    from cslint.store.cache import clean, default_cache_dir

    working_directory()
    directory = args.cache_dir or default_cache_dir(load_settings(None, Path(".")))
    try:
        removed = clean(directory)
    except OSError as exc:
        raise ConfigError(f"cannot remove {directory}: {exc.strerror or exc}") from None
    print(f"Removed {removed} cache file{'s' if removed != 1 else ''} from {directory}.", file=sys.stderr)
    return EXIT_CLEAN


def run_server_command(args: argparse.Namespace) -> int:
    from cslint.server.client import ask

    answer = ask({"kind": args.action}, timeout=10)
    if answer is None:
        print("cslint: no server is running for this installation.", file=sys.stderr)
        return EXIT_CLEAN if args.action == "stop" else EXIT_FINDINGS
    if args.action == "stop":
        print(f"cslint: stopped the server (pid {answer.get('stopped')}).", file=sys.stderr)
    else:
        print(f"cslint server: pid {answer.get('pid')}, served {answer.get('served')} checks since "
              f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(answer.get('started', 0)))}, "
              f"memory {answer.get('own_mb')} MB (largest check {answer.get('peak_mb')} MB), "
              f"socket {answer.get('socket')}")
    return EXIT_CLEAN


def run_rule(args: argparse.Namespace) -> int:
    from cslint.output.docs import has_fix, render_rule
    from cslint.cli.rule_info import find_rule, page_width, rule_json, rules_json, unknown_rule_message, wrap_page
    from cslint.rules import all_rules

    if args.all or not args.code:
        if args.output_format == "json":
            sys.stdout.write(rules_json(all_rules()))
            return EXIT_CLEAN
        for rule in all_rules():
            fix = "fix" if has_fix(rule) else "   "
            print(f"{rule.code}  {fix}  {rule.name:<34} {rule.summary}")
        return EXIT_CLEAN
    rule = find_rule(args.code)
    if rule is None:
        print(f"cslint: error: {unknown_rule_message(args.code)}", file=sys.stderr)
        return EXIT_ERROR
    if args.output_format == "json":
        sys.stdout.write(rule_json(rule))
        return EXIT_CLEAN
    print(wrap_page(render_rule(rule), page_width()))
    return EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
