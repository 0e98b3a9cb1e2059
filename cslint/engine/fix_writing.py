"""Writing a run's fixes to disk: each file atomically, with Ctrl-C held until the writes are done, never
through a symbolic link to a file outside the paths checked. A file that cannot be written is reported as
it is on disk."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from cslint.core.run_result import RunResult


def write_fixes(result: RunResult, lint: Callable[..., RunResult], project: list[Path], unsafe: bool,
                roots: list[Path]) -> None:
    """Write the fixed files. A file that cannot be written is reported as it is on disk: its findings
    come from a plain run over it, not from the fixed text that was never written."""
    from cslint.support.interrupts import interrupts_held
    from cslint.core.sources import ReadError, safe_resolve, write_atomically

    unwritten = []
    written: dict[Path, str] = {}  # real path -> the text written there
    with interrupts_held():
        for source in result.changed_files:
            try:
                real = safe_resolve(source.path)
                if not _within(real, roots):
                    raise ReadError("a symbolic link to a file outside the paths checked; fix not written")
                if written.get(real) == source.text:  # a link and its target both checked: written once
                    continue  # (other text would be refused: the file no longer holds the bytes read)
                write_atomically(source)
                written[real] = source.text
            except (ReadError, OSError) as exc:
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                result.errors.append(f"{source.path}: cannot write fix: {reason}")
                unwritten.append(source.path)
    if not unwritten:
        return
    from cslint.engine.fixed import fixed_findings

    failed = [s for s in result.changed_files if s.path in unwritten]
    result.changed_files = [s for s in result.changed_files if s.path not in unwritten]
    on_disk = lint(unwritten, False, [p for p in project if p not in unwritten])
    lost = fixed_findings(on_disk.diagnostics, result.diagnostics, failed, unsafe)
    result.fixed = max(result.fixed - len(lost), 0) if result.changed_files else 0
    for path in unwritten:
        result.fixed_codes.pop(path, None)
    result.diagnostics = [d for d in result.diagnostics if d.path not in unwritten] + on_disk.diagnostics
    result.errors.extend(e for e in on_disk.errors if e not in result.errors)


def _within(path: Path, roots: list[Path]) -> bool:
    """Whether `path` (resolved) is one of `roots` or below one: a fix never writes through a symbolic
    link to a file elsewhere."""
    return any(path == root or path.is_relative_to(root) for root in roots)
