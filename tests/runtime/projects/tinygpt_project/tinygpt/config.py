from dataclasses import dataclass


@dataclass
class GPTConfig:
    vocab_size: int = 64
    block_size: int = 16
    n_embd: int = 32
    n_head: int = 4
    n_layer: int = 2
    dropout: float = 0.0
