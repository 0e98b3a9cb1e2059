import torch
from torch import nn

try:
    import cerebras.pytorch as cstorch
except ImportError:  # the same script trains on CPU/GPU without the Cerebras package
    class cstorch:  # noqa: N801
        @staticmethod
        def trace(step):
            return step

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


@cstorch.trace
def training_step(inputs, targets):
    optimizer.zero_grad(set_to_none=False)
    loss = nn.functional.mse_loss(model(inputs), targets)
    loss.backward()
    norm = torch.nn.utils.clip_grad_norm_(
        model.parameters(),
        max_norm=1.0,
        error_if_nonfinite=True,
    )
    optimizer.step()
    return loss.detach(), norm


def run(seed):
    torch.manual_seed(seed)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    inputs, targets = torch.randn(32, 6), torch.randn(32, 1)
    results = [torch.stack(training_step(inputs, targets)) for _ in range(3)]
    model.load_state_dict(state)  # every run starts from the same weights
    optimizer.state.clear()
    return torch.stack(results), [p.detach().clone() for p in model.parameters()]
