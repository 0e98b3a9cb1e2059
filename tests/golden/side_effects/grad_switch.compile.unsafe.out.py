"""`requires_grad` switched on inside the step: a feature encoder marks its input view as requiring grad so
that reentrant checkpointing computes its convolutions' gradients, and a quantizer's auxiliary loss starts
from a zero buffer made differentiable. Dynamo breaks the graph at each switch. The fix skips them while
torch.compile traces; the compiled graph differentiates through the checkpoint without the flag."""

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class FeatureEncoder(nn.Module):
    def __init__(self, checkpointing=True):
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv1d(1, 4, 3), nn.Conv1d(4, 4, 3)])
        self.checkpointing = checkpointing

    def forward(self, values):
        hidden = values[:, None]
        # reentrant checkpointing only differentiates what follows an input that requires grad
        if self.checkpointing and self.training:
            if not torch.compiler.is_compiling():
                hidden.requires_grad = True
        for conv in self.convs:
            if self.checkpointing and self.training:
                hidden = checkpoint(conv, hidden, use_reentrant=True)
            else:
                hidden = conv(hidden)
        return hidden


class Quantizer(nn.Module):
    def __init__(self, dim=4, codes=8):
        super().__init__()
        self.codebook = nn.Parameter(torch.randn(codes, dim))
        self.register_buffer("zero", torch.tensor(0.0), persistent=False)

    def forward(self, x):
        distances = torch.cdist(x, self.codebook)
        quantized = self.codebook[distances.argmin(dim=-1)]
        aux_loss = self.zero
        if self.training:
            if not torch.compiler.is_compiling():
                aux_loss.requires_grad_()
        aux_loss = aux_loss + (quantized - x.detach()).pow(2).mean()
        return x + (quantized - x).detach(), aux_loss


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = FeatureEncoder()
        self.quantizer = Quantizer()

    def forward(self, values):
        features = self.encoder(values).transpose(1, 2)
        quantized, aux_loss = self.quantizer(features)
        return quantized.pow(2).mean() + aux_loss


def _batch(seed, device="cpu"):
    return torch.randn(2, 16, generator=torch.Generator().manual_seed(seed)).to(device)


def run(seed):
    torch.manual_seed(0)
    model = Net()
    loss = model(_batch(seed))
    loss.backward()
    return torch.cat([loss.reshape(1)] + [p.grad.flatten() for p in model.parameters()])


def runtime_target(device):
    """One compiled training step."""
    from cslint.runtime import Step

    torch.manual_seed(0)
    model = Net().to(device)

    def step(values):
        loss = model(values)
        loss.backward()  # reentrant checkpoints do not support torch.autograd.grad
        grads = [p.grad.detach().clone() for p in model.parameters()]
        model.zero_grad(set_to_none=True)
        return [loss.detach()] + grads

    return Step(step, [(_batch(0, device),), (_batch(1, device),)])
