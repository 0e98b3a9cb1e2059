"""Issue acceptance: each WSC1xx shape is flagged in forward and in helpers (same file, other file)."""

from __future__ import annotations

import textwrap

SHAPES = """
    if t.max() > 0:  # expect: WSC101
        t = t * 2
    while loss > eps:  # expect: WSC102
        loss = loss / 2
    y = a if (m == k).any() else b  # expect: WSC103
    assert torch.isfinite(h).all()  # expect: WSC104
    for _ in range(int(n)):  # expect: WSC107
        h = h + 1
    if mask.sum() < mask.numel():  # expect: WSC101
        h = h * mask
    if torch.isinf(h).any() and fp16:  # expect: WSC101
        h = torch.nan_to_num(h)
    return t + loss + y + h
"""

HELPER_FILE = "import torch\n\n\ndef shapes(t, loss, eps, a, b, m, k, h, n, mask, fp16):" + SHAPES

MODEL_FILE = '''import torch
from torch import nn

from helpers import shapes


def local_shapes(t, loss, eps, a, b, m, k, h, n, mask, fp16):''' + SHAPES + '''

class Model(nn.Module):
    def __init__(self, fp16: bool = False):
        super().__init__()
        self.fp16 = fp16
        self.eps = 1e-3

    def forward(self, t, a, b, m, k, h, n, mask):
        loss = t.pow(2).mean()
        fp16 = self.fp16
        eps = self.eps''' + textwrap.indent(SHAPES.replace("return", "out ="), "    ") + '''
        return out + local_shapes(t, loss, self.eps, a, b, m, k, h, n, mask, self.fp16) + shapes(
            t, loss, self.eps, a, b, m, k, h, n, mask, self.fp16)
'''


def _expected(source: str) -> list[tuple[str, int]]:
    found = []
    for number, line in enumerate(source.splitlines(), start=1):
        if "# expect: " in line:
            found.append((line.split("# expect: ")[1].strip(), number))
    return found


def test_every_shape_in_forward_local_helper_and_other_file(lint):
    diagnostics = lint({"model.py": MODEL_FILE, "helpers.py": HELPER_FILE}, select=("WSC1",))
    by_file = {name: [(d.code, d.line) for d in diagnostics if d.path.name == name]
               for name in ("model.py", "helpers.py")}
    assert by_file["model.py"] == _expected(MODEL_FILE)
    assert by_file["helpers.py"] == _expected(HELPER_FILE)
    chains = {tuple(d.chain) for d in diagnostics}
    assert chains == {("model.Model.forward",), ("model.Model.forward", "model.local_shapes"),
                      ("model.Model.forward", "helpers.shapes")}
