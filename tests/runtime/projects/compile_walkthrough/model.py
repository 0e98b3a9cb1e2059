from torch import nn
from torch.nn import functional as F


class Classifier(nn.Module):
    def __init__(self, features=16, classes=4, warmup=100):
        super().__init__()
        self.hidden = nn.Linear(features, 32)
        self.out = nn.Linear(32, classes)
        self.warmup = warmup
        self.calls = 0

    def forward(self, x, labels):
        self.calls += 1
        logits = self.out(F.relu(self.hidden(x)))
        loss = F.cross_entropy(logits, labels)
        if self.calls < self.warmup:  # a smaller loss while warming up
            loss = loss * (self.calls / self.warmup)
        if loss > 10.0:  # a diverging batch counts half
            loss = loss * 0.5
        return loss
