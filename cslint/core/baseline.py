"""The baseline: findings a project has accepted for now, kept in a file it commits, and not reported.

A finding is matched by its file (relative to the directory holding the baseline), its code, and a
fingerprint of the text of the line it flags with whitespace normalised: never by line number, so lines
added or removed above a finding do not break the match. Each (file, code, fingerprint) carries a count:
two identical findings in one file need two, and a third like them is reported.

Findings that say a file was not analysed (a syntax error, an internal error, a file over the limits)
are never hidden: a file cslint cannot read is not a pass, whatever the baseline holds. Nor does a file
with such a finding make its entries stale: its findings are unknown, not gone.

The file is JSON, one entry per line, sorted, so a change to the baseline is a small diff:

    {
      "version": 1,
      "findings": [
        {"code": "WSC101", "count": 1, "file": "models/bert.py", "fingerprint": "…", "text": "if x.sum() > 0:"}
      ]
    }

`text` is for whoever reads the diff; only `fingerprint` is matched.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from cslint.support import bounded_json
from cslint.core.config import ConfigError
from cslint.core.report import INTERNAL_ERROR, NOT_ANALYSED, SYNTAX_ERROR, Diagnostic

VERSION = 1
MAX_BASELINE_BYTES = 20_000_000  # about 100,000 entries as cslint writes them; far more than a project accepts
TEXT_SHOWN = 120  # characters of the flagged line kept for readers of the file
NEVER_BASELINED = frozenset({SYNTAX_ERROR, INTERNAL_ERROR, NOT_ANALYSED})

Key = tuple[str, str, str]  # (file relative to the baseline's directory, code, fingerprint)


class BaselineError(ConfigError):
    """A baseline that cannot be read or parsed: one line, exit code 2."""


def fingerprint(source_line: str) -> str:
    text = " ".join(source_line.split())
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


@dataclass
class Baseline:
    path: Path  # absolute
    counts: Counter[Key] = field(default_factory=Counter)
    texts: dict[Key, str] = field(default_factory=dict)

    @property
    def anchor(self) -> str:
        return os.path.dirname(str(self.path))

    def relative(self, path: Path | str) -> str:
        """`path` as the baseline names it: relative to the baseline's directory, with `/` separators."""
        return Path(os.path.relpath(os.path.abspath(path), self.anchor)).as_posix()

    def key(self, d: Diagnostic) -> Key:
        return self.relative(d.path), d.code, fingerprint(d.source_line)

    def exists(self, relative: str) -> bool:
        return os.path.lexists(os.path.join(self.anchor, relative))


@dataclass
class BaselineOutcome:
    """What the baseline did to a run: how many findings it hid, which entries those used, and the files
    whose findings are all known (their entries not used are stale)."""

    baseline: Baseline
    hidden: int = 0
    matched: Counter[Key] = field(default_factory=Counter)
    checked: set[str] = field(default_factory=set)
    codes: frozenset[str] | None = None  # the rules that ran (None: all): an entry of another is not stale

    def stale(self) -> Counter[Key]:
        """The entries (with how many of each) that no finding used: the finding was fixed, or its file
        is gone."""
        out: Counter[Key] = Counter()
        for key, count in self.baseline.counts.items():
            if self.codes is not None and key[1] not in self.codes:
                continue
            if key[0] in self.checked or not self.baseline.exists(key[0]):
                unused = count - self.matched.get(key, 0)
                if unused > 0:
                    out[key] = unused
        return out

    def merge(self, other: BaselineOutcome) -> None:
        self.hidden += other.hidden
        self.matched.update(other.matched)
        self.checked |= other.checked
        if self.codes is not None:
            self.codes = None if other.codes is None else self.codes | other.codes


# ---- reading ---------------------------------------------------------------------------------------

def load(path: Path) -> Baseline:
    """The baseline at `path`; BaselineError (one line) if it is missing, too large, or not one."""
    from cslint.core.sources import ReadError, TooLarge, read_regular

    path = Path(os.path.abspath(path))
    try:
        data = read_regular(path, MAX_BASELINE_BYTES)[0]
    except FileNotFoundError:
        raise BaselineError(f"baseline {path} does not exist (write it with `cslint baseline`)") from None
    except TooLarge as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.size:,} bytes, over the {exc.limit:,} cslint "
                            "reads") from None
    except ReadError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc}") from None
    except OSError as exc:
        raise BaselineError(f"cannot read baseline {path}: {exc.strerror or exc}") from None
    return parse(data, path)


