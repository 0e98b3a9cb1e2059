import torch

from model import Classifier


def make_train_step(device="cpu"):
    model = Classifier().to(device)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    @torch.compile
    def train_step(x, labels):
        loss = model(x, labels)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss.detach()

    return train_step


if __name__ == "__main__":
    step = make_train_step()
    for _ in range(10):
        print(step(torch.randn(8, 16), torch.randint(0, 4, (8,))).item())
