"""Targets that fail: user code raising, a step that never ends, a factory returning nonsense."""

import time

import torch


def _explode(x):
    return x.reshape(3, 7)  # 4x8 cannot be reshaped to 3x7


def raises():
    return _explode, torch.randn(4, 8)


def hangs():
    def step(x):
        time.sleep(60)
        return x
    return step, torch.randn(2)


def wrong_return():
    return 42


def _load_config(name):
    raise ValueError(f"no such config: {name}")


def factory_raises():
    config = _load_config("tiny")
    return (lambda x: x), torch.randn(2) * config
