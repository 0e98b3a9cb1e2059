"""Remove a validation that raises on a tensor condition: `if lr_t not in [lr, 0.0]: raise ValueError(...)`.

A traced step cannot raise on a value it does not have yet; the check belongs where the values are set
(the constructor, the scheduler) or in a run outside the trace. Removing it is unsafe: the step no
longer stops on the bad input, so the message says where to move it.
"""

from __future__ import annotations

import libcst as cst

from cslint.rules.base import Fix, RuleContext


def remove_raising_check(node: cst.If, ctx: RuleContext) -> Fix | None:
    """`if <tensor condition>: raise ...` (no else, nothing but the raise): remove the statement."""
    if node.orelse is not None or not isinstance(node.body, cst.IndentedBlock):
        return None
    body = node.body.body
    if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1 or \
            not isinstance(body[0].body[0], cst.Raise):
        return None
    return Fix("unsafe", f"Remove the check `if {ctx.code(node.test)}: raise ...`; unsafe: the traced step no longer "
                         "stops on this input: check the values where they are set (the constructor, the "
                         "scheduler) or outside the traced step", [(node, cst.RemovalSentinel.REMOVE)])
