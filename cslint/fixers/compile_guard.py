"""Skip a statement while torch.compile traces: `if not torch.compiler.is_compiling(): <statement>`.

Dynamo answers the predicate with a constant while it traces, so the statement is dead code in the graph
and still runs in eager runs. The fixes that need one statement out of the compiled step only (a log call,
a `requires_grad` switch) write this guard.
"""

from __future__ import annotations

import libcst as cst

from cslint.rule_api.context import RuleContext


def statement_of(node: cst.CSTNode, ctx: RuleContext) -> cst.SimpleStatementLine | None:
    """The line whose only statement is `node` (an assignment) or the call `node` (not a value another
    expression uses)."""
    for candidate in ctx.walk(prune=(cst.FunctionDef, cst.ClassDef, cst.Lambda)):
        if type(candidate) is cst.SimpleStatementLine and len(candidate.body) == 1:
            small = candidate.body[0]
            if small is node or (isinstance(small, cst.Expr) and small.value is node):
                return candidate
    return None


def skip_under_compile(stmt: cst.SimpleStatementLine, ctx: RuleContext
                       ) -> tuple[str, cst.If, frozenset[str]]:
    """The guarded statement, with how torch is spelled in the file and the imports the guard needs."""
    torch, imports = ctx.torch_name()
    test = cst.UnaryOperation(cst.Not(), cst.parse_expression(f"{torch}.compiler.is_compiling()"))
    guarded = cst.If(test=test, body=cst.IndentedBlock([stmt.with_changes(leading_lines=[])]),
                     leading_lines=stmt.leading_lines)
    return torch, guarded, imports
