"""Which of dynamo's registered graph breaks (torch/_dynamo/graph_break_registry.json) each rule's construct is:
the rules declare it (`graph_break`, `construct_graph_breaks`), cslint/core/rule_table.py holds it.

Read from what dynamo 2.13 reports for each construct in a step compiled with `capture_scalar_outputs` and
`capture_dynamic_output_shape_ops` off (tests/test_graph_break_ids.py runs them). A code absent here is not a
graph break under dynamo: `assert` on a tensor is traced (`_assert_async`), `.cpu()` and `.numpy()` are
traced, `max(t, 1)` is traced, `for row in t` is unrolled, a recompile (WSC702, WSC703) is not a break.
"""

from __future__ import annotations

from dataclasses import dataclass

from cslint.core.rule_table import CONSTRUCT_IDS, GRAPH_BREAK_IDS

# where the runtime links each id (torch/_dynamo/exc.py, get_gbid_documentation_link)
PAGE_URL = "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb{number}.html"


@dataclass(frozen=True)
class GraphBreak:
    id: str  # "GB0170"
    type: str  # dynamo's gb_type, "Data-dependent branching"
    explanation: str
    hint: str  # the runtime's first hint, "" when it gives none

    @property
    def url(self) -> str:
        return PAGE_URL.format(number=self.id[2:])


def graph_break_id(code: str, message: str) -> str | None:
    """The registry id of the break a finding is, from its code and the source its message quotes first."""
    quoted = message.split("`", 2)[1] if message.count("`") >= 2 else ""
    for (construct_code, text), found in CONSTRUCT_IDS.items():
        if construct_code == code and (quoted.startswith(text[1:]) if text.startswith("^") else text in quoted):
            return found
    return GRAPH_BREAK_IDS.get(code)
