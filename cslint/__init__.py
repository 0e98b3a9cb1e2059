"""cslint: lint, autofix and runtime-check PyTorch code for static-graph accelerators."""

__version__ = "0.1.0"
