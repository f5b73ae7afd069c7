"""gpu/span_accounting.py: the step's saving split into the swapped modules' forward, their backward span and
what is left outside them, on a real (tiny, CPU) eager-BatchNorm swap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]



def test_accounting_splits_the_saving_by_hand(gpu_script) -> None:
    sa = gpu_script("span_accounting")
    seg = {"step": 0.0, "forward": 0.0, "backward": 0.0, "optimizer": 0.0, "marked_forward": 0.0}
    med = {"A": seg | {"step": 1000, "forward": 400, "backward": 500, "optimizer": 100, "marked_forward": 150},
           "B": seg | {"step": 600, "forward": 300, "backward": 220, "optimizer": 80, "marked_forward": 70},
           "A_hooked": {"span": 300}, "B_hooked": {"span": 50}}
    acc = sa.accounting(med)
    assert acc["step_saved"] == 400
    assert acc["marked_forward_saved"] == 80 and acc["span_saved"] == 250
    assert acc["unexplained"] == 400 - 330 and acc["unexplained_share"] == pytest.approx(70 / 330)
    assert (acc["forward_outside_marked"], acc["backward_outside_spans"], acc["optimizer_saved"]) == (20, 30, 20)


def test_a_tiny_cpu_run_finds_the_eager_norms_backward_in_its_spans(tmp_path: Path, gpu_script) -> None:
    sa = gpu_script("span_accounting")
    out = tmp_path / "acc.json"
    assert sa.main(["--device", "cpu", "--steps", "12", "--out", str(out)]) == 0
    got = json.loads(out.read_text())
    med = got["median_us"]
    # eager BatchNorm: about ten autograd nodes a layer against one, so its spans and its step are longer
    assert med["A_hooked"]["span"] > 3 * med["B_hooked"]["span"] > 0
    assert med["A"]["step"] > med["B"]["step"]
    assert got["accounting_us"]["span_saved"] > 0 and got["config"]["norm"] == "bn"


def test_the_committed_runs_leave_about_a_tenth_unexplained() -> None:
    runs = sorted((ROOT / "results/cpu/span_accounting").glob("*.json"))
    assert len(runs) == 13
    shares = [json.loads(p.read_text())["accounting_us"]["unexplained_share"] for p in runs]
    assert all(0.0 < s < 0.15 for s in shares)
