import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


def train(model, loader, optimizer):
    for inputs, targets in loader:
        optimizer.zero_grad()
        loss = nn.functional.mse_loss(model(inputs), targets)
        loss.backward()
        optimizer.step()


def run(seed, samples=64):  # 64 samples: full batches, the fix changes nothing
    torch.manual_seed(seed)
    dataset = TensorDataset(torch.randn(samples, 8), torch.randn(samples, 1))
    model = nn.Linear(8, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(
        dataset,
        batch_size=16,
        shuffle=True,
        generator=torch.Generator().manual_seed(seed),
        drop_last=True,
    )
    train(model, loader, optimizer)
    return model.weight.detach()
