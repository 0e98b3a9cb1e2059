"""WSC003: `# noqa: WSC...` comments that suppress nothing.

Rules only run inside traced functions, but a noqa comment can sit anywhere, and whether it is used is
only known once every other rule has reported and suppression has been applied. So this rule has no
visitors: the runner calls `unused_noqa` from its reporting path (where `# noqa` is already handled, once,
as in Fixit), after suppression, with the (line, code) pairs each comment actually suppressed. The class
below carries the code, the documentation and the examples, so selection, `cslint rule WSC003`, the docs
pages and the example tests treat it like any other rule.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange

from cslint.core.noqa import NOQA
from cslint.rule_api.findings import Fix
from cslint.rules.base import Rule

UNUSED_NOQA = "WSC003"
OWN_PREFIX = "WSC"


class UnusedNoqa(Rule):
    code = UNUSED_NOQA
    name = "unused-noqa"
    summary = "Checks for `# noqa: WSC...` comments whose codes suppress no finding on their line."
    why = (
        "A stale suppression hides the next real problem on that line: once the code changes, a new "
        "data-dependent branch or host transfer there is silenced without anyone reviewing it, and the "
        "static graph breaks at compile time instead of in review. Removing unused codes keeps every "
        "suppression a deliberate, current decision. Only cslint's own `WSC` codes are judged; bare "
        "`# noqa` and other tools' codes are left alone. Opt-in: enable it with `--extend-select WSC003`; "
        "lint the whole project (or pass `--project-context`) so chains through other files are seen."
    )
    example = """
def forward(self, x):
    y = torch.where(x.max() > 0, x * 2, x)  # noqa: WSC101
    return y
"""
    use_instead = """
def forward(self, x):
    y = torch.where(x.max() > 0, x * 2, x)
    return y
"""
    fix_safety = (
        "Safe: the fix removes the unused codes from the comment, or the whole `# noqa` directive when no "
        "code is left; other comments on the line are kept."
    )
    default_enabled = False
    VALID = [
        """
import torch
from torch import nn

TABLE = "# noqa: WSC101 inside a string is not a directive"


class Head(nn.Module):
    def forward(self, x):
        y = x.clamp(min=0)  # noqa: E501
        z = y * 2  # noqa
        return torch.where(z > 1, z, y)
""",
    ]
    INVALID = [
        """
import torch
from torch import nn


class Head(nn.Module):
    def forward(self, x):
        y = torch.where(x > 0, x, 0)  # noqa: WSC101  # expect: WSC003
        return y  # noqa: E501, WSC2  # expect: WSC003


def load(path):  # noqa: WSC999  # expect: WSC003
    return torch.load(path)
""",
    ]


@dataclass(frozen=True)
class NoqaDirective:
    line: int
    column: int  # 1-based column of the `#` that starts the directive
    end_column: int  # 1-based, exclusive
    comment: str  # the whole comment token
    start: int  # span of the directive inside `comment`
    end: int
    codes: tuple[str, ...]  # as written, upper-cased; empty for a bare `# noqa`


@dataclass(frozen=True)
class UnusedCodes:
    directive: NoqaDirective
    unused: tuple[str, ...]
    message: str

    def fixed_comment(self) -> str | None:
        """The comment with the unused codes removed; None when nothing of it is left."""
        d = self.directive
        kept = [c for c in d.codes if c not in self.unused]
        before, after = d.comment[: d.start].rstrip(), d.comment[d.end:].strip()
        directive = f"# noqa: {', '.join(kept)}" if kept else ""
        parts = [p for p in (before, directive, after) if p]
        return "  ".join(parts) if parts else None


def noqa_directives(source: str) -> list[NoqaDirective]:
    if "noqa" not in source.lower():
        return []
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return []
    found = []
    for token in tokens:
        if token.type != tokenize.COMMENT:
            continue
        match = NOQA.search(token.string)
        if match is None:
            continue
        codes = match.group("codes")
        found.append(NoqaDirective(
            line=token.start[0], column=token.start[1] + 1, end_column=token.end[1] + 1,
            comment=token.string, start=match.start(), end=match.end(),
            codes=tuple(c.upper() for c in re.split(r"[\s,]+", codes) if c) if codes else ()))
    return found


def unused_noqa(source: str, used: set[tuple[int, str]], enabled: Collection[str],
                known: Collection[str]) -> list[UnusedCodes]:
    """Directives with WSC codes that suppressed nothing. `used` holds (line, code-as-written) pairs."""
    out = []
    for directive in noqa_directives(source):
        unmatched, disabled, unknown = [], [], []
        for code in directive.codes:
            if not code.startswith(OWN_PREFIX) or (directive.line, code) in used:
                continue
            if not any(k.startswith(code) for k in known):
                unknown.append(code)
            elif not any(k.startswith(code) for k in enabled):
                disabled.append(code)
            else:
                unmatched.append(code)
        if not (unmatched or disabled or unknown):
            continue
        parts = [f"{label}: {', '.join(codes)}" for label, codes in
                 (("unused", unmatched), ("not enabled", disabled), ("unknown", unknown)) if codes]
        out.append(UnusedCodes(directive, tuple(unmatched + disabled + unknown),
                               f"unused `# noqa` directive ({'; '.join(parts)})"))
    return out


def removal_fix(positions: Mapping[cst.CSTNode, CodeRange], item: UnusedCodes) -> Fix | None:
    """A safe fix rewriting the comment node on the directive's line (found through its owner)."""
    line = item.directive.line
    for node in positions:
        if not isinstance(node, (cst.TrailingWhitespace, cst.EmptyLine)) or node.comment is None:
            continue
        span = positions.get(node.comment)
        if span is None or span.start.line != line or node.comment.value != item.directive.comment:
            continue
        text = item.fixed_comment()
        replacement = node.with_changes(comment=cst.Comment(text)) if text is not None else \
            node.with_changes(comment=None, whitespace=cst.SimpleWhitespace(""))
        return Fix("safe", f"remove {', '.join(item.unused)} from the `# noqa` directive", [(node, replacement)])
    return None
