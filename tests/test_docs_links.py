"""Every relative link in README.md, docs/, gpu/README.md and benchmarks/README.md points at a file in the
repository, and every page of docs/ is linked from the README."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "gpu" / "README.md",
         ROOT / "benchmarks" / "README.md"]
LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    targets = [t.split("#")[0] for t in LINK.findall(page.read_text()) if not t.startswith(("http", "#", "mailto:"))]
    missing = [t for t in targets if not (page.parent / t).exists()]
    assert not missing, missing


def test_the_readme_links_every_docs_page() -> None:
    readme = (ROOT / "README.md").read_text()
    unlinked = [p.name for p in (ROOT / "docs").glob("*.md") if f"](docs/{p.name}" not in readme]
    assert not unlinked, unlinked
