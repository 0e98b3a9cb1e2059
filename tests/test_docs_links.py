"""Every relative link in README.md and docs/ leads somewhere: the file exists and, for a link to a
heading (`page.md#heading`, `#heading`), the page has that heading. Links in code are not links."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
INDENTED_CODE = re.compile(r"^(?: {4}|\t).*$", re.MULTILINE)
CODE_SPAN = re.compile(r"(`+).+?\1", re.DOTALL)
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def prose(text: str) -> str:
    """The text without fenced and indented code blocks and code spans."""
    text = FENCE.sub("", text)
    text = INDENTED_CODE.sub("", text)
    return CODE_SPAN.sub("", text)


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lower case, punctuation but `-` and `_` dropped, spaces made
    `-`; a repeated heading gets `-1`, `-2`, ..."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", FENCE.sub("", page.read_text(encoding="utf-8")),
                              re.MULTILINE):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        anchor, n = slug, 0
        while anchor in found:
            n += 1
            anchor = f"{slug}-{n}"
        found.add(anchor)
    return found


def dead_links(page: Path) -> list[str]:
    dead = []
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if SCHEME.match(target):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            dead.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
            dead.append(f"{target} (no such heading)")
    return dead


def test_every_relative_link_resolves() -> None:
    dead = {str(page.relative_to(ROOT)): links for page in pages() if (links := dead_links(page))}
    assert not dead, f"dead links: {dead}"


def test_docs_index_links_every_page() -> None:
    index = ROOT / "docs" / "index.md"
    linked = {(index.parent / target.partition("#")[0]).resolve()
              for target in LINK.findall(prose(index.read_text(encoding="utf-8"))) if not SCHEME.match(target)}
    pages = {page.resolve() for page in (ROOT / "docs").glob("*.md")} - {index.resolve()}
    missing = sorted(page.name for page in pages - linked)
    assert not missing, f"docs/index.md does not link {missing}"


def test_a_dead_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# A heading (`--flag`)\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md) [ok](there.md#a-heading---flag) [web](https://example.com/x.md)\n"
                    "`[code](missing.md)`\n\n```\n[code](missing.md)\n```\n"
                    "[gone](missing.md) [no heading](there.md#nowhere) [self](#nowhere-here)\n", encoding="utf-8")
    assert dead_links(page) == ["missing.md (no such file)", "there.md#nowhere (no such heading)",
                                "#nowhere-here (no such heading)"]


def test_readme_shows_the_test_command_ci_runs() -> None:
    """`.ci/run` runs the README's test command: the command it runs after its comment is, verbatim, one
    of the README's shell blocks."""
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    command = lines[lines.index("# The README's test command:") + 1].strip()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", readme, re.MULTILINE | re.DOTALL)
    assert command + "\n" in blocks, f"README.md has no ```sh block that is exactly {command!r}"
