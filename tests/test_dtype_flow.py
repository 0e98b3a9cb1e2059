"""float64 made through a dtype held in a value (#36, held-out set 2, M7).

A dtype is a value like any other: `torch.float64` bound to a variable, an attribute, a parameter's default or
a module-level constant keeps what it is, and so does a float64 tensor made at import. WSC601 reports where
traced code makes a float64 tensor with such a dtype or brings such a tensor into the graph; a dtype taken from
an input (`y0.dtype`) is not known to be float64 and stays quiet, and float64 made outside traced code is not
reported there.
"""

from __future__ import annotations

from tests.conftest import codes


def test_a_dtype_attribute_from_a_parameter_default(lint):
    code = """
    import torch
    from torch import nn

    class Integrator(nn.Module):
        def __init__(self, tol, time_dtype=torch.float64):
            super().__init__()
            self.tol = tol
            self.time_dtype = time_dtype

        def forward(self, x, t):
            tol = torch.as_tensor(self.tol, dtype=self.time_dtype, device=x.device)
            t = t.to(self.time_dtype)
            return x * tol.float(), t
    """
    assert codes(lint(code, target="wsc")) == [("WSC601", 11), ("WSC601", 12)]


def test_a_module_level_dtype_constant(lint):
    code = """
    import torch
    from torch import nn

    GRID_DTYPE = torch.double

    class Grid(nn.Module):
        def forward(self, x):
            steps = torch.linspace(0, 1, 8, dtype=GRID_DTYPE)
            return x * steps.sum().float()
    """
    assert codes(lint(code, target="wsc")) == [("WSC601", 8)]


def test_a_float64_tensor_made_at_import_moved_into_the_step(lint):
    code = """
    import torch
    from torch import nn

    _WEIGHTS = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)

    class Blend(nn.Module):
        def forward(self, x):
            w = _WEIGHTS.to(x.device)
            return x * w.float()
    """
    assert codes(lint(code, target="wsc")) == [("WSC601", 8)]


def test_a_dtype_variable_promoted_and_passed_on(lint):
    code = """
    import torch
    from torch import nn

    class Stepper(nn.Module):
        def __init__(self, dtype=torch.float64):
            super().__init__()
            self.dtype_ = dtype

        def forward(self, x):
            dtype = torch.promote_types(self.dtype_, x.dtype)
            h = torch.ones((), dtype=dtype)
            return x * h.float()
    """
    assert codes(lint(code, target="wsc")) == [("WSC601", 11)]


def test_a_dtype_from_an_input_stays_quiet(lint):
    code = """
    import torch
    from torch import nn

    _WEIGHTS = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64)

    class Integrator(nn.Module):
        def __init__(self, y0):
            super().__init__()
            self.state_dtype = y0.dtype

        def forward(self, x, t):
            dtype = x.dtype
            tol = torch.as_tensor(1e-3, dtype=dtype, device=x.device)
            w = _WEIGHTS.to(device=x.device, dtype=x.dtype)
            return (x * tol * w).to(self.state_dtype), t.to(t.dtype)
    """
    assert codes(lint(code, target="wsc")) == []


def test_float64_made_outside_traced_code_is_not_reported_there(lint):
    code = """
    import torch
    from torch import nn

    TABLE_DTYPE = torch.float64
    _TABLE = torch.tensor([1.0, 2.0], dtype=TABLE_DTYPE)

    def build_table(n):
        return torch.zeros(n, dtype=TABLE_DTYPE)

    class Lookup(nn.Module):
        def forward(self, x):
            return x * 2
    """
    assert codes(lint(code, target="wsc")) == []


def test_a_dtype_bound_in_the_step_is_reported_once(lint):
    code = """
    import torch
    from torch import nn

    class Step(nn.Module):
        def forward(self, x):
            dtype = torch.float64
            h = torch.as_tensor(0.1, dtype=dtype)
            return x * h.float()
    """
    assert codes(lint(code, target="wsc")) == [("WSC601", 6)]