def parse(data: bytes, path: Path) -> Baseline:
    try:
        document = bounded_json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BaselineError(f"cannot parse baseline {path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:
        raise BaselineError(f"cannot parse baseline {path}: {' '.join(str(exc).split())}") from None
    if not isinstance(document, dict) or document.get("version") != VERSION or \
            not isinstance(document.get("findings"), list):
        raise BaselineError(f"cannot parse baseline {path}: not a cslint baseline of version {VERSION} "
                            "(an object with \"version\": 1 and a \"findings\" list)")
    baseline = Baseline(path)
    for number, entry in enumerate(document["findings"], 1):
        if not (isinstance(entry, dict) and all(isinstance(entry.get(k), str) for k in ("file", "code", "fingerprint"))
                and isinstance(entry.get("count"), int) and not isinstance(entry["count"], bool)
                and entry["count"] >= 1):
            raise BaselineError(f"cannot parse baseline {path}: finding {number} needs \"file\", \"code\" and "
                                "\"fingerprint\" strings and a positive \"count\"")
        key = (entry["file"], entry["code"], entry["fingerprint"])
        baseline.counts[key] += entry["count"]
        if isinstance(entry.get("text"), str):
            baseline.texts[key] = entry["text"]
    return baseline


# ---- matching --------------------------------------------------------------------------------------

class Reported(Protocol):
    """A run's result as the baseline sees it (core/run_result.RunResult)."""

    diagnostics: list[Diagnostic]
    baseline: BaselineOutcome | None


R = TypeVar("R", bound=Reported)


def apply(result: R, baseline_path: Path | None, checked: Iterable[Path | str],
          codes: Iterable[str] | None = None) -> R:
    """`result` without the findings the baseline at `baseline_path` accepts (none when it is None);
    `result.baseline` says what was hidden. `checked`: the files the run reported on; `codes`: the rules
    that ran."""
    if baseline_path is None:
        return result
    return apply_loaded(result, load(baseline_path), checked, codes)


def apply_loaded(result: R, baseline: Baseline, checked: Iterable[Path | str],
                 codes: Iterable[str] | None = None) -> R:
    outcome = BaselineOutcome(baseline, codes=frozenset(codes) if codes is not None else None)
    unknown = {os.path.abspath(d.path) for d in result.diagnostics if d.code in NEVER_BASELINED}
    outcome.checked = {baseline.relative(p) for p in checked if os.path.abspath(p) not in unknown}
    kept = []
    for d in result.diagnostics:
        if d.code not in NEVER_BASELINED:
            key = baseline.key(d)
            if outcome.matched[key] < baseline.counts.get(key, 0):
                outcome.matched[key] += 1
                outcome.hidden += 1
                continue
        kept.append(d)
    outcome.matched = +outcome.matched
    result.diagnostics = kept
    if result.baseline is not None:
        outcome.merge(result.baseline)
    result.baseline = outcome
    return result


def summary(outcome: BaselineOutcome) -> str:
    """The report's line about the baseline."""
    stale = sum(outcome.stale().values())
    line = f"{outcome.hidden} finding{'s' if outcome.hidden != 1 else ''} hidden by the baseline"
    if stale:
        line += f"; {stale} stale baseline entr{'ies' if stale != 1 else 'y'}, of findings since gone " \
                "(`cslint check --prune-baseline` removes them)"
    return line + "."


# ---- writing ---------------------------------------------------------------------------------------

def entries_of(diagnostics: Iterable[Diagnostic], baseline: Baseline) -> Baseline:
    """`baseline` with one count more per finding (findings that say a file was not analysed left out)."""
    for d in diagnostics:
        if d.code in NEVER_BASELINED:
            continue
        key = baseline.key(d)
        baseline.counts[key] += 1
        baseline.texts.setdefault(key, " ".join(d.source_line.split())[:TEXT_SHOWN])
    return baseline


def without_files(baseline: Baseline, files: Iterable[Path | str], codes: Iterable[str] | None) -> Baseline:
    """A copy of `baseline` without the entries of `files` (of `codes` only, when given): what a new run
    over those files replaces."""
    gone = {baseline.relative(f) for f in files}
    chosen = set(codes) if codes is not None else None
    kept = Baseline(baseline.path)
    for key, count in baseline.counts.items():
        if key[0] in gone and (chosen is None or key[1] in chosen):
            continue
        kept.counts[key] = count
        if key in baseline.texts:
            kept.texts[key] = baseline.texts[key]
    return kept


def pruned(outcome: BaselineOutcome) -> tuple[Baseline, int]:
    """The baseline without its stale entries, and how many counts were removed."""
    stale = outcome.stale()
    old = outcome.baseline
    new = Baseline(old.path)
    for key, count in old.counts.items():
        left = count - stale.get(key, 0)
        if left > 0:
            new.counts[key] = left
            if key in old.texts:
                new.texts[key] = old.texts[key]
    return new, sum(stale.values())


def render(baseline: Baseline) -> str:
    lines = []
    for key in sorted(baseline.counts):
        entry = {"file": key[0], "code": key[1], "fingerprint": key[2], "count": baseline.counts[key]}
        if key in baseline.texts:
            entry["text"] = baseline.texts[key]
        lines.append("    " + json.dumps(entry, sort_keys=True))
    body = ",\n".join(lines)
    return f'{{\n  "version": {VERSION},\n  "findings": [\n{body}{chr(10) if lines else ""}  ]\n}}\n'


def write(baseline: Baseline) -> None:
    """Write the baseline in one step: readers see the old file or the new one, never part of either."""
    from cslint.support.interrupts import interrupts_held

    path = baseline.path
    data = render(baseline).encode("ascii")
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise BaselineError(f"cannot write baseline {path}: {exc.strerror or exc}") from None
    try:
        with interrupts_held():
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.chmod(temp, _mode(path))
            os.replace(temp, path)
    except OSError as exc:
        raise BaselineError(f"cannot write baseline {path}: {exc.strerror or exc}") from None
    finally:
        if os.path.exists(temp):
            os.unlink(temp)


def _mode(path: Path) -> int:
    """The file's permissions as they were, or those a new file gets."""
    try:
        return os.stat(path).st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
