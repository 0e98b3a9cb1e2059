"""Human-readable report: `path:line:col: CODE message`, the source line and a caret under the span."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from cslint.output.escape import escape_text
from cslint.output.statistics import statistics_rows
from cslint.output.style import PLAIN, Style
from cslint.core.report import Diagnostic
from cslint.core.run_result import RunResult
from cslint.core.targets import TARGETS

if TYPE_CHECKING:
    from cslint.output import FormatOptions




def _fixable(d: Diagnostic, unsafe: bool) -> bool:
    return d.fix is not None and (d.fix.applicability == "safe" or unsafe)


EXCERPT_WIDTH = 160  # a longer source line is shown as a window around the finding
EXCERPT_LEAD = 40  # characters shown before the finding's column in such a window


def _window(line: str, start: int, end: int) -> tuple[str, int, int]:
    """The part of a long line shown in an excerpt, with the span's start and end within it."""
    if len(line) <= EXCERPT_WIDTH:
        return line, start, end
    first = max(start - EXCERPT_LEAD, 0)
    last = min(first + EXCERPT_WIDTH, len(line))
    lead, tail = ("..." if first else ""), ("..." if last < len(line) else "")
    shown = lead + line[first:last] + tail
    return shown, start - first + len(lead), min(end, last) - first + len(lead)


def _excerpt(d: Diagnostic) -> list[str]:
    if not d.source_line.strip():
        return []
    number = str(d.line)
    pad = " " * len(number)
    line = d.source_line.rstrip("\r\n")
    start = max(d.column - 1, 0)
    end = d.end_column - 1 if d.end_line == d.line else len(line)
    line, start, end = _window(line, start, end)
    before, span = escape_text(line[:start]), escape_text(line[start:max(end, start)])
    width = max(len(span), 1)
    prefix = "".join(ch if ch == "\t" else " " for ch in before)
    return [f"{pad} |", f"{number} | {escape_text(line)}", f"{pad} | {prefix}{'^' * width}"]


def _header(d: Diagnostic, unsafe: bool, style: Style = PLAIN, target: str = "") -> str:
    """`path:line:col: CODE [*] message`, styled as ruff's (path bold, separators cyan, code red), and
    ` [compile]` (the targets whose roots reach it) when that is not the run's `target` alone."""
    marker = f" {style('[*]', 'cyan')}" if _fixable(d, unsafe) else ""
    colon = style(":", "cyan")
    return (f"{style(escape_text(str(d.path)), 'bold')}{colon}{d.place}{colon}{d.column}{colon} "
            f"{style(d.labelled_code, 'red', 'bold')}{marker} {escape_text(d.message)}{target_marker(d, target)}")


def target_marker(d: Diagnostic, target: str) -> str:
    """` [compile]`, ` [wsc, compile]`: the targets whose roots reach `d`, unless that is the run's `target`
    alone (then nothing: a run whose roots all have its target reports as it always did)."""
    return f" [{', '.join(d.targets)}]" if target and d.targets and tuple(d.targets) != (target,) else ""


SUMMARY_FORMATS = ("text", "concise", "grouped")  # the formats whose report ends with `_summary`


def _summary(result: RunResult, options: FormatOptions) -> list[str]:
    lines = []
    count = len(result.diagnostics)
    if options.fix_mode and result.fixed:
        lines.append(f"Fixed {result.fixed} finding{'s' if result.fixed != 1 else ''} "
                     f"in {len(result.changed_files)} file{'s' if len(result.changed_files) != 1 else ''}.")
    if count:
        lines.append(f"Found {count} finding{'s' if count != 1 else ''} in {result.files_checked} files checked.")
        fixable = sum(_fixable(d, options.unsafe_fixes) for d in result.diagnostics)
        hidden = sum(d.fix is not None and d.fix.applicability == "unsafe" for d in result.diagnostics) \
            if not options.unsafe_fixes else 0
        if fixable:
            lines.append(f"[*] {fixable} fixable with `cslint check --fix`"
                         + (" --unsafe-fixes" if options.unsafe_fixes else "") + ".")
        if hidden:
            lines.append(f"({hidden} more fixable with `--fix --unsafe-fixes`.)")
    elif not result.errors:
        lines.append(f"All checks passed ({result.files_checked} files).")
    if result.baseline is not None:
        from cslint.core.baseline import summary

        lines.append(summary(result.baseline))
    return lines


def fixes_shown(result: RunResult, options: FormatOptions) -> list[str]:
    """With --show-fixes, the fixes applied (between blank lines, as ruff), else nothing."""
    if not options.show_fixes:
        return []
    from cslint.output.fix_summary import fix_summary

    lines = fix_summary(result, options.style)
    return ["", *lines, ""] if lines else []


def statistics(result: RunResult) -> list[str]:
    return [f"{count:>5}  {code}  [{'*' if fixable else ' '}] {name}"
            for code, name, count, fixable in statistics_rows(result)]


def render(result: RunResult, options: FormatOptions) -> str:
    out: list[str] = []
    if options.statistics:
        out.extend(statistics(result))
        if result.baseline is not None:
            out.append(f"{result.baseline.hidden:>5}  hidden by the baseline")
    else:
        for d in result.diagnostics:
            out.append(_header(d, options.unsafe_fixes, options.style, options.target))
            if options.show_source:
                out.extend(_excerpt(d))
            out.extend(escape_text(f"  = note: {note}") for note in d.notes)
            if d.assumption:
                out.append(escape_text(f"  = assumed: {d.assumption}"))
            if options.show_chain and d.chain:
                out.append(escape_text(f"  = traced: {' -> '.join(d.chain)} ({d.reason})"))
            if d.graph_break is not None:
                gb = d.graph_break
                out.append(escape_text(f"  = {gb.id} ({gb.type}): {gb.hint + ' ' if gb.hint else ''}{gb.url}"))
            if d.fix is not None:
                out.append(f"  = fix ({d.fix.applicability}): {escape_text(d.fix.message)}")
            if options.show_source:
                out.append("")
    if not options.quiet:
        out.extend(fixes_shown(result, options))
        out.extend(_summary(result, options))
    return "\n".join(out) + ("\n" if out else "")


def target_line(target: str, reason: str, other_roots: Iterable[tuple[str, str, Path]] = ()) -> str:
    """`target: wsc (why)`, and the roots checked for another target: `; compile for 1 root handed to
    torch.compile (`_update_fn` in fused.py)`."""
    line = f"target: {target} ({reason or 'the default'})"
    by_target: dict[str, list[str]] = {}
    for other, name, path in other_roots:
        by_target.setdefault(other, []).append(f"`{name}` in {path.name}")
    for other, names in by_target.items():
        shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
        why = TARGETS[other].own_roots if other in TARGETS else ""
        line += f"; {other} for {len(names)} root{'s' if len(names) != 1 else ''}{' ' + why if why else ''} ({shown})"
    return escape_text(line)


def render_concise(result: RunResult, options: FormatOptions) -> str:
    if options.statistics:
        return render(result, options)
    lines = [_header(d, options.unsafe_fixes, options.style, options.target) for d in result.diagnostics]
    if options.show_chain:
        lines = [f"{line} [traced: {escape_text(' -> '.join(d.chain))}]" for line, d in zip(lines, result.diagnostics)]
    if not options.quiet:
        lines.extend(fixes_shown(result, options))
        lines.extend(_summary(result, options))
    return "\n".join(lines) + ("\n" if lines else "")
