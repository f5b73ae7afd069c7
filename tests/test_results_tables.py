"""The result tables of README.md and docs/*.md are what scripts/results_tables.py makes of results/h200/."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("results_tables", ROOT / "scripts" / "results_tables.py")
rt = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rt)


@pytest.mark.parametrize("page", rt.PAGES, ids=lambda p: p.name)
def test_committed_tables_are_current(page: Path) -> None:
    assert rt.stale_tables(page.read_text()) == [], f"run: python scripts/results_tables.py ({page.name})"


def test_every_table_is_on_a_page() -> None:
    used = {m.group("name") for page in rt.PAGES for m in rt.BLOCK.finditer(page.read_text())}
    assert used == set(rt.TABLES)


def test_an_edited_figure_is_caught() -> None:
    text = (ROOT / "docs" / "results.md").read_text()
    assert "**67.4%** (67.4%–67.5%)" in text  # resnet50 train b64, from its breakdown.json
    assert rt.stale_tables(text.replace("**67.4%** (67.4%–67.5%)", "**68.4%** (67.4%–67.5%)")) == ["seven-workloads"]


def test_unknown_table_is_an_error() -> None:
    with pytest.raises(KeyError, match="unknown table 'nope'"):
        rt.render("<!-- table: nope -->\n<!-- /table -->\n")


def test_render_leaves_text_outside_the_blocks_alone(tmp_path: Path) -> None:
    text = "before\n<!-- table: dlrm-bench -->\nold\n<!-- /table -->\nafter\n"
    out = rt.render(text)
    assert out.startswith("before\n<!-- table: dlrm-bench -->\n| problem |") and out.endswith("<!-- /table -->\nafter\n")
    assert "| 05 jagged → padded dense | 1.748 | 0.422 | 4.15× |" in out
