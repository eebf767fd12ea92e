"""Every relative link in the README and the guides under docs/ opens a file that exists, and every
`#anchor` names a heading of the file it points into (GitHub's anchors), so a section moved between
guides cannot leave a dead link behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest


ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _outside_code(text: str) -> str:
    """The text with fenced blocks and code spans removed: a link or heading inside them is an example."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return re.sub(r"`[^`\n]*`", "", text)


def anchors(page: Path) -> set[str]:
    """GitHub's anchor of each heading: lower case, punctuation dropped, spaces as hyphens."""
    headings = re.findall(r"^#{1,6} +(.+?) *$", _outside_code(page.read_text()), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


def links(page: Path) -> list[str]:
    return [target for target in LINK.findall(_outside_code(page.read_text()))
            if not re.match(r"[a-z]+:", target)]  # http:, https:, mailto: are not checked here


def test_the_readme_links_to_a_guide_per_job():
    named = set(links(ROOT / "README.md"))
    for guide in ("running", "own-kernel", "judging", "defences", "explaining", "many-gpus", "course", "variants", "design"):
        assert f"docs/{guide}.md" in named, guide


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(page):
    broken = []
    for target in links(page):
        path, _, anchor = target.partition("#")
        into = (page.parent / path).resolve() if path else page
        if not into.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (into.suffix != ".md" or anchor not in anchors(into)):
            broken.append(f"{target}: no heading with that anchor")
    assert not broken, broken


def test_the_anchor_rule_is_githubs():
    page = ROOT / "docs" / "defences.md"
    assert {"programs-judge", "measurements-you-can-trust", "impossible-speeds-and-clocks"} <= anchors(page)
