"""A finding's message, composed in one place.

A rule reports what is wrong (with the code, shortened) and, apart, one consequence: what it does on a
lazy tracer. The why and the how belong to the rule's page (`cslint rule CODE`) and the fix's title.
Where the target says otherwise, its note takes the consequence's place: for a graph break under
`--target compile`, what the break costs under the root's `torch.compile` options; else the rule's
`target_notes` for the target. Notes the analysis adds (an annotation the callers contradict, a guard
that does not hold under this tracer) follow in parentheses.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cslint.analysis.compile_options import CompileOptions
    from cslint.core.targets import Target

# what a graph break costs when the root's `fullgraph` is not known (no `torch.compile` call seen, or not a literal)
BREAK = "a graph break (an error under `fullgraph=True`)"


def target_note(code: str, target: Target, compiled: CompileOptions | None) -> str:
    from cslint.rules import rule_by_code

    if code.startswith(target.breaks):
        cost = compiled.cost() if compiled is not None else None
        return cost or BREAK
    rule = rule_by_code(code)
    return rule.target_notes.get(target.name, "") if rule is not None else ""


def compose(message: str, code: str, target: Target, compiled: CompileOptions | None = None,
            consequence: str = "") -> str:
    """What is wrong, then the target's note or else the rule's consequence."""
    message = message.rstrip(".")
    if target.graph != "the Cerebras trace":
        message = message.replace("the Cerebras trace", target.graph)
    then = target_note(code, target, compiled) or consequence
    if then:
        message = f"{message}: {then}"
    return message
