"""gpu/backward_pool_scan.py: its tables from hand-made validation rows (no corpus)."""

from __future__ import annotations

import pandas as pd
import pytest


def _runs(scan) -> dict[float, pd.DataFrame]:
    """Four CNN pairs (two in part 12, dev3; two in part 14, heldout10) and one transformer pair, each measured
    at 2.0x: unpooled, every CNN pair is 10% under; at w 0.5 the CNN pairs are exact and the transformer 10% over."""
    pairs = ["c1", "c2", "c3", "c4", "t1"]
    base = pd.DataFrame({"pair": pairs, "measured": 2.0, "backward_scale": 0.5,
                         "regime_given": [scan.CNN] * 4 + ["cpu-bound training measured backward"],
                         "split": ["dev3", "dev3", "heldout10", "heldout10", "dev3"]}).set_index("pair")
    return {0.0: base.assign(given=[1.8, 1.8, 1.8, 1.8, 2.0]), 0.5: base.assign(given=[2.0, 2.0, 2.0, 2.0, 2.2])}


def test_summary_counts_within_5_percent_per_weight_and_cnn_apart(gpu_script) -> None:
    scan = gpu_script("backward_pool_scan")
    runs = _runs(scan)
    moved = {w: pd.Series([0.0, 0.02]) for w in runs}
    t = scan.summary(runs, moved).set_index("w")
    assert t.loc[0.0, "within"] == 1 and t.loc[0.5, "within"] == 4
    assert (t.loc[0.0, "cnn_within"], t.loc[0.5, "cnn_within"]) == (0, 4)
    assert (t.loc[0.0, "other_within"], t.loc[0.5, "other_within"]) == (1, 0)
    assert t.loc[0.0, "cnn_signed"] == pytest.approx(-0.1) and t.loc[0.5, "moved_max"] == pytest.approx(1.0202, rel=1e-4)


def test_held_apart_chooses_on_some_parts_and_scores_the_others(gpu_script) -> None:
    scan = gpu_script("backward_pool_scan")
    folds = scan.held_apart(_runs(scan)).set_index("fold")
    assert list(folds.index) == ["parts 10-13 -> 14-17", "parts 14-17 -> 10-13", "all but dev3 -> dev3",
                                 "all but heldout10 -> heldout10"]
    assert (folds["chosen_w"] == 0.5).all() and (folds["pairs"] == 2).all()
    assert (folds["within"] == 2).all() and (folds["within_unpooled"] == 0).all()
