"""WSC2xx: host transfers flagged in traced steps and their helpers, never outside traced code."""

from __future__ import annotations

import pytest

from tests.conftest import codes

HOST_FORMS = """
import math
import torch
from torch import nn

class Net(nn.Module):
    def forward(self, x):
        a = x.sum().item()
        b = x.tolist()
        c = x.numpy()
        d = x.cpu()
        e = x.to("cpu")
        f = x.to(device="cpu")
        g = x.to(torch.device("cpu"))
        h = float(x.mean())
        i = int(x.sum())
        j = bool(x.any())
        k = math.sqrt(x.var())
        l = max(0.0, x.max())
        m = f"{x.mean()}"
        return a, b, c, d, e, f, g, h, i, j, k, l, m
"""
EXPECTED = [("WSC201", 7), ("WSC201", 8), ("WSC201", 9), ("WSC202", 10), ("WSC202", 11), ("WSC202", 12),
            ("WSC202", 13), ("WSC203", 14), ("WSC203", 15), ("WSC203", 16), ("WSC204", 17), ("WSC205", 18),
            ("WSC206", 19)]


def test_every_form_is_flagged_in_forward(lint):
    assert codes(lint(HOST_FORMS, select=("WSC2",))) == EXPECTED


def test_every_form_is_flagged_in_a_helper_called_from_step(lint):
    # the same body as a helper of an optimizer's step, in another file of the project
    helper = HOST_FORMS.replace("class Net(nn.Module):\n    def forward(self, x):", "def inspect(x):")
    helper = "\n".join(line[4:] if line.startswith("        ") else line for line in helper.splitlines())
    optimizer = """
    import torch
    from helpers import inspect

    class Opt(torch.optim.Optimizer):
        def step(self, closure=None):
            for group in self.param_groups:
                for p in group["params"]:
                    inspect(p.grad)
    """
    found = lint({"helpers.py": helper, "opt.py": optimizer}, select=("WSC2",))
    assert [(d.code, d.line) for d in found if d.path.name == "helpers.py"] == [(c, n - 1) for c, n in EXPECTED]
    assert all(d.chain[0].endswith("Opt.step") for d in found)


def test_not_flagged_outside_traced_code(lint):
    code = """
    import math
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self, table):
            super().__init__()
            self.scale = float(table.max())
            self.ids = table.argmax(-1).tolist()

        def forward(self, x):
            return x * self.scale


    def evaluate(model, loader):
        total, worst = 0.0, 0.0
        for x, y in loader:
            loss = (model(x) - y).pow(2).mean()
            total += loss.item()
            worst = max(worst, float(loss))
            print(f"loss {loss:.3f} on {x.cpu().numpy().shape}", math.sqrt(loss))
        return total, worst


    def make_batches(data):
        return [torch.tensor(row).to("cpu") for row in data.tolist()]
    """
    assert lint(code, select=("WSC2",)) == []


def test_device_and_dtype_moves_are_not_host_transfers(lint):
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x, mask, device: torch.device):
            return x.to(device), x.to(torch.bfloat16), x.to(mask), x.to(x.device), x.to("cuda:0")
    """
    assert lint(code, select=("WSC2",)) == []


def test_item_fix_is_safe_only_for_zero_dim_tensors(lint):
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.gain = nn.Parameter(torch.ones(1))

        def forward(self, x):
            norm = x.norm()
            a = x / norm.item()
            b = x * self.gain.item()
            c = x.item() + 1
            return a, b, c
    """
    found = {d.line: d.fix for d in lint(code, select=("WSC201",))}
    assert found[11] is not None and found[11].applicability == "safe"
    assert found[12] is not None and found[12].applicability == "unsafe"
    # feeds Python arithmetic, not a tensor op: only the unsafe bookkeeping fix, which says x may not be 0-dim
    assert found[13] is not None and found[13].applicability == "unsafe"
    assert "not zero-dimensional" in found[13].message


def test_conversion_inside_range_is_left_to_the_trip_count_rule(lint):
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x, n):
            for _ in range(int(n)):
                x = x * 0.5
            return x
    """
    assert codes(lint(code, select=("WSC203", "WSC107"))) == [("WSC107", 6)]


def test_round_fix_gives_python_rounding(fix):
    torch = pytest.importorskip("torch")
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x):
            return round(x)
    """
    fixed = fix(code, unsafe=True)
    assert "torch.round(x)" in fixed
    namespace: dict[str, object] = {}
    exec(compile(fixed, "fixed", "exec"), namespace)
    values = [0.5, 1.5, 2.5, -0.5, -1.7, 3.04]
    out = namespace["Net"]()(torch.tensor(values, dtype=torch.float64))  # type: ignore[operator]
    assert out.tolist() == [round(v) for v in values]  # both round half to even


def test_clamp_fix_is_unsafe_only(fix):
    code = """
    import torch
    from torch import nn

    class Net(nn.Module):
        def forward(self, x, eps: float = 1e-6):
            return x / max(eps, x.abs().max().item())
    """
    assert "max(eps, x.abs().max().item())" in fix(code)
    assert "torch.clamp(x.abs().max().detach(), min=eps)" in fix(code, unsafe=True)


@pytest.mark.parametrize("target", ("wsc", "compile"))
def test_values_read_for_an_error_message_are_left_to_the_check(lint, target):
    code = """
    import torch
    from torch import nn

    class DomainEmbedding(nn.Module):
        def forward(self, x, domain_id):
            if torch.any(domain_id >= self.num_domains):
                raise ValueError(f"domain_id must be below {self.num_domains}, got {domain_id.tolist()}")
            if x.shape[0] != domain_id.shape[0]:
                raise ValueError("batch mismatch: %d ids" % int(domain_id.max()))
            first = domain_id[0].item()
            return self.fc(domain_id) * first
    """
    assert codes(lint(code, target=target)) == [("WSC101", 6), ("WSC201", 10)]


@pytest.mark.parametrize("target", ("wsc", "compile"))
def test_an_assert_message_is_built_only_when_the_assert_fails(lint, target):
    """#36 (set 2): `assert cond, '...{}'.format(y0)` formats y0 only when the assert fails; the assert on a
    tensor is its own finding, the message none, whatever builds it (f-string, .format, %, str(), .item())."""
    code = """
    import torch
    from torch import nn

    class Solver(nn.Module):
        def forward(self, y0, t):
            assert torch.isfinite(y0).all(), "non-finite state: {}".format(y0)
            assert t.dim() == 1, f"bad times {t}"
            assert t.dim() == 1, "bad times %s" % t
            assert t.dim() == 1, "bad times " + str(t) + " first " + str(t[0].item())
            return y0 * 2
    """
    assert codes(lint(code, target=target)) == [("WSC104", 6)]


@pytest.mark.parametrize("target", ("wsc", "compile"))
def test_python_abs_of_a_tensor_reads_nothing(lint, target):
    """#36 (set 2): `abs(t)` runs Tensor.__abs__, the op torch.abs: no value read, no finding; `round(t)`
    (a TypeError on a tensor) still is one."""
    code = """
    import torch
    from torch import nn

    class Step(nn.Module):
        def forward(self, x, x_star):
            gap = abs(x - x_star)
            size = abs(x).mean() + gap.sum()
            return size * round(x, 2)
    """
    assert codes(lint(code, target=target)) == [("WSC205", 8)]
