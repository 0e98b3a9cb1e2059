"""What stopped a runtime run, said in full: the one-line status names the user's line and the first line
of the exception; the cause under it is the whole exception message (or the step's traceback), never cut.

The TorchScript lazy backend runs the ops it recorded since its last sync only when a value is needed, so
an op it cannot run fails at a later line (the next `.item()`, print or optimizer update): that is said
next to such a cause.
"""

from __future__ import annotations

from cslint.runtime.findings import RuntimeReport

CAUSE_INDENT = "    "
LAZY_DEFERRED = "(the lazy backend runs the ops it recorded since its last sync {when}, so the op at fault may " \
                "be on an earlier line)"


def cause_lines(report: RuntimeReport, backend: str) -> list[str]:
    """The whole exception that stopped `backend`, when it says more than its status line; else []."""
    cause = report.causes.get(backend, "").strip()
    lines = [line.rstrip() for line in cause.splitlines() if line.strip()]
    if len(lines) < 2:
        return []
    if backend == "lazy" and "TorchScript interpreter" in cause:
        at_line = report.status.get(backend, "").startswith("stopped at ")
        lines.append(LAZY_DEFERRED.format(when="at this line" if at_line else "at the end of each step"))
    return lines


def error_lines(report: RuntimeReport) -> list[str]:
    """A run's error (the user's traceback, a timeout) in full, when it is more than one line; else []."""
    lines = [line.rstrip() for line in report.error.strip().splitlines() if line.strip()]
    return lines if len(lines) > 1 else []


def indented(lines: list[str]) -> str:
    return "".join(f"\n{CAUSE_INDENT}{line}" for line in lines)
