"""LayerDrop as transformers writes it (BART's encoder, wav2vec2's encoder): a flag drawn with
`torch.rand([])` per layer, then `if not to_drop: hidden = layer(hidden)` (BART's decoder: `continue`). The where fix makes the flag a
boolean tensor; the branch on it is then rewritten to run the layer every step and select its result
(unsafe: compute, zero gradients for a dropped layer, dropout's random stream). `run` uses layers without
randomness, and counts a missing gradient as zero."""

import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, n=4, dim=8, layerdrop=0.5):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n))
        self.layerdrop = layerdrop

    def forward(self, hidden_states):
        for encoder_layer in self.layers:
            to_drop = False
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                to_drop = torch.where(dropout_probability < self.layerdrop, True, to_drop)

            hidden_states = torch.where(torch.as_tensor(torch.logical_not(torch.as_tensor(to_drop)), device=hidden_states.device), encoder_layer(hidden_states), hidden_states)
        return hidden_states


class SyncedEncoder(nn.Module):
    def __init__(self, n=4, dim=8, layerdrop=0.5, synced_gpus=False):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n))
        self.layerdrop = layerdrop
        self.synced_gpus = synced_gpus

    def forward(self, hidden_states):
        synced_gpus = self.synced_gpus
        for layer in self.layers:
            skip_the_layer = False
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                skip_the_layer = dropout_probability < self.layerdrop
            # under fsdp or deepspeed zero3 all gpus must run in sync
            hidden_states = torch.where(torch.as_tensor(torch.logical_or(torch.logical_not(torch.as_tensor(skip_the_layer)), torch.as_tensor(synced_gpus)), device=hidden_states.device), layer(hidden_states), hidden_states)
        return hidden_states


class Decoder(nn.Module):
    def __init__(self, n=4, dim=8, layerdrop=0.5):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n))
        self.layerdrop = layerdrop

    def forward(self, hidden_states):
        for idx, decoder_layer in enumerate(self.layers):
            # add LayerDrop
            skip_layer = False
            if self.training and self.layerdrop > 0.0:
                dropout_probability = torch.rand([])
                skip_layer = dropout_probability < self.layerdrop

            hidden_states = torch.where(torch.as_tensor(skip_layer, device=hidden_states.device), hidden_states, decoder_layer(hidden_states))
        return hidden_states


class Model(nn.Module):
    def __init__(self, synced_gpus=False):
        super().__init__()
        self.encoder = Encoder()
        self.synced = SyncedEncoder(synced_gpus=synced_gpus)
        self.decoder = Decoder()

    def forward(self, x):
        return self.decoder(self.synced(self.encoder(x))).pow(2).mean()


def _batch(seed, device="cpu"):
    return (torch.randn(3, 8, generator=torch.Generator().manual_seed(seed)).to(device),)


def run(seed):
    torch.manual_seed(0)
    model = Model(synced_gpus=seed == 4)
    if seed == 3:
        model.eval()  # the flags stay Python bools
    torch.manual_seed(seed)
    loss = model(*_batch(seed))
    loss.backward()
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in model.parameters()]
    return torch.cat([loss.reshape(1)] + [g.flatten() for g in grads])


def runtime_target(device):
    """One compiled training step."""
    from cslint.runtime import Step

    torch.manual_seed(0)
    model = Model().to(device)

    def step(x):
        loss = model(x)
        return loss, torch.autograd.grad(loss, list(model.parameters()), allow_unused=True)

    return Step(step, [_batch(0, device), _batch(1, device)])
