"""Real Python files for tests that compare a shortcut with the slow, obvious way."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def real_files(torch_sample: int, seed: int) -> list[Path]:
    """cslint's own sources, the examples and the fixtures, and a sample of the installed torch."""
    files = sorted((ROOT / "cslint").rglob("*.py")) + sorted((ROOT / "examples").rglob("*.py"))
    files += sorted((ROOT / "tests" / "fixtures").rglob("*.py"))
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        torch_files = sorted(Path(next(iter(spec.submodule_search_locations))).rglob("*.py"))
        files += random.Random(seed).sample(torch_files, torch_sample)
    return files
