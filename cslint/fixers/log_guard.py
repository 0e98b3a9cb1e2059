"""Guard a print/log/warning reached under torch.compile with the tracer's own predicate.

Under torch.compile every print, log or `warnings.warn` in the compiled function is a graph break
(WSC701). Library code already skips such calls while dynamo traces (`if not is_torchdynamo_compiling():`);
the fix writes that guard around the statement: `if not torch.compiler.is_compiling(): logger.warning_once(...)`.
"""

from __future__ import annotations

import libcst as cst

from cslint.fixers.compile_guard import skip_under_compile, statement_of
from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix


def guard_under_compile(node: cst.Call, ctx: RuleContext, kind: str) -> Fix | None:
    """Wrap the statement that is exactly the call `node` in `if not torch.compiler.is_compiling():`."""
    stmt = statement_of(node, ctx)
    if stmt is None:
        return None
    torch, guarded, imports = skip_under_compile(stmt, ctx)
    what = {"print": "printed", "warnings": "warned"}.get(kind, "logged")
    return Fix("unsafe", f"Skip it while torch.compile traces (`if not {torch}.compiler.is_compiling():`); unsafe: "
                         f"in compiled runs the message is never {what} (eager runs are unchanged)"
                         + ("; a `warnings` filter set to \"error\" no longer raises there" if kind == "warnings"
                            else ""),
               [(stmt, guarded)], imports)
