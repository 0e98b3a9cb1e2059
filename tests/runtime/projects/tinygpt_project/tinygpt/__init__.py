"""A small GPT, its Lion optimizer and two training steps (one under torch.compile, one traced)."""

from tinygpt.config import GPTConfig
from tinygpt.model import TinyGPT
from tinygpt.optim import Lion

__all__ = ["GPTConfig", "Lion", "TinyGPT"]
