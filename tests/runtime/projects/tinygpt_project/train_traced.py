from tinygpt import GPTConfig, Lion, TinyGPT

try:
    import cerebras.pytorch as cstorch
except ImportError:  # the same script trains on the CPU without the Cerebras package
    class cstorch:  # noqa: N801
        @staticmethod
        def trace(step):
            return step


def make_traced_step(device="cpu"):
    model = TinyGPT(GPTConfig()).to(device)
    opt = Lion(model.parameters(), lr=1e-3)

    @cstorch.trace
    def train_step(idx, targets):
        loss = model(idx, targets)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    return train_step
