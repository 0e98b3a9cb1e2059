"""Code-generation templates (transformers' `modular_*.py`) are reported once: in the generated module."""

from __future__ import annotations

import json
from pathlib import Path

from cslint.analysis.generated_code import generated_twin
from cslint.analysis.import_scan import scan_imports
from cslint.cli.main import main

MOE = """
import torch
from torch import nn


class TinyExperts(nn.Module):
    def forward(self, hidden, router_logits):
        expert_mask = torch.nn.functional.one_hot(router_logits.argmax(-1), 4)
        expert_hit = torch.greater(expert_mask.sum(dim=0), 0).nonzero()
        for expert_idx in expert_hit:
            hidden = hidden + self.experts[expert_idx](hidden)
        return hidden
"""
PACKAGE = {"zoo/__init__.py": "", "zoo/tiny/__init__.py": ""}


def _paths(diagnostics) -> list[str]:
    return sorted({d.path.name for d in diagnostics})


def test_the_template_is_not_reported_when_its_generated_module_is_linted(lint):
    found = lint({**PACKAGE, "zoo/tiny/modular_tiny.py": MOE, "zoo/tiny/modeling_tiny.py": MOE})
    assert _paths(found) == ["modeling_tiny.py"]


def test_a_template_alone_is_analysed(lint):
    assert _paths(lint({**PACKAGE, "zoo/tiny/modular_tiny.py": MOE})) == ["modular_tiny.py"]


def test_files_named_like_templates_without_a_twin_are_analysed(lint):
    found = lint({**PACKAGE, "zoo/tiny/modular_tiny.py": MOE, "zoo/tiny/modeling_other.py": MOE})
    assert _paths(found) == ["modeling_other.py", "modular_tiny.py"]


def test_the_import_scan_ties_a_template_to_its_twin():
    assert generated_twin("zoo.tiny.modular_tiny") == "zoo.tiny.modeling_tiny"
    assert generated_twin("zoo.tiny.modeling_tiny") is None
    assert generated_twin("zoo.tiny.modular_") is None
    assert "zoo.tiny.modeling_tiny" in scan_imports("import torch\n", "zoo.tiny.modular_tiny", False)
    assert scan_imports("x = 1\n", "zoo.tiny.modular_tiny", False) == ["zoo.tiny.modeling_tiny"]


def test_cached_template_report_follows_its_twin(tmp_path: Path, capsys):
    for name, text in {**PACKAGE, "zoo/tiny/modular_tiny.py": MOE, "zoo/tiny/modeling_tiny.py": MOE}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text.lstrip("\n"), encoding="utf-8")

    def files_reported() -> list[str]:
        main(["check", str(tmp_path / "zoo"), "--output-format", "json", "--cache-dir", str(tmp_path / ".cache")])
        return sorted({Path(f["filename"]).name for f in json.loads(capsys.readouterr().out)})

    assert files_reported() == ["modeling_tiny.py"]
    assert files_reported() == ["modeling_tiny.py"]  # from the cache
    (tmp_path / "zoo/tiny/modeling_tiny.py").unlink()
    assert files_reported() == ["modular_tiny.py"]
    (tmp_path / "zoo/tiny/modeling_tiny.py").write_text(MOE.lstrip("\n"), encoding="utf-8")
    assert files_reported() == ["modeling_tiny.py"]
