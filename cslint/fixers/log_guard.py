"""Guard a print/log/warning reached under torch.compile with the tracer's own predicate.

Under torch.compile every print, log or `warnings.warn` in the compiled function is a graph break
(WSC701). Library code already skips such calls while dynamo traces (`if not is_torchdynamo_compiling():`);
the fix writes that guard around the statement: `if not torch.compiler.is_compiling(): logger.warning_once(...)`.
Dynamo answers the predicate with a constant, so the call is dead code in the graph and still runs eagerly.
"""

from __future__ import annotations

import libcst as cst

from cslint.rule_api.context import RuleContext
from cslint.rule_api.findings import Fix


def guard_under_compile(node: cst.Call, ctx: RuleContext, kind: str) -> Fix | None:
    """Wrap the statement that is exactly the call `node` in `if not torch.compiler.is_compiling():`."""
    stmt = _statement_of(node, ctx)
    if stmt is None:
        return None
    torch, imports = ctx.torch_name()
    test = cst.UnaryOperation(cst.Not(), cst.parse_expression(f"{torch}.compiler.is_compiling()"))
    guarded = cst.If(test=test, body=cst.IndentedBlock([stmt.with_changes(leading_lines=[])]),
                     leading_lines=stmt.leading_lines)
    what = {"print": "printed", "warnings": "warned"}.get(kind, "logged")
    return Fix("unsafe", f"Skip it while torch.compile traces (`if not {torch}.compiler.is_compiling():`); unsafe: "
                         f"in compiled runs the message is never {what} (eager runs are unchanged)"
                         + ("; a `warnings` filter set to \"error\" no longer raises there" if kind == "warnings"
                            else ""),
               [(stmt, guarded)], imports)


def _statement_of(node: cst.Call, ctx: RuleContext) -> cst.SimpleStatementLine | None:
    """The line whose only statement is the call itself (not a value another expression uses)."""
    for candidate in ctx.walk(prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if type(candidate) is cst.SimpleStatementLine and len(candidate.body) == 1:
            small = candidate.body[0]
            if isinstance(small, cst.Expr) and small.value is node:
                return candidate
    return None
