"""One model per rule family whose problem only shows when the step runs, plus static look-alikes."""

import torch
from torch import nn


class ClipOnOverflow(nn.Module):  # WSC1xx
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        if torch.isinf(h).any():  # runtime: WSC101
            h = torch.zeros_like(h)
        return h.relu().sum()


class LossScaleFromItem(nn.Module):  # WSC2xx
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        scale = h.abs().max().item()  # runtime: WSC201
        return (h / scale).sum()


class TensorLrUpdate(nn.Module):  # WSC4xx
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(8, 8))
        self.register_buffer("lr", torch.tensor(0.1))

    def forward(self, x):
        w = self.weight.detach().clone()
        w.add_(x.t() @ x, alpha=-self.lr)  # runtime: WSC401
        return w.sum()


class MaskedTokenLoss(nn.Module):  # WSC5xx
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        kept = h[h > 0]  # runtime: WSC502
        return kept.sum()


class PreciseNorm(nn.Module):  # WSC6xx
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        h = self.proj(x)
        norm = h.double().pow(2).sum().sqrt()  # runtime: WSC601
        return (h / norm.float()).sum()


class CountingModel(nn.Module):  # WSC7xx: a Python counter feeds the graph
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        warmup = min(self.calls / 10.0, 1.0)
        return (self.proj(x) * warmup).sum()  # runtime: WSC703


class CountingBufferModel(nn.Module):  # the same counter kept in a tensor buffer: stable
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls += 1
        warmup = torch.clamp(self.calls / 10.0, max=1.0)
        return (self.proj(x) * warmup).sum()


class StaticLookAlikes(nn.Module):  # shape branches, self.training, `is None`: nothing at runtime
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x, mask=None):
        h = self.proj(x)
        if h.shape[0] > 1:
            h = h * 0.5
        if self.training:
            h = self.dropout(h)
        if mask is None:
            mask = torch.ones_like(h)
        for _ in range(h.dim()):
            h = h + 1
        return (h * mask).sum()


def _batches(n=3):
    return [torch.randn(4, 8) for _ in range(n)]


def control_flow(device):
    return ClipOnOverflow().to(device), [b.to(device) for b in _batches(1)]


def host_transfer(device):
    return LossScaleFromItem().to(device), [b.to(device) for b in _batches(1)]


def scalar_argument(device):
    return TensorLrUpdate().to(device), [b.to(device) for b in _batches(1)]


def dynamic_shape(device):
    return MaskedTokenLoss().to(device), [b.to(device) for b in _batches(1)]


def wide_dtype(device):
    return PreciseNorm().to(device), [b.to(device) for b in _batches(1)]


def python_counter(device):
    return CountingModel().to(device), [b.to(device) for b in _batches(3)]


def tensor_counter(device):
    return CountingBufferModel().to(device), [b.to(device) for b in _batches(3)]


def look_alikes(device):
    return StaticLookAlikes().to(device), [b.to(device) for b in _batches(2)]


def no_device_argument():
    """A factory without a device parameter: the checker moves the module and tensors itself."""
    return ClipOnOverflow(), torch.randn(4, 8)
