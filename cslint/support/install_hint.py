"""How to install cslint with an extra, for error messages and docs: cslint has no release on a package
index yet, so `pip install 'cslint[lsp]'` would fail (or install someone else's package of that name).
From a checkout, or straight from the git repository."""

from __future__ import annotations

GIT_URL = "https://github.com/cslint/cslint"


def install_hint(extra: str) -> str:
    return (f"from a checkout of cslint: pip install -e '.[{extra}]' (or pip install '/path/to/cslint[{extra}]'); "
            f"or from git: pip install 'cslint[{extra}] @ git+{GIT_URL}'")
