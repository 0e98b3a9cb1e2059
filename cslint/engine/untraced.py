"""Files that cannot hold traced code are reported without libcst or the rules.

Every kind of traced root, and every rule that looks at whole files, needs a word in some file's text:
`def forward`, `def step`, `def _init_group` (nn.Module and optimizer classes), a word of a target's root
calls (`compile` or `trace` for decorators, wrappers and SambaNova's `trace_graph`, `torch_xla` for
training loops: `targets.root_markers` reads them from the records), a loss (the AutoGen rules), a
`DataLoader`, `TrainingArguments` or `DataCollator` (the WSC55x data-pipeline rules), `noqa` (WSC003,
when enabled), a configured `trace-roots` pattern, or, in a library with no step of its own (whose public
functions are roots: analysis/entry_points.py), the word `torch`. When none of the files an analysis would load has
one, no function is traced and only a syntax error could be reported, which Python's own parser finds.
That is what the pre-commit hook meets on most commits (data, configuration, utility files), and it
saves importing libcst and the rules.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from cslint.core.config import Settings
from cslint.core.sources import ReadError, read_source, within_token_limit
from cslint.core.targets import root_markers

OTHER_MARKERS = ("criterion", "DataLoader", "TrainingArguments", "DataCollator")  # rules on whole files


def may_hold_roots(data: bytes) -> bool:
    """Whether a file may define a traced root (a forward, a step, a decorated or wrapped function, a
    training loop). Files without one are traced only through calls from other files."""
    return any(m in data for m in _root_marker_bytes(root_markers()))


@lru_cache(maxsize=1)
def _root_marker_bytes(markers: tuple[str, ...]) -> tuple[bytes, ...]:
    return tuple(m.encode() for m in markers)


def may_hold_traced_code(text: str, codes: frozenset[str] | set[str]) -> bool:
    lowered = text.lower()
    return any(m in text for m in root_markers()) or any(m in text for m in OTHER_MARKERS) or "loss" in lowered \
        or ("WSC003" in codes and "noqa" in lowered)


def nothing_to_report(paths: list[Path], settings: Settings, codes: frozenset[str] | set[str]) -> bool:
    """True when analysing `paths` together can report nothing: no file can hold traced code, and each
    parses. Anything unusual (a file that cannot be read or parsed) is left to the full analysis."""
    if settings.trace_roots:
        return False
    texts = []
    for path in paths:  # every text first: one marker anywhere ends it before any parsing
        try:
            text = within_token_limit(read_source(path, settings.max_file_size), settings.max_file_tokens).text
        except ReadError:  # over a limit: a WSC004 to report
            return False
        if may_hold_traced_code(text, codes) or settings.entry_points and "torch" in text:
            return False
        texts.append(text)
    try:
        for text in texts:
            ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True
