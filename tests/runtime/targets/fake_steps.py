"""Tiny steps for the fake-tensor backend (tests/runtime/test_fake_backend.py): each construct the lazy
backend reports, in a step that closes over its model and optimizer, marked `# runtime: CODE`."""

import torch


@torch.library.custom_op("cslint_tests::doubled", mutates_args=())
def doubled(x: torch.Tensor) -> torch.Tensor:
    """An op with no fake kernel: it runs on the CPU and cannot run under fake tensors."""
    return x * 2


class Wrapped(RuntimeError):
    pass


def reads(device):
    model = torch.nn.Linear(4, 3).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        out = model(x)
        loss = out.pow(2).mean()
        scale = loss.item()  # runtime: WSC201
        if loss > 0:  # runtime: WSC101
            loss = loss * 2
        sizes = out.sum(1).tolist()  # runtime: TOLIST
        where = torch.nonzero(x > 0)  # runtime: WSC501
        kept = out[out > 0]  # runtime: WSC502
        (loss + where.sum() * 0 + kept.sum() * 0).backward()
        optimizer.step()
        optimizer.zero_grad()
        return loss.detach(), scale, sizes

    return step, [torch.randn(2, 4, device=device), torch.randn(2, 4, device=device)]


def unsupported(device):
    model = torch.nn.Linear(4, 3).to(device)

    def step(x):
        try:
            return doubled(model(x)).sum()  # runtime: FAILS
        except RuntimeError as exc:
            raise Wrapped("the step's own wrapper") from exc

    return step, [torch.randn(2, 4, device=device)]
