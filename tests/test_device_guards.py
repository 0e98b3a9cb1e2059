"""float64 and complex dtypes under a guard that holds off the device or only for a tensor already of that
dtype (cslint/analysis/device_guards.py): `if x.device.type == "cpu": x = x.double()` runs on the host,
`if x.dtype == torch.float64:` only for a tensor that is float64 already. WSC601/WSC602 stay quiet there,
and report the same code outside such a guard."""

from __future__ import annotations

from tests.conftest import codes

GUARDED = """
import torch
from torch import nn


class Grid(nn.Module):
    def forward(self, x, grid):
        coord_dtype = torch.float64 if x.dtype == torch.float64 else torch.float32
        if x.device.type == "cpu" and x.dtype == torch.float64:
            grid = grid.double()
        if x.is_cuda:
            x = x.double()
        if x.device.type != "cpu":
            x = x * 2
        else:
            grid = grid.to(torch.float64)
        if str(x.device) in ("cpu", "mps"):
            grid = grid.double()
        if x.device == torch.device("cpu"):
            grid = grid.double()
        if not x.dtype == torch.float64:
            x = x * 2
        else:
            x = x.double() * 2
        if x.is_complex() or x.dtype == torch.complex64:
            x = x.real
        if x.dtype == torch.complex64:
            x = torch.view_as_real(x.to(torch.complex128))
        return x.float() + grid.float() + x.to(coord_dtype).float()
"""

ON_DEVICE = """
import torch
from torch import nn


class Grid(nn.Module):
    def forward(self, x):
        if x.device.type == "lazy":
            x = x.double()
        if x.dtype == torch.float32:
            x = x.double()
        if x.device.type != "cpu":
            x = x.double()
        if x.device.type == "cpu" or x.numel() > 4:
            x = x.double()
        y = torch.float64 if x.shape[0] > 1 else torch.float32
        if x.dtype == torch.float64:
            x = torch.view_as_complex(x)
        return x.float().to(y)
"""


def test_no_dtype_finding_under_a_device_or_dtype_guard(lint):
    assert codes(lint(GUARDED)) == []


def test_the_same_code_on_the_device_is_reported(lint):
    assert codes(lint(ON_DEVICE)) == [("WSC601", 8), ("WSC601", 10), ("WSC601", 12), ("WSC601", 14),
                                      ("WSC601", 15), ("WSC602", 17)]
