"""The runtime checker's own errors."""

from __future__ import annotations


class TargetError(Exception):
    """The target cannot be loaded or its factory returns something the checker cannot run."""
