"""Steps fed by their own DataLoader (`Step(fn, loader=...)`), for the runtime checker's tests: ten samples
in batches of four leave a last batch of two."""

import itertools

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, TensorDataset

from cslint.runtime import Step

MODULE_LOADER = DataLoader(TensorDataset(torch.randn(10, 3), torch.randn(10, 2)), batch_size=4)  # runtime: MODULE


def _regression_step(device):
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(inputs, targets):
        loss = torch.nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.detach()

    return step


def _samples():
    return TensorDataset(torch.randn(10, 3), torch.randn(10, 2))


def partial_last_batch(device):
    loader = DataLoader(  # runtime: WSC551
        _samples(),
        batch_size=4,
        shuffle=True,
    )
    return Step(_regression_step(device), loader=loader)


def full_batches(device):
    loader = DataLoader(_samples(), batch_size=4, shuffle=True, drop_last=True)
    return Step(_regression_step(device), loader=loader)


def loader_from_the_module(device):
    return Step(_regression_step(device), loader=MODULE_LOADER)


def batches_in_a_list(device):  # runtime: LIST
    batches = [(torch.randn(4, 3), torch.randn(4, 2)), (torch.randn(4, 3), torch.randn(4, 2)),
               (torch.randn(2, 3), torch.randn(2, 2))]
    return Step(_regression_step(device), loader=batches)


def endless_stream(device):
    batch = (torch.randn(4, 3), torch.randn(4, 2))
    return Step(_regression_step(device), loader=itertools.repeat(batch))


class Sentences(torch.utils.data.Dataset):
    def __len__(self):
        return 8

    def __getitem__(self, index):
        return torch.arange(1, 3 + index % 4)


def pad_to_longest(batch):
    return pad_sequence(batch, batch_first=True)


def padded_to_the_longest(device):
    torch.manual_seed(0)
    embedding = torch.nn.Embedding(8, 4).to(device)

    def step(tokens):
        return embedding(tokens).sum()

    loader = DataLoader(Sentences(), batch_size=2, collate_fn=pad_to_longest, drop_last=True)  # runtime: WSC552
    return Step(step, loader=loader)
