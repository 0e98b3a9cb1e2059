"""WSC701's fix under `--target compile` (issue 37 item 1, fixers/log_guard.py): a log, print or warning
statement is guarded with `if not torch.compiler.is_compiling():`; a call whose value is used gets no fix
(guarding the statement would leave the value unbound)."""

from __future__ import annotations

CODE = """
import logging
import torch as T
from torch import nn

logger = logging.getLogger(__name__)


class Net(nn.Module):
    def forward(self, x):
        {line}
        return x * 2
"""


def _log_findings(lint, line):  # type: ignore[no-untyped-def]
    return [d for d in lint(CODE.format(line=line), target="compile") if d.code == "WSC701"]


def test_a_log_statement_is_guarded_with_the_compile_predicate(lint, fix):
    found = _log_findings(lint, 'logger.warning_once("deprecated")')
    assert len(found) == 1 and found[0].fix is not None and found[0].fix.applicability == "unsafe"
    assert "never logged" in found[0].fix.message
    fixed = fix(CODE.format(line='logger.warning_once("deprecated")'), unsafe=True, target="compile")
    assert '        if not T.compiler.is_compiling():\n            logger.warning_once("deprecated")\n' in fixed
    assert not _log_findings(lint, 'if not T.compiler.is_compiling(): logger.warning_once("deprecated")')


def test_a_log_call_whose_value_is_used_has_no_fix(lint):
    found = _log_findings(lint, 'done = logger.info("x %s", x.sum())')
    assert found and all(d.fix is None for d in found)
