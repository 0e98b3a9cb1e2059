import torch


def collate(batch, pad_id=0):
    # Runs eagerly in the data loader: tensor conditions are fine here.
    lengths = torch.tensor([len(x) for x in batch])
    if lengths.max() > 512:
        raise ValueError("sequence too long")
    out = torch.full((len(batch), int(lengths.max())), pad_id)
    for i, seq in enumerate(batch):
        out[i, : len(seq)] = torch.as_tensor(seq)
    return out


def evaluate(model, loader):
    correct = 0
    for inputs, labels in loader:
        preds = model(inputs).argmax(-1)
        if (preds == labels).all():
            correct += 1
    return correct
