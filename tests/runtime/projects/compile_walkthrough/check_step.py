import torch

from train import make_train_step


def make_step(device):
    torch.manual_seed(0)
    batches = [(torch.randn(8, 16, device=device), torch.randint(0, 4, (8,), device=device)) for _ in range(2)]
    return make_train_step(device), batches
