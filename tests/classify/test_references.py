"""Pinned reference outputs: `classify --json` of every shipped trace (tests/data/*.json.gz) equals its
committed file in tests/references/classify/, and docs/classification.md's table of shipped figures agrees with
those files. A change in classification shows up as a diff here; to accept it on purpose, run
`python -m pytest tests/classify/test_references.py --update-references` and commit the rewritten files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from addressable.cli import main

ROOT = Path(__file__).resolve().parents[2]
TRACES = sorted((ROOT / "tests" / "data").glob("*.json.gz"))
REFERENCES = ROOT / "tests" / "references" / "classify"


def reference_path(trace: Path) -> Path:
    return REFERENCES / (trace.name.removesuffix(".json.gz") + ".json")


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_classify_json_matches_its_reference(trace: Path, update_references: bool,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the output names the trace by the path given: keep it relative
    res = CliRunner().invoke(main, ["classify", str(trace.relative_to(ROOT)), "--json"])
    assert res.exit_code == 0, res.output
    ref = reference_path(trace)
    if update_references:
        ref.parent.mkdir(parents=True, exist_ok=True)
        ref.write_text(res.stdout)
    assert ref.is_file(), f"no reference for {trace.name}: run pytest {__file__} --update-references"
    assert res.stdout == ref.read_text(), f"classify --json of {trace.name} differs from {ref} " \
                                          "(if on purpose: --update-references, then review the diff)"


def test_every_reference_has_its_trace() -> None:
    assert {p.name for p in REFERENCES.glob("*.json")} == {reference_path(t).name for t in TRACES}


def readme_figures() -> list[dict[str, str]]:
    """The rows of the table of figures on the shipped traces (docs/classification.md; the README links it)."""
    lines = (ROOT / "docs" / "classification.md").read_text().splitlines()
    head = lines.index("| trace | addressable (GPU kernel time) | GEMM + attention | unclassified |")
    rows = []
    for line in lines[head + 2:]:
        if not line.startswith("|"):
            break
        trace, addressable, gemm_attention, unclassified = (c.strip() for c in line.strip("|").split("|"))
        rows.append({"trace": re.match(r"`([^`]+)`", trace).group(1), "addressable": addressable,
                     "gemm_attention": gemm_attention, "unclassified": unclassified})
    return rows


def test_readme_figures_match_the_references() -> None:
    rows = readme_figures()
    assert rows and {r["trace"] for r in rows} <= {t.name.removesuffix(".json.gz") for t in TRACES}
    for r in rows:
        doc = json.loads((REFERENCES / f"{r['trace']}.json").read_text())
        share = {c["category"]: c["share"] for c in doc["categories"]}
        assert r["addressable"] == f"{doc['addressable_fraction']:.1%}", r
        assert r["unclassified"] == f"{doc['unclassified_fraction']:.2%}", r
        expected = f"{share.get('gemm', 0.0) + share.get('attention', 0.0):.1%}"
        if share.get("conv"):
            expected += f" (+ conv {share['conv']:.1%})"
        assert r["gemm_attention"] == expected, r


def test_readme_table_parser_reads_every_column() -> None:
    rows = readme_figures()
    assert len(rows) == 2 and all(re.fullmatch(r"\d+\.\d+%.*", r["addressable"]) for r in rows)
