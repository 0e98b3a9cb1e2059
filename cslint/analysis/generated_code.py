"""Code-generation templates: files a generator expands into the module that really runs.

transformers writes each model twice: `modular_llama.py`, a template nobody imports, and
`modeling_llama.py`, generated from it. Both hold the same traced code; reporting both doubles every
finding. The generated twin is the one analysed; the template is not a source of roots while its twin
is in the project. The import scan lists the twin as one of the template's imports, so the template is
analysed (and cached) together with it and re-checked when the twin appears or goes.
"""

from __future__ import annotations

# template file prefix -> prefix of the file generated from it, in the same package
TEMPLATE_PREFIXES = {"modular_": "modeling_"}


def generated_twin(module_name: str) -> str | None:
    """`pkg.models.llama.modular_llama` -> `pkg.models.llama.modeling_llama`; None for other modules."""
    package, _, last = module_name.rpartition(".")
    for template, generated in TEMPLATE_PREFIXES.items():
        if last.startswith(template) and len(last) > len(template):
            twin = generated + last[len(template):]
            return f"{package}.{twin}" if package else twin
    return None
