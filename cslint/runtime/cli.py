"""`cslint runtime TARGET...`: run targets under the runtime backends and report like `cslint check`."""

from __future__ import annotations

import argparse
import json
import os
import sys

from cslint.runtime.api import DEFAULT_MEMORY_LIMIT_MB, DEFAULT_TIMEOUT, INSTALL_HINT, check, torch_available
from cslint.runtime.failures import cause_lines, indented
from cslint.runtime.findings import TIMED_OUT, RuntimeReport

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"cslint runtime: error: {message} (see `cslint runtime --help`)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="cslint runtime",
        description="Run a training/inference step under PyTorch's lazy-tensor backend and dynamo and report "
                    "what a static-graph trace rejects, at your file:line, under the static rules' codes. "
                    "Runs the target's code (in a child process).",
        epilog="TARGET is path/to/file.py:factory or package.module:factory; the factory returns "
               "Step(fn, batches) (from cslint.runtime import Step), (fn, inputs) or a torch optimizer. "
               "Exit codes: 0 clean and every backend complete, 1 findings, 2 an error or a backend that "
               "did not trace the step to the end (unless --allow-incomplete). See docs/runtime.md.")
    parser.add_argument("targets", nargs="+", metavar="TARGET", help="what to run (path/to/file.py:factory)")
    parser.add_argument("--backend", action="append", choices=["lazy", "fake", "dynamo"],
                        help="a backend to run; repeat for several (default: lazy and dynamo)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                        help=f"seconds per target; what was found before it is kept (default {DEFAULT_TIMEOUT:g})")
    parser.add_argument("--memory-limit", type=int, default=DEFAULT_MEMORY_LIMIT_MB, metavar="MB",
                        help="address-space limit of the process running the step, in MB; 0 for none "
                             f"(default {DEFAULT_MEMORY_LIMIT_MB})")
    parser.add_argument("--allow-incomplete", action="store_true",
                        help="exit 0/1 by the findings even when a backend stopped early or timed out")
    parser.add_argument("--compare-static", action="store_true",
                        help="also list what the static pass missed and what it reported that never happened")
    parser.add_argument("--show-chain", action="store_true",
                        help="under each finding, the frames from your step down to the op (library frames too)")
    parser.add_argument("--output-format", choices=["text", "json"], default="text")
    parser.add_argument("--no-progress", action="store_true", help="no progress lines on stderr")
    return parser


def _relative(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def render_text(report: RuntimeReport, show_chain: bool = False) -> str:
    lines = []
    for finding in report.sorted_findings():
        code = f"{finding.code} [{finding.graph_break}]" if finding.graph_break else finding.code
        lines.append(f"{_relative(finding.path)}:{finding.line}: {code} [{finding.backend}] {finding.message}")
        if show_chain:
            lines.extend(f"    {_relative(frame)}" for frame in finding.chain)
    if report.error:
        lines.append(f"{report.target}: error: {report.error}")
    for backend, status in report.status.items():
        lines.append(f"{report.target}: {backend}: {status}" + indented(cause_lines(report, backend)))
    for note in report.notes:
        lines.append(f"{report.target}: note: {note}")
    return "\n".join(lines) + ("\n" if lines else "")


def _summary(reports: list[RuntimeReport], allow_incomplete: bool) -> str:
    count = sum(len(r.findings) for r in reports)
    text = f"Found {count} runtime problem{'s' if count != 1 else ''} in {len(reports)} target(s)"
    incomplete = sum(len(r.incomplete()) for r in reports)
    if incomplete:
        text += (f"; {incomplete} backend run{'s' if incomplete != 1 else ''} did not finish, so this is not "
                 f"a clean bill" + (" (--allow-incomplete)" if allow_incomplete else ""))
    return text + "."


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_CLEAN if exc.code == 0 else EXIT_ERROR
    if not torch_available():
        print(f"cslint runtime: {INSTALL_HINT}", file=sys.stderr)
        return EXIT_ERROR
    backends = tuple(dict.fromkeys(args.backend)) if args.backend else ("lazy", "dynamo")
    reports = [check(t, backends, timeout=args.timeout, progress=not args.no_progress,
                     memory_limit_mb=args.memory_limit) for t in args.targets]
    comparisons = {}
    if args.compare_static:
        from cslint.runtime.compare import compare_with_static

        comparisons = {r.target: compare_with_static(r) for r in reports}
    if args.output_format == "json":
        data = [dict(r.to_json(), **({"compare_static": comparisons[r.target].to_json()}
                                    if r.target in comparisons else {})) for r in reports]
        print(json.dumps(data, indent=2))
    else:
        for report in reports:
            sys.stdout.write(render_text(report, args.show_chain))
            if report.target in comparisons:
                sys.stdout.write(comparisons[report.target].render())
        print(_summary(reports, args.allow_incomplete))
    if args.allow_incomplete:  # a timeout is an incomplete run, not a broken target
        broken = [r for r in reports if r.error and TIMED_OUT not in r.status.values()]
    else:
        broken = [r for r in reports if r.error or r.incomplete()]
    if broken:
        return EXIT_ERROR
    return EXIT_FINDINGS if any(r.findings for r in reports) else EXIT_CLEAN
