"""Which of dynamo's registered graph breaks (torch/_dynamo/graph_break_registry.json) each rule's construct is.

Read from what dynamo 2.13 reports for each construct in a step compiled with `capture_scalar_outputs` and
`capture_dynamic_output_shape_ops` off (tests/test_graph_break_ids.py runs them). A code absent here is not a
graph break under dynamo: `assert` on a tensor is traced (`_assert_async`), `.cpu()` and `.numpy()` are
traced, `max(t, 1)` is traced, `for row in t` is unrolled, a recompile (WSC702, WSC703) is not a break.
"""

from __future__ import annotations

from dataclasses import dataclass

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


# rule code -> the id dynamo reports for it
GRAPH_BREAK_IDS: dict[str, str] = {
    "WSC101": "GB0170",  # Data-dependent branching
    "WSC102": "GB0170",
    "WSC103": "GB0170",
    "WSC105": "GB0170",
    "WSC106": "GB0170",
    "WSC201": "GB0124",
    "WSC203": "GB0124",
    "WSC204": "GB0033",  # Data dependent operator
    "WSC206": "GB0059",  # Failed to trace builtin operator (str)
    "WSC401": "GB0033",
    "WSC402": "GB0242",  # Attempted to call op with non-contiguous `out=` tensor
    "WSC501": "GB0036",  # Dynamic shape operator
    "WSC502": "GB0036",
    "WSC701": "GB0059",  # print
    "WSC704": "GB0033",  # np.random.* through torch._numpy
    "WSC706": "GB0208",  # torch.* op returned non-Tensor (the flags' context manager)
}

# (code, text in the source the finding's message quotes first; `^` anchors it at the start) -> the id when
# that construct is reported under another one; None: dynamo traces that construct
CONSTRUCT_IDS: dict[tuple[str, str], str | None] = {
    ("WSC107", "int("): "GB0124",  # `range(int(t))`: the int() is an Unsupported Tensor.item() call; dynamo
    # unrolls `for row in t` over t's static length: no break
    ("WSC201", ".tolist()"): "GB0109",  # Tensor.tolist() with non-integer tensor
    ("WSC201", ".numpy()"): None,
    ("WSC206", "f\""): "GB0088",  # an f-string raises inside dynamo: Observed exception
    ("WSC206", "f'"): "GB0088",
    ("WSC701", "log"): "GB0291",  # logging.Logger method not supported
    ("WSC704", "^random."): "GB0007",  # Attempted to call function marked as skipped
    ("WSC706", "opt_einsum.flags"): "GB0007",
}


def graph_break_id(code: str, message: str) -> str | None:
    """The registry id of the break a finding is, from its code and the source its message quotes first."""
    quoted = message.split("`", 2)[1] if message.count("`") >= 2 else ""
    for (construct_code, text), found in CONSTRUCT_IDS.items():
        if construct_code == code and (quoted.startswith(text[1:]) if text.startswith("^") else text in quoted):
            return found
    return GRAPH_BREAK_IDS.get(code)
