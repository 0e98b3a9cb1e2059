import torch

from tinygpt import GPTConfig, Lion, TinyGPT


def make_compiled_step(device="cpu"):
    model = TinyGPT(GPTConfig()).to(device)
    opt = Lion(model.parameters(), lr=1e-3)

    @torch.compile(fullgraph=False)
    def train_step(idx, targets):
        loss = model(idx, targets)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    return train_step
