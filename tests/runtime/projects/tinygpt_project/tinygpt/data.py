import torch


def random_batches(config, count, batch_size=2, device="cpu"):
    """`count` (tokens, next tokens) pairs of random token ids."""
    batches = []
    for _ in range(count):
        tokens = torch.randint(0, config.vocab_size, (batch_size, config.block_size + 1))
        batches.append((tokens[:, :-1].to(device), tokens[:, 1:].to(device)))
    return batches
