"""`cslint runtime TARGET...`: run targets under the runtime backends and report like `cslint check`."""

from __future__ import annotations

import argparse
import json
import os
import sys

from cslint.runtime.api import DEFAULT_TIMEOUT, INSTALL_HINT, check, torch_available
from cslint.runtime.findings import RuntimeReport

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cslint runtime", description=(
        "Run a step under PyTorch's lazy-tensor backend and dynamo, report what a static-graph trace "
        "rejects at your file:line. TARGET is path/to/file.py:factory or package.module:factory."))
    parser.add_argument("targets", nargs="+", metavar="TARGET")
    parser.add_argument("--backend", action="append", choices=["lazy", "dynamo"],
                        help="backends to run (default: both)")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds per target")
    parser.add_argument("--compare-static", action="store_true",
                        help="also list what the static pass missed and what it reported that never happened")
    parser.add_argument("--output-format", choices=["text", "json"], default="text")
    parser.add_argument("--no-progress", action="store_true", help="no progress display")
    return parser


def _show_progress(no_progress: bool) -> bool:
    return not no_progress and sys.stderr.isatty() and not os.environ.get("CI")


def _relative(path: str) -> str:
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def render_text(report: RuntimeReport) -> str:
    lines = []
    for finding in report.sorted_findings():
        lines.append(f"{_relative(finding.path)}:{finding.line}: {finding.code} [{finding.backend}] {finding.message}")
    if report.error:
        lines.append(f"{report.target}: error: {report.error}")
    for note in report.notes:
        lines.append(f"{report.target}: note: {note}")
    return "\n".join(lines) + ("\n" if lines else "")


def main(argv: list[str]) -> int:
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_CLEAN if exc.code == 0 else EXIT_ERROR
    if not torch_available():
        print(f"cslint runtime: {INSTALL_HINT}", file=sys.stderr)
        return EXIT_ERROR
    backends = tuple(args.backend) if args.backend else ("lazy", "dynamo")
    reports = [check(t, backends, timeout=args.timeout, progress=_show_progress(args.no_progress))
               for t in args.targets]
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
            sys.stdout.write(render_text(report))
            if report.target in comparisons:
                sys.stdout.write(comparisons[report.target].render())
        count = sum(len(r.findings) for r in reports)
        print(f"Found {count} runtime problem{'s' if count != 1 else ''} in {len(reports)} target(s).")
    if any(r.error for r in reports):
        return EXIT_ERROR
    return EXIT_FINDINGS if any(r.findings for r in reports) else EXIT_CLEAN
