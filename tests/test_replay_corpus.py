"""gpu/replay_corpus.py (the replay validation corpus, issue 27): its pair table, the dev/heldout split
committed before any data, and a smoke run of a few pairs on the CPU (tiny sizes) through the real code."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import json
import statistics
import subprocess
import sys
import tarfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from addressable.trace.reader import load_trace

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "gpu" / "replay_corpus.py"


def _module():
    spec = importlib.util.spec_from_file_location("replay_corpus", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["replay_corpus"] = mod  # dataclasses look their module up while the class is built
    spec.loader.exec_module(mod)
    return mod


def test_corpus_covers_the_regimes_and_swap_sizes() -> None:
    rc = _module()
    names = [p.name for p in rc.PAIRS]
    assert len(set(names)) == len(names) >= 24
    assert len({p.regime for p in rc.PAIRS}) >= 8
    assert {"tiny", "mlp", "block"} <= {p.swap for p in rc.PAIRS}
    for part in (1, 2):  # each device call holds every regime, and its estimate fits the default budget
        ps = [p for p in rc.PAIRS if p.part == part]
        assert {p.regime for p in ps} == {p.regime for p in rc.PAIRS if p.part < 3}
        assert sum(p.est_s for p in ps) + 30 < 450


def test_split_is_committed_follows_its_rule_and_is_balanced() -> None:
    rc = _module()
    with open(ROOT / "results/h200/replay_corpus/split.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    committed = {r["pair"]: r["split"] for r in rows}
    assert committed == rc.split_of(rc.PAIRS)
    halves = Counter(committed.values())
    assert abs(halves["dev"] - halves["heldout"]) <= 1
    first = [p for p in rc.PAIRS if p.part < 3]
    for regime in {p.regime for p in first}:
        assert {committed[p.name] for p in first if p.regime == regime} == {"dev", "heldout"}, regime


def test_part_3_is_a_second_held_out_set_of_new_pairs_over_every_regime() -> None:
    rc = _module()
    old, new = [p for p in rc.PAIRS if p.part < 3], [p for p in rc.PAIRS if p.part == 3]
    assert len(new) >= 13 and {p.regime for p in new} == {p.regime for p in old}
    assert set(rc.split_of(rc.PAIRS)[p.name] for p in new) == {"heldout2"}
    assert not {p.name for p in new} & {p.name for p in old}
    # one device call: a regime each first, so a budget cut keeps every regime
    assert {p.regime for p in new[:8]} == {p.regime for p in old}


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict[str, bytes]]:
    res = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path / "out"), "--smoke", *args],
                         capture_output=True, text=True, timeout=600)
    files: dict[str, bytes] = {}
    for tar in sorted((tmp_path / "out").glob("replay_corpus_part*.tar")):
        with tarfile.open(tar) as t:
            for m in t.getmembers():
                files[m.name] = t.extractfile(m).read()
    return res, files


@pytest.mark.slow
def test_smoke_run_writes_pairs_the_validation_can_read(tmp_path: Path) -> None:
    pairs = ["two-stream-layernorm", "compiled-region-b1-layernorm", "bert-train-b4-layernorm"]
    res, files = _run(tmp_path, "--pairs", ",".join(pairs))
    assert res.returncode == 0, res.stderr[-2000:]
    assert "3 of 3 pairs captured" in res.stdout
    over = json.loads(files["part-x/profiler_overhead.json"])
    assert set(over["kinds"]) == {"add", "view", "linear", "record_function"}
    assert over["kinds"]["view"]["events_per_op"]["cpu_op"] == pytest.approx(1.0, abs=0.1)
    for name in pairs:
        meta = json.loads(files[f"part-x/{name}.json"])
        n = len(meta["round"])
        assert n > 0 and all(len(meta[k][v]) == n for k in ("step_ms", "cpu_ms", "swap_cpu_ms") for v in "AB")
        assert meta["split"] in ("dev", "heldout") and meta["swap_calls_per_step"]["A"] > 0
        assert meta["module_cpu"]["A"]["modules"] or name.startswith("two-stream")
        for trace in meta["traces"]["A"] + meta["traces"]["B"]:
            assert f"part-x/{trace}" in files
    # the swapped group is marked in both traces, and holds fewer ops in B (eager LayerNorm: 9 ops; fused: 1)
    ops = {k: _ops_in_swap_group(files[f"part-x/bert-train-b4-layernorm.{k}.json.gz"]) for k in "AB"}
    assert ops["B"] > 0 and ops["A"] > 2 * ops["B"]


def _ops_in_swap_group(gz: bytes) -> int:
    """CPU ops that start inside a swap_group range (same thread), in a gzipped trace."""
    import gzip
    ev = [e for e in json.loads(gzip.decompress(gz))["traceEvents"] if e.get("ph") == "X"]
    groups = [(e["tid"], e["ts"], e["ts"] + e["dur"]) for e in ev if e["name"] == "swap_group"]
    return sum(1 for e in ev if e.get("cat") == "cpu_op"
               and any(t == e["tid"] and a <= e["ts"] <= b for t, a, b in groups))


@pytest.mark.parametrize(("part", "split"), [(4, "heldout3"), (5, "heldout4"), (6, "heldout5"), (7, "heldout6"),
                                           (8, "heldout7"), (9, "heldout8")])
def test_parts_4_to_9_are_further_held_out_sets_of_new_pairs_over_every_regime(part: int, split: str) -> None:
    rc = _module()
    old, new = [p for p in rc.PAIRS if p.part < part], [p for p in rc.PAIRS if p.part == part]
    assert len(new) >= 13 and {p.regime for p in new} == {p.regime for p in old}
    assert set(rc.split_of(rc.PAIRS)[p.name] for p in new) == {split}
    assert not {p.name for p in new} & {p.name for p in old}
    assert {p.regime for p in new[:8]} == {p.regime for p in old} and sum(p.est_s for p in new) + 30 < 450


def test_part_10_captures_earlier_training_pairs_again_and_part_11_is_a_new_training_held_out_set() -> None:
    rc = _module()
    split = rc.split_of(rc.PAIRS)
    earlier = {p.name: p for p in rc.PAIRS if p.part < 10}
    again = [p for p in rc.PAIRS if p.part == 10]
    assert len(again) >= 16 and {split[p.name] for p in again} == {"dev2"}
    for p in again:  # the same pair (builder, regime) under a new name
        first = earlier[p.name.removesuffix("-r10")]
        assert (p.build, p.regime, p.swap) == (first.build, first.regime, first.swap) and first.part < 10
    new = [p for p in rc.PAIRS if p.part == 11]
    assert len(new) >= 16 and {split[p.name] for p in new} == {"heldout9"}
    assert not {p.name for p in new} & set(earlier)
    assert all(p.regime.startswith("train") or p.regime == "cnn" for p in new)
    assert {p.swap for p in new[:5]} == {p.swap for p in new} and sum(p.est_s for p in new) + 30 < 450


def test_part_12_captures_held_out_9_again_with_the_interleaved_backward_pass() -> None:
    rc = _module()
    split = rc.split_of(rc.PAIRS)
    held = {p.name: p for p in rc.PAIRS if p.part == 11}
    again = [p for p in rc.PAIRS if p.part == 12]
    assert {p.name.removesuffix("-r12") for p in again} == set(held) and {split[p.name] for p in again} == {"dev3"}
    for p in again:  # the same pair under a new name
        first = held[p.name.removesuffix("-r12")]
        assert (p.build, p.regime, p.swap) == (first.build, first.regime, first.swap)


def test_part_13_repeats_part_12_and_parts_14_15_are_new_held_out_sets_of_training_pairs() -> None:
    rc = _module()
    split = rc.split_of(rc.PAIRS)
    by_name = {p.name: p for p in rc.PAIRS}
    third = [p for p in rc.PAIRS if p.part == 13]
    assert {p.name.removesuffix("-r13") + "-r12" for p in third} == {p.name for p in rc.PAIRS if p.part == 12}
    assert {split[p.name] for p in third} == {"dev4"}
    for p in third:
        first = by_name[p.name.removesuffix("-r13")]
        assert (p.build, p.regime, p.swap) == (first.build, first.regime, first.swap)
    new = [p for p in rc.PAIRS if p.part == 14]
    earlier = {p.name for p in rc.PAIRS if p.part < 14}
    assert len(new) == 18 and {split[p.name] for p in new} == {"heldout10"} and not {p.name for p in new} & earlier
    assert all(p.regime.startswith("train") or p.regime == "cnn" for p in new)
    assert {p.swap for p in new} == {"tiny", "block", "attention", "mlp"} and sum(p.est_s for p in new) + 30 < 380
    later = [p for p in rc.PAIRS if p.part == 15]  # held-out 11: more new training pairs, every swap kind first
    assert len(later) == 18 and {split[p.name] for p in later} == {"heldout11"}
    assert not {p.name for p in later} & (earlier | {p.name for p in new})
    assert {p.swap for p in later[:4]} == {p.swap for p in later} and sum(p.est_s for p in later) + 30 < 380
    last = [p for p in rc.PAIRS if p.part == 16]  # held-out 12: 17 more, every swap kind first
    assert len(last) == 17 and {split[p.name] for p in last} == {"heldout12"}
    assert not {p.name for p in last} & {p.name for p in rc.PAIRS if p.part < 16}
    assert {p.swap for p in last[:4]} == {p.swap for p in last} and sum(p.est_s for p in last) + 30 < 380


def test_parts_17_18_are_held_outs_13_14_with_other_cnns_first() -> None:
    rc = _module()
    split = rc.split_of(rc.PAIRS)
    new = [p for p in rc.PAIRS if p.part == 17]
    assert len(new) == 17 and {split[p.name] for p in new} == {"heldout13"}
    assert not {p.name for p in new} & {p.name for p in rc.PAIRS if p.part < 17}
    assert [p.name.split("-")[0] for p in new[:3]] == ["resnet34", "mobilenetv2", "resnet50"]
    assert {p.swap for p in new} == {"tiny", "block", "attention", "mlp"} and sum(p.est_s for p in new) + 30 < 350
    later = [p for p in rc.PAIRS if p.part == 18]  # held-out 14: seven more CNN architectures first
    assert len(later) == 15 and {split[p.name] for p in later} == {"heldout14"}
    assert not {p.name for p in later} & {p.name for p in rc.PAIRS if p.part < 18}
    assert all(p.regime == "cnn" for p in later[:7]) and sum(p.est_s for p in later) + 30 < 420


def _new_part(part: int, split_name: str, n: int, first: list[str], trains: int, budget_s: float) -> None:
    """Part `part` holds n pairs new to the corpus, all `split_name`, led by `first` (names' first words), with
    `trains` training pairs, and its estimate fits a device call of `budget_s`."""
    rc = _module()
    split = rc.split_of(rc.PAIRS)
    new = [p for p in rc.PAIRS if p.part == part]
    assert len(new) == n and {split[p.name] for p in new} == {split_name}
    assert not {p.name for p in new} & {p.name for p in rc.PAIRS if p.part < part}
    assert [p.name.split("-")[0] for p in new[:len(first)]] == first
    assert sum("train" in p.name for p in new) == trains and sum(p.est_s for p in new) + 30 < budget_s


def test_part_19_is_held_out_15_with_the_class_next_members_first() -> None:
    """ConvNeXt and Swin (convolutions and LayerNorms; `is_convnet` puts them on the other side of its line) and
    three more BatchNorm CNNs first, then transformer training swaps and a ConvNeXt inference swap: new pairs, all
    heldout15, fitting one device call's budget."""
    _new_part(19, "heldout15", 11, ["convnext", "swint", "mobilenetv3s", "mnasnet05", "wideresnet50"], 10, 400)


def test_part_20_is_held_out_16_with_grouped_conv_and_groupnorm_cnns_first() -> None:
    """RegNetY and RegNetX-800MF (grouped convolutions: held-out 14's RegNetX was the first multi-stream CNN) and a
    GroupNorm ResNet-18 first, then ResNet-50 training at batch 64 and ResNet-18 inference at 256 (GPU-bound regimes
    nothing had checked), other CNNs, ConvNeXt and Swin at new batches and transformer training swaps: new pairs, all
    heldout16, fitting one device call's budget."""
    _new_part(20, "heldout16", 15, ["regnety400mf", "regnetx800mf", "resnet18"], 13, 420)


def test_part_28_is_held_out_24_with_batchnorm_training_in_its_inputs_dtype_first() -> None:
    """BatchNorm training whose eager BatchNorm returns its input's dtype (-bnkd) first, then three of them as
    before: new pairs, all heldout24, every one training, fitting one device call's budget."""
    _new_part(28, "heldout24", 13, ["resnet18", "resnet18", "resnet50", "resnet50"], 13, 480)
    rc = _module()
    new = [p.name for p in rc.PAIRS if p.part == 28]
    assert sum(n.endswith("-bnkd") for n in new) == 10
    assert {n.removesuffix("-bn") + "-bnkd" for n in new if n.endswith("-bn")} <= set(new)


def test_part_29_is_held_out_25_with_groupnorm_beyond_resnet18_first() -> None:
    """GroupNorm training on four other CNNs first, then dtype-keeping BatchNorm training: new pairs, all heldout25,
    every one training, fitting one device call's budget."""
    _new_part(29, "heldout25", 10, ["resnet50", "mobilenetv2", "regnety400mf", "resnet34"], 10, 480)
    rc = _module()
    new = [p.name for p in rc.PAIRS if p.part == 29]
    assert sum("-gn-" in n for n in new) == 5 and sum(n.endswith("-bnkd") for n in new) == 5


def test_part_30_is_held_out_26_two_stream_swaps_with_the_gpus_waits_recorded() -> None:
    """Two-stream swaps at sizes the corpus never ran, each side-stream swap kind twice, then four with the swap on the
    main stream, all heldout26, fitting one device call's budget; part 30 is the first whose traces record the GPU's
    waits, and no earlier part does."""
    _new_part(30, "heldout26", 12, ["two"], 0, 300)
    rc = _module()
    new = [p for p in rc.PAIRS if p.part == 30]
    assert {p.regime for p in new} == {"multi-stream"}
    side = [p.name for p in new if p.swap == "side-stream"]
    assert sorted(n.split("-", 3)[3] for n in side) == sorted(2 * ["gelu", "layernorm", "rmsnorm", "small-gelu"])
    assert [p.name for p in new if p.swap == "main-stream"] == [
        f"two-stream-main-g{g}-{k}" for k in ("gelu", "layernorm") for g in (2, 4)]
    assert rc.SYNC_RECORDS_FROM == 30


def test_the_same_dtype_eager_batchnorm_returns_its_inputs_dtype() -> None:
    """The corpus's eager BatchNorm returns float32 for bf16 activations (its float32 parameters promote them);
    held-out 24's returns bf16, as nn.BatchNorm2d does under autocast, with the same values."""
    import torch
    rc = _module()
    bn = torch.nn.BatchNorm2d(4)
    x = torch.randn(2, 4, 3, 3).to(torch.bfloat16)
    plain, same = rc.EagerBatchNorm(bn).train(), rc.EagerBatchNormSameDtype(bn).train()
    assert plain(x).dtype == torch.float32 and same(x).dtype == torch.bfloat16
    torch.testing.assert_close(same(x), plain(x).to(torch.bfloat16))


def test_part_27_is_held_out_23_with_inference_for_the_host_time_first() -> None:
    """Inference at batches where A's GPU about holds the step and B's CPU will (the class replay.HOST_FIRST moves
    most) first, then inference the CPU holds and a side-stream pair, none of them training: new pairs, all
    heldout23, fitting one device call's budget."""
    _new_part(27, "heldout23", 18, ["resnet18", "mobilenetv2", "mobilenetv3l", "efficientnetb0"], 0, 480)


def test_part_26_is_held_out_22_with_gpu_bound_inference() -> None:
    """GPU-bound inference, where every launch queues (the typical launch latency's class), then two GPU-bound
    training pairs: new pairs, all heldout22, fitting one device call's budget."""
    _new_part(26, "heldout22", 14, ["resnet34", "resnet18", "resnet50"], 2, 420)


def test_part_25_is_held_out_21_with_gpu_bound_inference_then_training() -> None:
    """Inference where A's GPU holds the step first (the regimes the validation's median inputs moved most), then
    training swaps (the development data they moved the other way): new pairs, all heldout21, fitting one device
    call's budget."""
    _new_part(25, "heldout21", 15, ["resnet18", "efficientnetb0", "resnet34"], 8, 420)


def test_part_24_is_held_out_20_with_the_device_only_copies_class_first() -> None:
    """Inference near where A's CPU and GPU tie, led by DenseNet (its torch.cat's device copies) and EfficientNet (the
    pairs the replay's device-only copies moved), on CNNs and batches no earlier part ran, then GPU-bound inference,
    DenseNet training and transformer inference: new pairs, all heldout20, fitting one device call's budget."""
    _new_part(24, "heldout20", 16, ["resnet18", "densenet121", "efficientnetb0"], 1, 420)


def test_part_23_is_held_out_19_with_co_limited_inference() -> None:
    """Inference at batches near where A's CPU and GPU tie (the co-limited regime, whose interval held-outs 17-18's
    misses fit), on CNNs and batches no earlier part ran: new pairs, all heldout19, fitting one device call's
    budget."""
    _new_part(23, "heldout19", 15, ["resnet18", "resnet34", "efficientnetb0", "mobilenetv3l"], 0, 420)


def test_part_22_is_held_out_18_with_the_host_times_class_first() -> None:
    """Inference at batches where A's GPU holds the step and B's CPU may (other CNNs and batches than held-out 17's:
    the host time fixes their CPU scale), then transformer inference at large batch and GPU-bound training: new
    pairs, all heldout18, fitting one device call's budget."""
    _new_part(22, "heldout18", 16, ["resnet34", "mobilenetv3l", "regnety400mf", "resnet18", "resnet18"], 3, 420)


def test_part_21_is_held_out_17_with_gpu_bound_inference_first() -> None:
    """CNN inference at batches where the GPU holds A's step (held-out 16's one GPU-bound inference pair froze its
    queue into every launch), then ConvNeXt, Swin, GroupNorm and transformer inference at large batch (a regime
    label of its own) and two GPU-bound training pairs: new pairs, all heldout17, fitting one device call's budget."""
    _new_part(21, "heldout17", 15, ["resnet18", "resnet50", "resnet18", "resnet18"], 2, 420)
    rc = _module()
    new = [p for p in rc.PAIRS if p.part == 21]
    assert all("-infer-" in p.name for p in new[:13]) and {p.regime for p in new} == {"cnn", "infer-large"}
    assert "infer-large" not in {p.regime for p in rc.PAIRS if p.part < 21}


def test_every_part_can_be_asked_for() -> None:
    """part 19's capture was refused once: --part's choices were a list ending at 18."""
    rc = _module()
    res = subprocess.run([sys.executable, str(SCRIPT), "--help"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert res.returncode == 0 and f",{max(p.part for p in rc.PAIRS)},all}}" in res.stdout.replace("\n", "").replace(" ", "")


@pytest.mark.slow
def test_the_interleaved_backward_pass_times_both_variants_step_by_step(tmp_path: Path) -> None:
    res, files = _run(tmp_path, "--pairs", "gpt-train-b4-s192-gelu-r12")
    assert res.returncode == 0, res.stderr[-2000:]
    bwd = json.loads(files["part-x/gpt-train-b4-s192-gelu-r12.json"])["backward_pass"]
    for k in "AB":
        assert len(bwd[k]["cpu_us_steps"]) == len(bwd[k]["step_ms"]) == len(bwd[k]["swap_cpu_ms"]) == 2
        assert min(bwd[k]["calls_steps"]) > 0
        # the marked forwards' CPU in the same steps: inside the step's CPU, which is inside the step
        assert all(0 < f < c <= s for f, c, s in zip(bwd[k]["swap_cpu_ms"], bwd[k]["cpu_ms"], bwd[k]["step_ms"],
                                                      strict=True))
    assert bwd["A"]["calls_steps"] == bwd["B"]["calls_steps"]
    # the eager GELU's backward costs more: the least of each (a busy host only lengthens a step; one of B's read 9.3 ms
    # against A's 0.7 ms while a second job ran, 6 Dec 2026)
    assert min(bwd["A"]["cpu_us_steps"]) > min(bwd["B"]["cpu_us_steps"]) > 0


# one pair of each builder family of held-outs 2-7 (those parts were captured long since; one run keeps their builds
# and their swaps' smaller op counts checked without a capture per part): the pair, its split, and how many times
# B's ops in the swap group A's exceed
LATER_PARTS = {
    "llama-decode-b1-rope": ("heldout2", 1),  # the cached rotary table launches fewer ops than recomputing it
    "vit-b1-d640-layernorm": ("heldout3", 2),  # eager LayerNorm: 9 ops, nn.LayerNorm: 1
    "resnet18-infer-b8-bn": ("heldout4", 2),  # eager BatchNorm (running stats): several ops, nn.BatchNorm2d: 1
    "gpt-b1-s192-d768-block": ("heldout6", 2),  # a whole eager block against nn.LayerNorm, SDPA, F.gelu
    "resnet18-gn-train-b4": ("heldout7", 1),  # eager GroupNorm against nn.GroupNorm, in training
    "resnet18-gn-train-b48": ("heldout40", 1),  # the same, timed on while its truth is wider than ±2%
    "resnet18-gn-train-b52": ("heldout42", 1),  # the same, each side's GroupNorms also timed alone
    "resnet18-gn-train-b56": ("heldout43", 1),  # the same, each side's GroupNorms also read as in_step_cpu_us reads
    "resnet18-gn-train-b60": ("heldout44", 1),  # the same, both sides' GroupNorms also read in alternating steps
    "resnet18-gn-train-b68": ("heldout46", 1),  # the same, the hooks pass's forward also read at the steps' speed
}


@pytest.mark.slow
def test_smoke_run_of_the_later_held_out_parts(tmp_path: Path) -> None:
    res, files = _run(tmp_path, "--pairs", ",".join(LATER_PARTS))
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"{len(LATER_PARTS)} of {len(LATER_PARTS)} pairs captured" in res.stdout
    for name, (split, factor) in LATER_PARTS.items():
        meta = json.loads(files[f"part-x/{name}.json"])
        assert meta["split"] == split and meta["swap_calls_per_step"]["A"] > 0 < meta["swap_calls_per_step"]["B"]
        ops = {k: _ops_in_swap_group(files[f"part-x/{name}.{k}.json.gz"]) for k in "AB"}
        assert ops["B"] > 0 and ops["A"] > factor * ops["B"], (name, ops)
        if meta["part"] >= 45:  # --smoke times a pair for 0.5 s, then for up to 5 x 0.5 s more while wider than ±2%
            assert meta["truth_ci_target"] == 0.02
            assert meta["ratio_ci95"] <= 0.02 or meta["extended_s"] > 2.5, (meta["ratio_ci95"], meta["extended_s"])
        else:
            assert meta["truth_ci_target"] is None and meta["extended_s"] < 0.05
        if meta["part"] >= 47:  # every swapped call timed alone, forward and (training) backward, on both sides
            for side in "AB":
                alone = meta["isolated_cpu"][side]
                assert alone["calls_per_step"] == meta["swap_calls_per_step"][side] and alone["calls_skipped"] == 0
                assert alone["forward_us_per_call"] > 0 and alone["backward_us_per_call"] > 0
                assert {c["module"] for c in alone["calls"]} == {("EagerGroupNorm", "GroupNorm")["AB".index(side)]}
        else:
            assert meta["isolated_cpu"] == {}
        if meta["part"] >= 48:  # read in the step by hooks on the marked modules alone, forward and backward
            assert all(meta["in_step_cpu"][side]["forward_us_per_call"] > 0 < meta["in_step_cpu"][side]["backward_us_per_call"]
                       for side in "AB")
        else:
            assert meta.get("in_step_cpu", {}) == {}
        if meta["part"] >= 49:  # read against each other in alternating steps: B's eager-free GroupNorm costs less
            paired = meta["paired_cpu"]
            assert all(paired[k][side] > 0 for k in ("forward_us_per_call", "backward_us_per_call") for side in "AB")
            assert 0 < paired["forward_ratio"] < 1 and paired["backward_ratio"] > 0
        else:
            assert meta.get("paired_cpu", {}) == {}
        for side in "AB":  # part 51 on: the hooks pass's forward again, each step beside a plain step
            at_speed = meta["module_cpu"][side].get("forward_at_speed")
            if meta["part"] < 51:
                assert at_speed is None
                continue
            norm = at_speed["modules"][("EagerGroupNorm", "GroupNorm")["AB".index(side)]]
            assert len(at_speed["speed"]) == len(norm["cpu_us_per_step"]) == 2 and min(at_speed["speed"]) > 0
            assert at_speed["step_ms_ref"] == pytest.approx(statistics.median(meta["step_ms"][side]), abs=1e-3)
            assert min(norm["cpu_us_per_step"]) > 0 and norm["calls_per_step"] == [meta["swap_calls_per_step"][side]] * 2


@pytest.mark.slow
def test_a_pair_past_the_budget_is_skipped_and_logged(tmp_path: Path) -> None:
    res, files = _run(tmp_path, "--pairs", "two-stream-layernorm,two-stream-gelu", "--budget-s", "20")
    assert res.returncode == 0, res.stderr[-2000:]
    assert "SKIPPED (budget" in res.stdout and "two-stream-gelu" in res.stdout.split("SKIPPED")[1]
    assert "0 of 2 pairs captured" in res.stdout
    assert "part-x/profiler_overhead.json" in files and "part-x/capture.log" in files


def _mini_corpus(root: Path, heldout_b_scale: float = 1.0, held: str = "heldout") -> Path:
    """The two committed H200 pairs as a corpus: prefill in dev, two-stream held out (B's steps scaled)."""
    src = ROOT / "tests/data/pairs"
    d = root / "part-1"
    d.mkdir(parents=True)
    for name, split in (("llama8b-prefill-b4-rmsnorm", "dev"), ("two-stream-gelu", held)):
        for f in src.glob(f"{name}.*.json.gz"):
            (d / f.name).write_bytes(f.read_bytes())
        meta = json.loads((src / f"{name}.json").read_text())
        meta["split"] = split
        if split != "dev":
            meta["step_ms"]["B"] = [t * heldout_b_scale for t in meta["step_ms"]["B"]]
        else:  # the CPU's time to each step's return (captures since part 10): B's CPU held 90% of its step
            meta["cpu_ms"] = {k: [0.9 * t for t in meta["step_ms"][k]] for k in "AB"}
        (d / f"{name}.json").write_text(json.dumps(meta))
    return root


def _validate(corpus: Path, out: Path, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    err = out.with_suffix(".yaml")
    res = subprocess.run([sys.executable, str(ROOT / "gpu/replay_corpus_validation.py"), str(corpus), "--out", str(out),
                          "--error-model", str(err), *extra], capture_output=True, text=True, cwd=ROOT, timeout=600,
                         env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    return res, err


def test_corpus_validation_fits_on_dev_and_scores_heldout_apart(tmp_path: Path) -> None:
    import pandas as pd

    from addressable.projection.intervals import read_error_model
    res, err = _validate(_mini_corpus(tmp_path / "c1"), tmp_path / "v1.csv")
    assert res.returncode == 0, res.stderr[-2000:]
    t = pd.read_csv(tmp_path / "v1.csv")
    assert list(t["split"]) == ["dev", "heldout"] and (t["model"] == t["model"].iloc[0]).all()
    assert {"uniform", "own", "module", "event", "lo", "hi", "inside", "regime_detected"} <= set(t.columns)
    assert (t["lo"] <= t[t["model"].iloc[0]]).all() and (t[t["model"].iloc[0]] <= t["hi"]).all()
    # no profiler-free swap time and no profiler_overhead.json in these older captures: both fall back to uniform
    assert t["module"].to_numpy() == pytest.approx(t["uniform"].to_numpy())
    assert t["event"].to_numpy() == pytest.approx(t["uniform"].to_numpy())
    assert "HELD-OUT" in res.stdout
    assert t["cpu_share_b"].iloc[0] == pytest.approx(0.9) and np.isnan(t["cpu_share_b"].iloc[1])
    # held-out data never reaches the fit: change what the held-out pair measured, and only its score moves
    res2, err2 = _validate(_mini_corpus(tmp_path / "c2", heldout_b_scale=1.2), tmp_path / "v2.csv")
    assert res2.returncode == 0, res2.stderr[-2000:]
    a, b = read_error_model(err), read_error_model(err2)
    assert (a.pooled, a.half_width, a.source.split("model ")[1]) == (b.pooled, b.half_width, b.source.split("model ")[1])
    assert a.heldout_max != b.heldout_max
    assert read_error_model(err, "given").source.endswith("(fitted on dev, model given, truth quartile)")
    # a second held-out set is scored as its own half, and reaches no fit either
    res3, err3 = _validate(_mini_corpus(tmp_path / "c3", heldout_b_scale=1.2, held="heldout2"), tmp_path / "v3.csv")
    assert res3.returncode == 0, res3.stderr[-2000:]
    assert "HELD-OUT 2 (given, what project runs)" in res3.stdout and "HELD-OUT 1" not in res3.stdout
    c = read_error_model(err3)
    assert (c.pooled, c.half_width) == (a.pooled, a.half_width) and c.heldout_max == b.heldout_max
    # every registered held-out set gets its summary line (held-out 15's was missing from the first scoring's log)
    res6, _ = _validate(_mini_corpus(tmp_path / "c6", held="heldout15"), tmp_path / "v6.csv")
    assert "HELD-OUT 15 (given, what project runs)" in res6.stdout

    # --fit-on names the development data: a held-out set fitted on moves the fit, and says so
    res4, err4 = _validate(_mini_corpus(tmp_path / "c4", heldout_b_scale=1.2), tmp_path / "v4.csv", "--fit-on", "dev,heldout")
    assert res4.returncode == 0, res4.stderr[-2000:]
    d = read_error_model(err4)
    assert d.pooled != b.pooled and "fitted on dev+heldout" in d.source and "held-out 1 (fitted on)" in res4.stdout
    res5, _ = _validate(_mini_corpus(tmp_path / "c5"), tmp_path / "v5.csv", "--fit-on", "dev,heldout99")
    assert res5.returncode == 2 and "unknown splits heldout99" in res5.stderr and not (tmp_path / "v5.csv").exists()
    # --jobs: pairs validated in parallel processes give the same table, in the same order; 0 is a one-line error
    res7, _ = _validate(_mini_corpus(tmp_path / "c7"), tmp_path / "v7.csv", "--jobs", "2")
    assert res7.returncode == 0, res7.stderr[-2000:]
    assert pd.read_csv(tmp_path / "v7.csv").equals(t)
    res8, _ = _validate(_mini_corpus(tmp_path / "c8"), tmp_path / "v8.csv", "--jobs", "0")
    assert res8.returncode == 2 and res8.stderr.strip() == "--jobs: must be at least 1"
    assert not (tmp_path / "v8.csv").exists()


def _with_wait_records(trace: Path) -> int:
    """Add to a committed trace the GPU's records of its stream waits as torch 2.11 writes them (awaited stream and
    record call -1), the waiting stream that of the next op launched; returns how many."""
    t = json.loads(gzip.decompress(trace.read_bytes()))
    events = t["traceEvents"]
    ops = sorted((e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")),
                 key=lambda e: e["args"]["correlation"])
    records = []
    for e in events:
        if e.get("cat") == "cuda_runtime" and e["name"] == "cudaStreamWaitEvent":
            corr = e["args"]["correlation"]
            op = next(o for o in ops if o["args"]["correlation"] > corr)
            records.append({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": op["pid"], "tid": op["tid"],
                            "ts": e["ts"] + 0.5, "dur": 1,
                            "args": {"cuda_sync_kind": "Stream Wait Event", "wait_on_stream": -1,
                                     "wait_on_cuda_event_record_corr_id": -1, "wait_on_cuda_event_id": 1,
                                     "stream": op["args"]["stream"], "correlation": corr, "device": op["args"]["device"]}})
    t["traceEvents"] = events + records
    trace.write_bytes(gzip.compress(json.dumps(t).encode()))
    return len(records)


def test_the_validation_reads_wait_records_and_can_drop_them(tmp_path: Path) -> None:
    """Held-out 26's traces carry the GPU's wait records: the validation reads them (the two-stream pair's six waits a
    side, resolved by the torch-2.11 rule, add two edges that timing missed, which do not move this pair's projection
    by more than 5%), and with --drop-sync-records gives exactly the table of the same traces without them."""
    import pandas as pd

    from addressable.projection.replay import build_graph
    plain, recorded = _mini_corpus(tmp_path / "plain"), _mini_corpus(tmp_path / "recorded")
    assert [_with_wait_records(recorded / "part-1" / f"two-stream-gelu.{k}.json.gz") for k in "AB"] == [6, 6]
    edges = [int((build_graph(load_trace(c / "part-1" / "two-stream-gelu.A.json.gz", runtime=True)).gpu_dep >= 0).sum())
             for c in (plain, recorded)]
    assert edges[1] == edges[0] + 2
    tables = {}
    for key, corpus, extra in (("plain", plain, ()), ("recorded", recorded, ()),
                               ("dropped", recorded, ("--drop-sync-records",))):
        res, _ = _validate(corpus, tmp_path / f"{key}.csv", *extra)
        assert res.returncode == 0, res.stderr[-2000:]
        tables[key] = pd.read_csv(tmp_path / f"{key}.csv")
    assert tables["dropped"].equals(tables["plain"])
    rec, base = tables["recorded"].set_index("pair"), tables["plain"].set_index("pair")
    assert rec.loc["llama8b-prefill-b4-rmsnorm"].equals(base.loc["llama8b-prefill-b4-rmsnorm"])
    assert rec.loc["two-stream-gelu", "given"] == pytest.approx(base.loc["two-stream-gelu", "given"], rel=0.05)


def test_the_committed_table_reproduces_from_the_committed_corpus(tmp_path: Path) -> None:
    """Four pairs of results/h200/replay_corpus (compiled-mlp-b1, gpt2-b1-s128-gelu and the training step
    bert-train-b4-layernorm from dev, two-stream-gelu held out) give the same projections as the committed
    validation.csv: a change to the replay shows here."""
    import pandas as pd
    pairs = {"part-1": ["compiled-mlp-b1", "gpt2-b1-s128-gelu", "bert-train-b4-layernorm"], "part-2": ["two-stream-gelu"]}
    for part, names in pairs.items():
        d = tmp_path / "c" / part
        d.mkdir(parents=True)
        src = ROOT / "results/h200/replay_corpus" / part
        for f in [src / "profiler_overhead.json", *(f for n in names for f in src.glob(f"{n}.*"))]:
            (d / f.name).write_bytes(f.read_bytes())
    res, _ = _validate(tmp_path / "c", tmp_path / "v.csv")
    assert res.returncode == 0, res.stderr[-2000:]
    got = pd.read_csv(tmp_path / "v.csv").set_index("pair")
    want = pd.read_csv(ROOT / "results/h200/replay_corpus/validation.csv").set_index("pair").loc[got.index]
    cols = ["measured", "uniform", "own", "module", "event", "given", "given_uniform", "given_v2", "group_scale",
            "rest_scale"]
    assert got[cols].to_numpy() == pytest.approx(want[cols].to_numpy(), rel=2e-3)
    # the compiled swap: A's trace alone (uniform) over-predicts by 46%; given the replacement's CPU, 5%
    assert want.loc["compiled-mlp-b1", "uniform_error"] > 0.4 and abs(want.loc["compiled-mlp-b1", "given_error"]) < 0.06
    # --truth rounds: the measured speedup is the median of the interleaved rounds' ratios, errors follow it
    res, err = _validate(tmp_path / "c", tmp_path / "r.csv", "--truth", "rounds")
    assert res.returncode == 0, res.stderr[-2000:]
    rounds = pd.read_csv(tmp_path / "r.csv").set_index("pair")
    assert rounds["measured"].to_numpy() == pytest.approx(want["measured_rounds"].to_numpy(), rel=1e-3)
    assert rounds["given_error"].to_numpy() == pytest.approx((rounds["given"] / rounds["measured"] - 1).to_numpy(), abs=1e-3)
    assert "truth rounds" in err.read_text() and "--truth rounds, added" not in res.stdout


def test_repeatability_compares_two_captures_of_the_same_pairs(tmp_path: Path) -> None:
    """The same pair in two parts (the second under NAME-r2, B's unprofiled steps 10% longer): the truth moves
    by log 1.1, every projection (made from A alone) by nothing; no shared pair is one line and exit 2."""
    import pandas as pd
    src = ROOT / "tests/data/pairs"
    for part, suffix, scale in (("part-1", "", 1.0), ("part-2", "-r2", 1.1)):
        d = tmp_path / "c" / part
        d.mkdir(parents=True)
        for f in src.glob("two-stream-gelu.*.json.gz"):
            (d / f.name.replace("two-stream-gelu", f"two-stream-gelu{suffix}")).write_bytes(f.read_bytes())
        meta = json.loads((src / "two-stream-gelu.json").read_text())
        meta["step_ms"]["B"] = [t * scale for t in meta["step_ms"]["B"]]
        (d / f"two-stream-gelu{suffix}.json").write_text(json.dumps(meta))
    script = ROOT / "gpu/replay_repeatability.py"
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "repeat.csv"
    res = subprocess.run([sys.executable, str(script), str(tmp_path / "c"), "--parts", "1,2", "--truth", "quartile",
                          "--out", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    t = pd.read_csv(out)
    assert list(t["pair"]) == ["two-stream-gelu"] and t["measured"].iloc[0] == pytest.approx(np.log(1.1), abs=1e-3)
    assert t.drop(columns=["pair", "measured"]).abs().max().max() == pytest.approx(0.0, abs=1e-9)
    (tmp_path / "c" / "part-2" / "two-stream-gelu-r2.A.json.gz").rename(tmp_path / "c" / "part-2" / "other.A.json.gz")
    (tmp_path / "c" / "part-2" / "two-stream-gelu-r2.json").rename(tmp_path / "c" / "part-2" / "other.json")
    (tmp_path / "c" / "part-2" / "two-stream-gelu-r2.B.json.gz").rename(tmp_path / "c" / "part-2" / "other.B.json.gz")
    res = subprocess.run([sys.executable, str(script), str(tmp_path / "c"), "--parts", "1,2", "--truth", "quartile",
                          "--out", str(tmp_path / "r2.csv")], capture_output=True, text=True, cwd=ROOT, timeout=600,
                         env=env)
    assert res.returncode == 2 and "share no pair" in res.stderr and not (tmp_path / "r2.csv").exists()


def test_the_heldout_table_counts_a_set_and_its_classes(tmp_path: Path) -> None:
    """gpu/replay_heldout_table.py: a set's figures over its pairs, by basis and co-limited or not, and with an
    earlier set; one row per pair; an unknown set is an error."""
    spec = importlib.util.spec_from_file_location("replay_heldout_table", ROOT / "gpu/replay_heldout_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    import pandas as pd

    def row(pair: str, split: str, err: float, basis: str, regime: str, inside: bool) -> dict:
        return {"pair": pair, "split": split, "regime": "cnn", "regime_given": regime, "cpu_scale_basis": basis,
                "measured": 2.0, "measured_ci95": 0.01, "cpu_share_a": 0.99, "cpu_share_b": 0.98,
                "given": 2.0 * (1 + err), "given_error": err, "lo": 1.8, "hi": 2.2, "inside": inside}

    t = pd.DataFrame([row("a", "heldout9", 0.01, "step", "cpu-bound", True),
                      row("b", "heldout9", -0.10, "host", "co-limited", False),
                      row("c", "heldout9", 0.03, "host", "gpu-bound", True),
                      row("d", "heldout8", 0.50, "step", "cpu-bound", False)])
    t.loc[3, "measured_ci95"] = 0.05
    t.loc[1, "measured_ci95"] = 0.03
    t.to_csv(tmp_path / "v.csv", index=False)
    out = mod.report(tmp_path / "v.csv", "heldout9", tmp_path / "v.csv", [(tmp_path / "v.csv", "heldout8")])
    lines = out.splitlines()
    assert lines[0] == "heldout9: 3 pairs, median |error| 3.0%, max 10.0%, 2 of 3 within ±5%, 2 of 3 (67%) inside"
    assert "  scale from host: 2 pairs, median |error| 6.5%" in out and "  co-limited: 1 pairs" in out
    assert "with heldout8: 4 pairs, median |error| 6.5%, max 50.0%, 2 of 4 within ±5%, 2 of 4 (50%) inside" in out
    assert "  truth known to ±2%: 2 pairs, median |error| 2.0%, max 3.0%, 2 of 2 within ±5%, 2 of 2 (100%) inside" in lines
    assert "  truth wider than ±2%: 1 pairs, median |error| 10.0%" in out
    assert "  together, truth known to ±2%: 2 pairs, median |error| 2.0%" in out
    assert "  together, truth wider than ±2%: 2 pairs, median |error| 30.0%" in out
    assert sum(x.startswith("| ") for x in lines) == 3
    assert "| b | cnn (co-limited) | host | 2.000× (±3.0%) | 0.99 / 0.98 | 1.800× (-10.0%) | 1.800× (-10.0%) | " \
           "1.800–2.200 | **no** |" in lines
    with pytest.raises(SystemExit, match="no pair of split heldout7"):
        mod.report(tmp_path / "v.csv", "heldout7")
    # part 47 on: the projections from B's inputs timed alone, over the pairs that have them, beside given's there
    t["given_isolated"], t["given_isolated_error"] = [2.2, np.nan, 2.0, np.nan], [0.10, np.nan, 0.0, np.nan]
    t["isolated_inside"] = [False, np.nan, True, np.nan]
    t["given_calibrated"], t["given_calibrated_error"] = [2.08, np.nan, 2.0, np.nan], [0.04, np.nan, 0.0, np.nan]
    t["calibrated_inside"] = [True, np.nan, True, np.nan]
    t.to_csv(tmp_path / "v.csv", index=False)
    out = mod.report(tmp_path / "v.csv", "heldout9")
    assert ("  given_isolated (the replacement timed alone, as a user times it): 2 pairs, median |error| 5.0%, max "
            "10.0%, 1 of 2 within ±5%, 1 of 2 (50%) inside") in out
    assert "  given_calibrated (timed alone, calibrated by the original's step over alone): 2 pairs, median |error| 2.0%" in out
    assert "  given on the same pairs (the replacement timed in the step): 2 pairs, median |error| 2.0%, max 3.0%" in out


def test_the_validation_reads_as_host_time_the_quantile_it_is_given() -> None:
    """A's host times (cpu_ms) give host_us at --host-quantile, the median by default; none without them."""
    spec = importlib.util.spec_from_file_location("replay_corpus_validation", ROOT / "gpu/replay_corpus_validation.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    meta = {"cpu_ms": {"A": [1.0, 2.0, 3.0, 4.0, 5.0]}}
    assert mod.host_us(meta) == pytest.approx(3000.0) and mod.host_us({}) is None
    mod.HOST_QUANTILE = 0.25
    assert mod.host_us(meta) == pytest.approx(2000.0)
    # as `profile` reads it: the first two steps of the last round (3 and 4 ms), then at the step's speed there
    # (the median step 2 ms over those steps' own 4 ms)
    meta.update(round=[0, 0, 1, 1, 1], step_ms={"A": [1.0, 2.0, 3.0, 5.0, 1.0]})
    mod.HOST_SAMPLE = ("window", 2)
    assert mod.host_us(meta) == pytest.approx(3500.0)
    mod.HOST_AT_STEP_SPEED = True
    assert mod.host_us(meta) == pytest.approx(3500.0 * 2.0 / 4.0)
    # a sample spread over the run instead: the first (or last) step of every round, or steps drawn at random
    mod.HOST_AT_STEP_SPEED = False
    mod.HOST_SAMPLE = ("first", 1)
    assert mod.host_us(meta) == pytest.approx(2000.0)  # steps 0 and 2: 1 and 3 ms
    mod.HOST_SAMPLE = ("last", 1)
    assert mod.host_us(meta) == pytest.approx(3500.0)  # steps 1 and 4: 2 and 5 ms
    mod.HOST_SAMPLE = ("random", 9)
    assert mod.host_us(meta) == pytest.approx(3000.0)  # more than there are: every step
    assert mod.parse_host_sample("first:3") == ("first", 3)
    assert mod.parse_host_sample("first:0") is None and mod.parse_host_sample("every:3") is None


def test_a_bad_host_sample_is_a_one_line_error(tmp_path: Path) -> None:
    """--host-sample names first:N, last:N or random:N; anything else (or beside --host-window) exits 2 in one line."""
    for bad in (["--host-sample", "middle:2"], ["--host-sample", "first:x"],
                ["--host-sample", "first:2", "--host-window", "3"]):
        r = subprocess.run([sys.executable, str(ROOT / "gpu/replay_corpus_validation.py"), str(tmp_path), *bad],
                           capture_output=True, text=True)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("--host-sample:"), r.stderr


def test_part_31_is_held_out_27_two_stream_swaps_at_new_sizes_and_gemm_counts() -> None:
    """Two-stream swaps again, for the reading of holds by another stream's kernel and of the loss to sharing: sizes,
    GEMM counts and swap kinds on either stream the corpus never ran, all heldout27, in one device call's budget."""
    _new_part(31, "heldout27", 12, ["two"], 0, 300)
    rc = _module()
    new = [p for p in rc.PAIRS if p.part == 31]
    assert {p.regime for p in new} == {"multi-stream"} and rc.SYNC_RECORDS_FROM <= 31
    assert sum(p.swap == "main-stream" for p in new) == 4


def test_sharing_solo_check_reads_each_gemms_solo_time_against_b(tmp_path: Path) -> None:
    """The committed two-stream pair: A's 18 GEMMs ran 170 us beside the GELUs, B's alone 166 us; the sharing model
    puts their solo time at 158 us (the work-conserving split); a corpus with no two-stream pair is a one-line error
    that writes nothing."""
    import pandas as pd

    corpus = tmp_path / "c" / "part-1"
    corpus.mkdir(parents=True)
    for f in (ROOT / "tests/data/pairs").glob("two-stream-gelu.*"):
        (corpus / f.name).write_bytes(f.read_bytes())
    out = tmp_path / "s.csv"
    res = subprocess.run([sys.executable, str(ROOT / "gpu/sharing_solo_check.py"), str(tmp_path / "c"), "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    row = pd.read_csv(out).iloc[0]
    assert row["gemms_a"] == 18 and row["overlap_a_us"] > 40
    assert (row["measured_us"], row["alone_b_us"], row["model_us"]) == (pytest.approx(170.4, abs=0.1),
                                                                         pytest.approx(166.2, abs=0.1),
                                                                         pytest.approx(157.7, abs=0.1))
    assert row["model_error"] == pytest.approx(row["model_us"] / row["alone_b_us"] - 1, abs=1e-3)
    res = subprocess.run([sys.executable, str(ROOT / "gpu/sharing_solo_check.py"), str(tmp_path / "none"), "--out",
                          str(tmp_path / "n.csv")], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and not (tmp_path / "n.csv").exists()


def test_part_32_is_held_out_28_main_stream_two_stream_swaps() -> None:
    """Two-stream swaps with the swap on the main stream (their side-stream GEMMs launched before the eager kernels
    that hold them), at GEMM counts, kinds and sizes the corpus never ran there, all heldout28, in one call's budget."""
    _new_part(32, "heldout28", 12, ["two"], 0, 300)
    rc = _module()
    new = [p for p in rc.PAIRS if p.part == 32]
    assert {p.swap for p in new} == {"main-stream"} and {p.regime for p in new} == {"multi-stream"}


def test_part_33_is_held_out_29_swaps_on_every_stream_first() -> None:
    """Streams that each run GEMMs and the swapped work in turns (two and three of them) first, then side-stream and
    main-stream swaps at GEMM counts and sizes the corpus never ran, all heldout29, in one call's budget."""
    _new_part(33, "heldout29", 14, ["two"] * 4 + ["three"] * 3 + ["two"] * 7, 0, 300)
    rc = _module()
    new = [p for p in rc.PAIRS if p.part == 33]
    assert [p.swap for p in new] == ["every-stream"] * 7 + ["side-stream"] * 3 + ["main-stream"] * 4
    assert {p.regime for p in new} == {"multi-stream"}


def test_part_34_is_held_out_30_where_the_profile_keeps_the_streams_apart() -> None:
    """Swaps on every stream of two or three first, then side-stream and main-stream swaps, at sizes and GEMM counts
    the corpus never ran, all heldout30, in one call's budget."""
    _new_part(34, "heldout30", 14, ["two"] * 5 + ["three"] * 3 + ["two"] * 6, 0, 300)
    rc = _module()
    new = [p for p in rc.PAIRS if p.part == 34]
    assert [p.swap for p in new] == ["every-stream"] * 8 + ["side-stream"] * 3 + ["main-stream"] * 3


def test_part_35_is_held_out_31_swaps_on_every_stream_of_both_bandwidth_kinds() -> None:
    """Swaps on every stream of two or three, mostly bandwidth-bound or mostly GEMMs, then two side-stream swaps, at
    sizes and GEMM counts the corpus never ran, all heldout31, in one call's budget."""
    _new_part(35, "heldout31", 14, ["two"] * 9 + ["three"] * 3 + ["two"] * 2, 0, 300)
    rc = _module()
    new = [p for p in rc.PAIRS if p.part == 35]
    assert [p.swap for p in new] == ["every-stream"] * 12 + ["side-stream"] * 2


def test_part_36_is_held_out_32_steps_the_gpu_about_holds() -> None:
    """Inference the GPU about holds first (ViT-S MLP, decoder GELU, then BatchNorm CNNs), then side-stream swaps near
    that tie, then two GPU-bound training steps, at models and batches the corpus never ran, all heldout32, in one
    call's budget."""
    _new_part(36, "heldout32", 19, ["vit", "vit", "gpt", "gpt", "gpt"], 2, 480)
    rc = _module()
    new = [p for p in rc.PAIRS if p.part == 36]
    assert [p.swap for p in new[13:17]] == ["side-stream"] * 4
    assert all("infer" in p.name for p in new[:13]) and all("train" in p.name for p in new[17:])


def test_part_37_is_held_out_33_every_regime_with_the_model_as_it_stands() -> None:
    """One pair a regime first (encoder and decoder batch 1, decode, small and large training, CNN training and
    inference, compiled, large-batch inference), then a second for the regimes the corpus holds most of, and one
    multi-stream swap of each kind, at configurations the corpus never ran, all heldout33, in one call's budget."""
    _new_part(37, "heldout33", 22, ["vit", "gpt", "gpt2", "gpt", "gpt", "resnet18", "resnet18", "compiled", "gpt"],
              8, 480)
    rc = _module()
    new = [p for p in rc.PAIRS if p.part == 37]
    assert len({p.regime for p in new[:9]}) == 8 and {p.regime for p in new} == {p.regime for p in rc.PAIRS}
    assert [p.swap for p in new[-3:]] == ["every-stream", "side-stream", "main-stream"]


def test_part_38_is_held_out_34_where_the_replay_misses_most_in_sample() -> None:
    """CPU-bound CNN training and whole-block transformer training, then co-limited BatchNorm inference, in turns, at
    configurations the corpus never ran, all heldout34, in one call's budget."""
    _new_part(38, "heldout34", 18, ["resnet18", "resnet18", "gpt", "resnet18"], 12, 450)
    rc = _module()
    new = [p for p in rc.PAIRS if p.part == 38]
    assert sum(p.swap == "block" for p in new) == 4 and sum("infer" in p.name for p in new) == 6



def test_part_39_is_held_out_35_on_the_workloads_the_tool_is_for() -> None:
    """Llama-shaped RMSNorm swaps (batch 1, decode, training) and ResNet-50 first, then every other regime, one
    multi-stream swap of each kind last: new pairs, all heldout35, in one call's budget."""
    _new_part(39, "heldout35", 20, ["llama", "llama", "llama", "resnet50", "resnet50"], 8, 450)
    rc = _module()
    new = [p for p in rc.PAIRS if p.part == 39]
    assert {p.regime for p in new} == {p.regime for p in rc.PAIRS if p.part < 3} | {"infer-large"}
    assert [p.swap for p in new[-3:]] == ["every-stream", "side-stream", "main-stream"]

def test_part_40_captures_held_outs_34_35s_cpu_bound_training_again_and_part_41_is_held_out_36() -> None:
    """Part 40 (dev5) is every training pair of parts 38-39 whose host held A's step in its capture (A's host time at
    least 0.9 of its step, the committed validation table), the optimizer pair excepted, under new names and the same
    builds; part 41 (heldout36) is new CPU-bound training pairs, CNNs first, and two co-limited CNN inference pairs."""
    rc = _module()
    split = rc.split_of(rc.PAIRS)
    by_name = {p.name: p for p in rc.PAIRS}
    again = [p for p in rc.PAIRS if p.part == 40]
    with open(ROOT / "results/h200/replay_corpus/validation_fit_all.csv", newline="") as f:
        rows = {r["pair"]: r for r in csv.DictReader(f)}
    held = {n for n, r in rows.items() if r["split"] in ("heldout34", "heldout35") and "train" in n
            and float(r["cpu_share_a"]) >= 0.9 and r["swap"] != "optimizer"}
    assert {p.name.removesuffix("-r40") for p in again} == held and len(held) == 18
    assert {split[p.name] for p in again} == {"dev5"} and sum(p.est_s for p in again) + 30 < 540
    for p in again:
        first = by_name[p.name.removesuffix("-r40")]
        assert (p.build, p.regime, p.swap) == (first.build, first.regime, first.swap)
    _new_part(41, "heldout36", 17, ["resnet18", "resnet18", "resnet18", "resnet50", "resnet34"], 15, 450)
    assert {p.swap for p in rc.PAIRS if p.part == 41} == {"tiny", "block", "mlp"}


def test_part_42_is_held_out_37_swaps_that_remove_their_consumers_casts_and_swaps_that_remove_none() -> None:
    """Part 42 (heldout37): new pairs, CPU-bound CNN training first (plain eager BatchNorm, whose float32 output its
    consumers cast back; dtype-keeping BatchNorm and GroupNorm, which leave them none), then transformer training
    (eager tanh-GELU among them) and three inference pairs, fitting one device call."""
    rc = _module()
    _new_part(42, "heldout37", 17, ["resnet18", "resnet18", "resnet18", "resnet34", "resnet50"], 14, 450)
    names = [p.name for p in rc.PAIRS if p.part == 42]
    assert {n.rsplit("-", 1)[1] for n in names if n.startswith("resnet") and "train" in n} == {"bn", "bnkd", "b36"}
    assert sum(n.endswith("-gelu") for n in names) == 2


@pytest.mark.slow
def test_part_40_on_reads_the_backward_after_every_timing_round(tmp_path: Path) -> None:
    """From part 40 the hooked steps also run after every round of the timing (`backward_spread`): as many of A as of
    B in each round, each step's round kept, the same fields as the end-of-pair pass (which stays), and the
    validation reads them with --backward-source spread (the pass where a capture has none)."""
    res, files = _run(tmp_path, "--pairs", "gpt-train-b16-s128-gelu-r40")
    assert res.returncode == 0, res.stderr[-2000:]
    meta = json.loads(files["part-x/gpt-train-b16-s128-gelu-r40.json"])
    spread, timed_rounds = meta["backward_spread"], set(meta["round"])
    for k in "AB":
        steps = spread[k]["round"]
        assert set(steps) == timed_rounds and steps == sorted(steps)
        assert min(Counter(steps).values()) >= 4  # SPREAD_MIN_STEPS
        assert {len(v) for v in spread[k].values()} == {len(steps)}
        assert all(0 < f < c <= s for f, c, s in zip(spread[k]["swap_cpu_ms"], spread[k]["cpu_ms"], spread[k]["step_ms"],
                                                      strict=True))
    assert spread["A"]["round"] == spread["B"]["round"] and len(meta["backward_pass"]["A"]["step_ms"]) == 2
    assert np.median(spread["A"]["cpu_us_steps"]) > np.median(spread["B"]["cpu_us_steps"]) > 0
    spec = importlib.util.spec_from_file_location("replay_corpus_validation", ROOT / "gpu/replay_corpus_validation.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    step_a = float(np.median(meta["step_ms"]["A"]))
    read = {}
    for source in ("pass", "spread"):
        mod.BACKWARD_SOURCE = source
        read[source] = mod.interleaved_backward(meta, step_a)
        assert mod.interleaved_backward({**meta, "backward_spread": {}}, step_a) == read.get("pass")
    mode = np.asarray(spread["A"]["step_ms"]) / step_a
    assert read["spread"][0] == pytest.approx(float(np.median(np.asarray(spread["A"]["cpu_us_steps"]) / mode)))
    assert read["spread"] != read["pass"]


def test_the_backward_is_read_from_both_sources_pooled() -> None:
    """BACKWARD_SOURCE "both": each variant's steps of the pass, then of the spread, read as one (the median of each
    step over the host's speed then); the pass alone where a capture has no spread; "pass" and "spread" each alone."""
    mod = _load("replay_corpus_validation")

    def steps(cpu: list[float], step_ms: list[float], calls: float) -> dict:
        return {"cpu_us_steps": cpu, "calls_steps": [calls] * len(cpu), "step_ms": step_ms}
    meta = {"backward_pass": {"A": steps([100.0, 110.0], [10.0, 10.0], 4.0), "B": steps([40.0, 40.0], [8.0, 8.0], 4.0)},
            "backward_spread": {"A": steps([300.0, 120.0, 130.0], [20.0, 10.0, 10.0], 4.0),
                                "B": steps([90.0, 50.0, 60.0], [20.0, 10.0, 10.0], 4.0)}}
    read = {}
    try:
        for source in ("pass", "spread", "both"):
            mod.BACKWARD_SOURCE = source
            read[source] = mod.interleaved_backward(meta, 10.0)
            assert mod.interleaved_backward({**meta, "backward_spread": {}}, 10.0) == pytest.approx((105.0, 10.0))
    finally:
        mod.BACKWARD_SOURCE = "both"
    assert read["pass"] == pytest.approx((105.0, 10.0))
    assert read["spread"] == pytest.approx((130.0, 50.0 / 4))  # 300 at twice A's step counts as 150 (B's 90 as 45)
    assert read["both"] == pytest.approx((120.0, 45.0 / 4))  # 100, 110, 150, 120, 130; 40, 40, 45, 50, 60


def test_backward_source_choice_scores_each_source_on_the_even_parts_and_checks_on_the_odd(tmp_path: Path,
                                                                                          monkeypatch) -> None:
    """gpu/backward_source_choice.py: given per source on the pairs with spread steps, chosen by the even parts'
    count within ±5% then their median; a bad source list and a corpus without spread steps are one-line errors."""
    mod = _load("backward_source_choice")
    for part, name, spread in ((40, "a", True), (41, "b", True), (39, "c", False)):
        (tmp_path / "c" / f"part-{part}").mkdir(parents=True)
        (tmp_path / "c" / f"part-{part}" / f"{name}.json").write_text(json.dumps({"backward_spread": {"A": 1} if spread else {}}))
    assert mod.with_spread(tmp_path / "c") == ["a", "b"]
    given = {"pass": (1.06, 1.0), "spread": (1.04, 1.09), "both": (1.03, 1.01)}  # a (even), b (odd) over measured 1

    def fake_main(argv: list[str]) -> int:
        source, out = argv[argv.index("--backward-source") + 1], argv[argv.index("--out") + 1]
        assert argv[argv.index("--pairs") + 1] == "^(a|b)$"
        pd.DataFrame({"pair": ["a", "b"], "given": given[source], "measured": [1.0, 1.0], "inside": [True, False]}
                     ).to_csv(out, index=False)
        return 0
    monkeypatch.setattr(mod.cv, "main", fake_main)
    assert mod.main([str(tmp_path / "c"), "--out", str(tmp_path / "o")]) == 0
    t = pd.read_csv(tmp_path / "o" / "backward_source_choice.csv").set_index("source")
    assert t.loc["pass", "even_within"] == 0 and t.loc["both", "even_within"] == t.loc["spread", "even_within"] == 1
    assert t.loc["spread", "odd_within"] == 0 and t.loc["both", "even_median"] == pytest.approx(0.03)
    assert mod.main([str(tmp_path / "c"), "--sources", "pass,median"]) == 2
    assert mod.main([str(tmp_path / "c" / "part-39")]) == 2


def test_kept_dtype_spill_choice_reads_the_cnn_training_pairs_without_consumer_casts(tmp_path: Path, monkeypatch,
                                                                                      capsys) -> None:
    """gpu/kept_dtype_spill_choice.py: the CNN training pairs with a measured backward whose swap removes no consumer
    casts (swap_dtypes.csv) are scored at each spill (--spillover-conv-kept) and the spill is chosen by the even
    parts; each pair's zeroing spill is read between 0 and 0.1 (net-gn-train's error -4% at 0 and +4% at 0.1: 0.05;
    net-train-bnkd's -3% and +7%: 0.03); a bad spill list, a --zero-between outside it and a corpus without
    swap_dtypes.csv are one-line errors."""
    mod = _load("kept_dtype_spill_choice")
    c = tmp_path / "c"
    pairs = ((10, "net-gn-train", "cnn", True), (11, "net-train-bnkd", "cnn", True), (12, "bn-train", "cnn", True),
             (12, "gn-infer", "cnn", True), (13, "vit-train", "train-small", True), (14, "old-train", "cnn", False))
    for part, name, regime, bwd in pairs:
        (c / f"part-{part}").mkdir(parents=True, exist_ok=True)
        (c / f"part-{part}" / f"{name}.json").write_text(
            json.dumps({"regime": regime, **({"backward_pass": {"A": {}}} if bwd else {})}))
    dtypes = "pair,part,a_in,a_out,a_calls,b_in,b_out,b_calls,device,error\n" + "".join(
        f"{n},{p},bfloat16,{a},1,bfloat16,{b},1,cuda,\n" for n, p, a, b in (
            ("net-gn-train", 10, "float32", "float32"), ("net-train-bnkd", 11, "bfloat16", "bfloat16"),
            ("bn-train", 12, "float32", "bfloat16")))  # only bn-train's swap removes its consumers' casts
    (c / "swap_dtypes.csv").write_text(dtypes)
    assert mod.kept_dtype_training(c) == ["net-gn-train", "net-train-bnkd"]
    given = {0.0: (0.96, 0.97), 0.05: (0.99, 1.02), 0.1: (1.04, 1.07), 0.15: (1.09, 1.12)}  # gn (even), bnkd (odd)

    def fake_main(argv: list[str]) -> int:
        spill, out = float(argv[argv.index("--spillover-conv-kept") + 1]), argv[argv.index("--out") + 1]
        assert argv[argv.index("--pairs") + 1] == "^(net-gn-train|net-train-bnkd)$"
        pd.DataFrame({"pair": ["net-gn-train", "net-train-bnkd"], "given": given[spill], "measured": [1.0, 1.0],
                      "backward_cpu_share": [0.3, 0.4]}).to_csv(out, index=False)
        return 0
    monkeypatch.setattr(mod.cv, "main", fake_main)
    assert mod.main([str(c), "--out", str(tmp_path / "o")]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "chosen on the even parts: 0.05"
    t = pd.read_csv(tmp_path / "o" / "kept_dtype_spill_choice.csv").set_index("spill")
    assert list(t["even_within"]) == [1, 1, 1, 0] and list(t["odd_within"]) == [1, 1, 0, 0]
    assert t.loc[0.05, "even_median"] == pytest.approx(0.01) and t.loc[0.0, "even_median"] == pytest.approx(0.04)
    z = pd.read_csv(tmp_path / "o" / "kept_dtype_spill_zero.csv").set_index("pair")
    assert list(z.loc[["net-gn-train", "net-train-bnkd"], "zero"]) == pytest.approx([0.05, 0.03])
    assert list(z.loc[["net-gn-train", "net-train-bnkd"], "family"]) == ["GroupNorm", "BatchNorm"]
    assert mod.main([str(c), "--spills", "0,x"]) == 2
    assert mod.main([str(c), "--spills", "0,0.05", "--zero-between", "0,0.1"]) == 2
    assert mod.main([str(c / "part-10")]) == 2




def test_host_step_slack_choice_scans_the_pairs_the_slack_moves(tmp_path: Path, monkeypatch, capsys) -> None:
    """gpu/host_step_slack_choice.py: every pair is run at the first and last slack, the pairs whose `given` differs
    (side-a, part 10, and side-b, part 11; still does not move) are scanned at each, and the slack is chosen by the
    even part, ties going to the first listed (0.1 and 100 both put side-a within 5%); too few slacks, a bad list and
    a missing corpus are one-line errors."""
    mod = _load("host_step_slack_choice")
    c = tmp_path / "c"
    for part, name in ((10, "side-a"), (11, "side-b"), (12, "still")):
        (c / f"part-{part}").mkdir(parents=True)
        (c / f"part-{part}" / f"{name}.json").write_text("{}")
    given = {0.01: (1.10, 1.08, 1.0), 0.03: (1.06, 1.03, 1.0), 0.1: (1.01, 1.02, 1.0), 100: (1.01, 1.0, 1.0)}
    seen = []

    def fake_main(argv: list[str]) -> int:
        slack, out = float(argv[argv.index("--host-step-slack") + 1]), argv[argv.index("--out") + 1]
        names = ["side-a", "side-b", "still"]
        if "--pairs" in argv:
            assert argv[argv.index("--pairs") + 1] == "^(side-a|side-b)$"
            names = names[:2]
        seen.append((slack, len(names)))
        pd.DataFrame({"pair": names, "given": given[slack][:len(names)], "measured": 1.0}).to_csv(out, index=False)
        return 0
    monkeypatch.setattr(mod.cv, "main", fake_main)
    assert mod.main([str(c), "--out", str(tmp_path / "o")]) == 0
    assert seen == [(0.01, 3), (100, 3), (0.01, 2), (0.03, 2), (0.1, 2), (100, 2)]
    assert capsys.readouterr().out.splitlines()[-1] == "chosen on the even parts: 0.1"
    t = pd.read_csv(tmp_path / "o" / "host_step_slack_choice.csv").set_index("slack")
    assert list(t["even_within"]) == [0, 0, 1, 1] and list(t["odd_within"]) == [0, 1, 1, 1]
    assert mod.main([str(c), "--slacks", "0.1"]) == 2
    assert mod.main([str(c), "--slacks", "0.1,x"]) == 2
    assert mod.main([str(tmp_path / "none")]) == 2

def test_kept_dtype_spill_linear_check_fits_one_half_and_scores_both() -> None:
    """kept_dtype_spill_choice.linear_check: zeroing spills that are exactly 0.3 - 0.5 x the backward's share give
    that line from either half, and at it every pair's interpolated error is 0; a constant 0.18 leaves the even
    parts' pairs (zeroing spills 0.2 and 0.05, the error moving 1:1 with the spill) at -2% and +13%."""
    mod = _load("kept_dtype_spill_choice")
    share = pd.Series([0.2, 0.3, 0.5, 0.6])
    zero_at = 0.3 - 0.5 * share
    z = pd.DataFrame({"pair": ["a", "b", "c", "d"], "zero": zero_at, "backward_cpu_share": share,
                      "error_lo": -zero_at, "error_hi": 0.3 - zero_at, "spill_lo": 0.0, "spill_hi": 0.3})
    t = mod.linear_check(z, {"a": 10, "b": 11, "c": 12, "d": 13}, 0.18).set_index("fit_on")
    assert t.loc["even", "intercept"] == pytest.approx(0.3) and t.loc["odd", "slope"] == pytest.approx(-0.5)
    assert t.loc["even", "odd_median"] == pytest.approx(0.0, abs=1e-12) and t.loc["odd", "even_within"] == 2
    assert t.loc["constant", "even_within"] == 1 and t.loc["constant", "even_median"] == pytest.approx(0.075)

def test_host_sample_noise_reads_a_slow_host_mode_as_profile_would(tmp_path: Path) -> None:
    """A GPU-bound pair (step 20 ms throughout) whose host ran at 12 ms but at 18 ms in rounds 6 and 11 of 12: three
    spread rounds (0, 6, 11) read the slow mode twice and their median is 18 ms (+50%) whatever the step says; twelve
    read 12 ms. A corpus with no host times is a one-line error that writes nothing."""
    import pandas as pd

    part = tmp_path / "c" / "part-1"
    part.mkdir(parents=True)
    rounds = [r for r in range(12) for _ in range(8)]
    cpu = [18.0 if r in (6, 11) else 12.0 for r in rounds]
    (part / "p.json").write_text(json.dumps({"round": rounds, "cpu_ms": {"A": cpu}, "step_ms": {"A": [20.0] * 96}}))
    out = tmp_path / "n.csv"
    res = subprocess.run([sys.executable, str(ROOT / "gpu/host_sample_noise.py"), str(tmp_path / "c"), "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    s = pd.read_csv(out).set_index(["steps", "rounds", "reading"])
    for reading in ("raw", "same", "other"):
        assert s.loc[(12, 3, reading), "median_abs_error"] == pytest.approx(0.5)
        assert s.loc[(12, 12, reading), "median_abs_error"] == pytest.approx(0.0)
    assert (s.loc[(12, 3, "raw"), "over_10pct"], s.loc[(12, 12, "raw"), "over_10pct"]) == (1, 0)
    res = subprocess.run([sys.executable, str(ROOT / "gpu/host_sample_noise.py"), str(tmp_path / "none"), "--out",
                          str(tmp_path / "x.csv")], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and not (tmp_path / "x.csv").exists()


def test_saving_decomposition_splits_a_step_saving_into_the_module_spans_and_the_rest(tmp_path: Path) -> None:
    """A CPU-held pair: A's step 20 ms, B's 10 ms; the swap's forward saves 3 ms (4 - 1) and its backward 5 ms (A's
    6 ms a step, B's 0.5 ms a call x 2 calls, read at the run's speed), so 2 ms (20%) is the rest. A pair whose GPU
    holds its step is left out, and a corpus with no such pair is a one-line error that writes nothing."""
    import pandas as pd

    part = tmp_path / "c" / "part-12"
    part.mkdir(parents=True)
    back = {"A": {"cpu_us_steps": [6000.0, 6600.0], "step_ms": [20.0, 22.0]},
            "B": {"cpu_us_steps": [1000.0, 1100.0], "calls_steps": [2, 2], "step_ms": [10.0, 11.0]}}
    meta = {"step_ms": {"A": [20.0] * 5, "B": [10.0] * 5}, "swap_cpu_ms": {"A": [4.0] * 5, "B": [1.0] * 5},
            "cpu_ms": {"A": [19.8] * 5}, "backward_pass": back}
    (part / "p.json").write_text(json.dumps(meta))
    (part / "gpu-held.json").write_text(json.dumps({**meta, "cpu_ms": {"A": [12.0] * 5}}))
    val = tmp_path / "v.csv"
    pd.DataFrame({"pair": ["p"], "measured": [2.0], "given": [2.1], "backward_scale": [0.5], "rest_scale": [0.5]}
                 ).to_csv(val, index=False)
    out = tmp_path / "d.csv"
    script = str(ROOT / "gpu/saving_decomposition.py")
    res = subprocess.run([sys.executable, script, str(tmp_path / "c"), "--validation", str(val), "--out", str(out)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    t = pd.read_csv(out)
    assert list(t.pair) == ["p"]
    row = t.iloc[0]
    assert (row.forward_ms, row.backward_ms, row.rest_ms) == pytest.approx((3.0, 5.0, 2.0))
    assert row.rest_share == pytest.approx(0.2) and row.given_error == pytest.approx(0.05)
    assert row.log_backward_over_rest_scale == pytest.approx(0.0)
    (part / "p.json").unlink()
    empty = tmp_path / "e.csv"
    res = subprocess.run([sys.executable, script, str(tmp_path / "c"), "--out", str(empty)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "no pair" in res.stderr and "Traceback" not in res.stderr and not empty.exists()


def test_backward_reading_noise_reads_each_source_and_the_move_between_captures(tmp_path: Path) -> None:
    """A's hooked steps read 5 ms of backward in a 20 ms step (a share of 0.25) in the end-of-pair pass and 4 ms in the
    steps after each round; a second capture (-r40) reads 6 ms: a move of +20%. Steps that all read alike have no
    bootstrap noise. A corpus with no hooked steps, or --repeats that matches nothing, is a one-line error that
    writes nothing."""
    import pandas as pd

    def hooked(span_us: float, n: int = 6) -> dict:
        return {"A": {"cpu_us_steps": [span_us] * n, "calls_steps": [2.0] * n, "step_ms": [20.0] * n},
                "B": {"cpu_us_steps": [500.0] * n, "calls_steps": [2.0] * n, "step_ms": [10.0] * n}}

    base = {"step_ms": {"A": [20.0] * 5, "B": [10.0] * 5}}
    for part, name, meta in ((38, "p", {**base, "backward_pass": hooked(5000.0)}),
                             (40, "p-r40", {**base, "backward_pass": hooked(6000.0),
                                            "backward_spread": hooked(4000.0, 8)})):
        (tmp_path / "c" / f"part-{part}").mkdir(parents=True)
        (tmp_path / "c" / f"part-{part}" / f"{name}.json").write_text(json.dumps(meta))
    script = str(ROOT / "gpu/backward_reading_noise.py")

    def run(*args: str) -> tuple[subprocess.CompletedProcess, Path]:
        out = tmp_path / f"o{len(list(tmp_path.glob('o*.csv')))}.csv"
        res = subprocess.run([sys.executable, script, str(tmp_path / "c"), *args, "--out", str(out)],
                             capture_output=True, text=True, timeout=120)
        return res, out

    res, out = run()
    assert res.returncode == 0, res.stderr[-2000:]
    t = pd.read_csv(out).set_index("pair")
    assert t.share.to_dict() == pytest.approx({"p": 0.25, "p-r40": 0.30}) and (t.noise == 0).all()
    res, out = run("--source", "spread")
    t = pd.read_csv(out).set_index("pair")
    assert t.share.to_dict() == pytest.approx({"p": 0.25, "p-r40": 0.20}) and t.steps.to_dict() == {"p": 6, "p-r40": 8}
    res, out = run("--repeats", ":-r40")
    assert res.returncode == 0, res.stderr[-2000:]
    r = pd.read_csv(out)
    assert list(r.pair) == ["p"] and r.move.iloc[0] == pytest.approx(0.2) and "1 pairs captured twice" in res.stdout
    res, out = run("--repeats=-r12:-r13")
    assert res.returncode == 2 and "no pair captured" in res.stderr and "Traceback" not in res.stderr
    assert not out.exists()
    for f in (tmp_path / "c").rglob("*.json"):
        f.unlink()
    res, out = run()
    assert res.returncode == 2 and "no pair with a hooked" in res.stderr and not out.exists()


def _cast_trace(path: Path, casts_outside: int) -> None:
    """One profiled step: a swap_group call holding one cast, then `casts_outside` casts after it in the forward,
    then the backward (an autograd engine op) with one more cast, which is not the forward's."""
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 1000, "pid": 1, "tid": 1},
          {"ph": "X", "cat": "user_annotation", "name": "swap_group", "ts": 10, "dur": 50, "pid": 1, "tid": 1},
          {"ph": "X", "cat": "cpu_op", "name": "aten::_to_copy", "ts": 20, "dur": 5, "pid": 1, "tid": 1}]
    ev += [{"ph": "X", "cat": "cpu_op", "name": "aten::_to_copy", "ts": 100 + 20 * i, "dur": 7, "pid": 1, "tid": 1}
           for i in range(casts_outside)]
    ev += [{"ph": "X", "cat": "cpu_op", "name": "autograd::engine::evaluate_function: ToCopyBackward0", "ts": 600,
            "dur": 50, "pid": 1, "tid": 2},
           {"ph": "X", "cat": "cpu_op", "name": "aten::_to_copy", "ts": 610, "dur": 9, "pid": 1, "tid": 2}]
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": ev}, f)


def test_consumer_casts_counts_the_forwards_casts_outside_the_swapped_module(tmp_path: Path) -> None:
    """A's forward casts its module's output three times outside the module (7 µs each), B's none: 3 removed, 21 µs;
    the cast inside the module and the backward's are not counted. Beside the validation's table, the CPU-bound CNN
    training pairs split by whether their swap removed such casts; a corpus with no pair is a one-line error that
    writes nothing."""
    import pandas as pd

    part = tmp_path / "c" / "part-40"
    part.mkdir(parents=True)
    for name, outside in (("p", 3), ("q", 0)):
        _cast_trace(part / f"{name}.A.json.gz", outside)
        _cast_trace(part / f"{name}.B.json.gz", 0)
    val = tmp_path / "v.csv"
    pd.DataFrame({"pair": ["p", "q"], "measured": [2.0, 2.0], "given": [2.0, 2.2],
                  "regime_given": ["cpu-bound conv training measured backward"] * 2}).to_csv(val, index=False)
    out = tmp_path / "o.csv"
    script = str(ROOT / "gpu/consumer_casts.py")
    res = subprocess.run([sys.executable, script, str(tmp_path / "c"), "--validation", str(val), "--out", str(out),
                          "--jobs", "1"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    t = pd.read_csv(out).set_index("pair")
    assert t.loc["p", ["casts_a", "casts_b", "removed_casts", "cast_us_a"]].tolist() == pytest.approx([3, 0, 3, 21])
    assert t.loc["q", "removed_casts"] == 0 and t.loc["q", "given_error"] == pytest.approx(0.1)
    assert "2 pairs; the swap removed forward casts outside its module in 1" in res.stdout
    assert "even casts removed      1" in res.stdout and "even  none removed      1" in res.stdout
    for f in part.iterdir():
        f.unlink()
    empty = tmp_path / "e.csv"
    res = subprocess.run([sys.executable, script, str(tmp_path / "c"), "--out", str(empty)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "no pair" in res.stderr and "Traceback" not in res.stderr and not empty.exists()


def _validation():
    spec = importlib.util.spec_from_file_location("replay_corpus_validation", ROOT / "gpu/replay_corpus_validation.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_swap_removes_its_consumers_casts_only_where_a_widened_the_dtype_and_b_kept_it() -> None:
    """swap_dtypes.csv's verdict per pair: A's modules took bfloat16 and returned float32 while B's returned what they
    took (removes); both kept it, or B widened too (GroupNorm under autocast), or nothing was recorded, or the probe
    failed (removes none)."""
    import pandas as pd

    rows = pd.DataFrame([("bn", "bfloat16", "float32", "bfloat16", "bfloat16", ""),
                         ("bnkd", "bfloat16", "bfloat16", "bfloat16", "bfloat16", ""),
                         ("gn", "bfloat16", "float32", "bfloat16", "float32", ""),
                         ("stream", "", "", "", "", ""),
                         ("broken", "bfloat16", "float32", "bfloat16", "bfloat16", "RuntimeError: x")],
                        columns=["pair", "a_in", "a_out", "b_in", "b_out", "error"])
    assert _validation().casts_removed(rows) == {"bn": True, "bnkd": False, "gn": False, "stream": False,
                                                 "broken": False}


@pytest.mark.slow
def test_swap_dtypes_records_each_sides_dtypes_and_refuses_an_unknown_part(tmp_path: Path) -> None:
    """On the CPU (autocast off) a bf16 inference pair's marked LayerNorms take and return bfloat16 on both sides,
    every call of the step counted; a part the corpus lacks is a one-line error and writes nothing."""
    import pandas as pd

    script, out = str(ROOT / "gpu/swap_dtypes.py"), tmp_path / "d.csv"
    res = subprocess.run([sys.executable, script, str(out), "--pairs", "vit-b1-d640-layernorm-8l"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    row = pd.read_csv(out, keep_default_na=False).iloc[0]
    assert (row["pair"], row["part"], row["error"]) == ("vit-b1-d640-layernorm-8l", 42, "")
    assert {row[c] for c in ("a_in", "a_out", "b_in", "b_out")} == {"bfloat16"} and row["a_calls"] == row["b_calls"] > 0
    bad = subprocess.run([sys.executable, script, str(tmp_path / "x.csv"), "--parts", "999"], capture_output=True,
                         text=True, timeout=300)
    assert bad.returncode == 2 and "unknown pairs or parts: 999" in bad.stderr and not (tmp_path / "x.csv").exists()


def test_part_43_is_held_out_38_cnn_training_of_each_dtype_family_first() -> None:
    """Part 43 (heldout38): new pairs, CPU-bound CNN training first, each dtype family (dtype-keeping BatchNorm, plain
    eager BatchNorm, GroupNorm), then transformer training and two inference pairs, fitting one device call."""
    rc = _module()
    _new_part(43, "heldout38", 17, ["resnet18", "resnet18", "resnet50", "mobilenetv2", "resnet18", "resnet34"], 15, 450)
    names = [p.name for p in rc.PAIRS if p.part == 43]
    cnn = [n for n in names if "train" in n and n.split("-")[0] in ("resnet18", "resnet34", "resnet50", "mobilenetv2",
                                                                   "regnety400mf", "efficientnetb0")]
    assert sum(n.endswith("-bnkd") for n in cnn) == 4 and sum(n.endswith("-bn") for n in cnn) == 4
    assert sum("-gn-" in n for n in cnn) == 2


def test_the_cnn_constants_choice_puts_each_candidates_cnn_rows_over_the_right_base(tmp_path: Path) -> None:
    """Each candidate's CNN training rows replace the base's, the base being all_term.csv with the term on and
    all_stands.csv (`given` as it stood) with it off; the table ranks by pairs within ±5%, then the median |error|.
    A corpus without swap_dtypes.csv is a one-line error."""
    import pandas as pd

    spec = importlib.util.spec_from_file_location("cnn_constants_scan", ROOT / "gpu/cnn_constants_scan.py")
    assert spec and spec.loader
    scan = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scan)
    pairs = ["cnn-a", "cnn-b", "gpt-c", "gpt-d"]
    pd.DataFrame({"pair": pairs, "given_error": [0.08, 0.01, 0.02, 0.09]}).to_csv(tmp_path / "all_stands.csv",
                                                                                index=False)
    pd.DataFrame({"pair": pairs, "given_error": [0.5, 0.5, 0.03, 0.01]}).to_csv(tmp_path / "all_term.csv", index=False)
    for term in (False, True):
        for s in scan.SPILLS:
            for w in scan.POOLS:
                # the CNN rows: within for one candidate per term, out for the rest
                good = (s, w) == (0.05, 0.25)
                pd.DataFrame({"pair": ["cnn-a", "cnn-b"], "given_error": [0.02 if good else 0.2, 0.01]}).to_csv(
                    scan.cnn_run(tmp_path, term, s, w), index=False)
    t = scan.choice_table(tmp_path)
    assert len(t) == 2 * len(scan.SPILLS) * len(scan.POOLS)
    best = t.iloc[0]
    # with the term: cnn-a 0.02, cnn-b 0.01, gpt-c 0.03, gpt-d 0.01: 4 within; without it gpt-d's 0.09 stays out
    assert (bool(best.consumer_casts), best.spillover_conv, best.backward_pool_conv, best.within_5pct) == (
        True, 0.05, 0.25, 4)
    stood = t[(~t.consumer_casts) & (t.spillover_conv == 0.1) & (t.backward_pool_conv == 0.5)].iloc[0]
    assert (stood.within_5pct, stood.cnn_training_pairs) == (2, "")
    assert t.within_5pct.is_monotonic_decreasing
    bad = subprocess.run([sys.executable, str(ROOT / "gpu/cnn_constants_scan.py"), str(tmp_path), str(tmp_path / "o")],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "no swap_dtypes.csv" in bad.stderr and not (tmp_path / "o").exists()


def test_the_validation_reads_only_the_pairs_its_filters_keep(tmp_path: Path) -> None:
    """--corpus-regime and --pairs keep the pairs whose JSON regime and name match; none kept is a one-line error."""
    script = str(ROOT / "gpu/replay_corpus_validation.py")
    res = subprocess.run([sys.executable, script, str(ROOT / "results/h200/replay_corpus"), "--corpus-regime", "cnn",
                          "--pairs", "^nothing-is-named-so$", "--out", str(tmp_path / "v.csv")],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "that --dev-only, --corpus-regime and --pairs keep" in res.stderr
    assert not (tmp_path / "v.csv").exists()
    bad = subprocess.run([sys.executable, script, str(ROOT / "results/h200/replay_corpus"), "--pairs", "(",
                          "--out", str(tmp_path / "v.csv")], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and bad.stderr.startswith("--pairs: not a regular expression")


def test_part_44_is_held_out_39_every_regime_under_the_model_as_it_stands() -> None:
    """Part 44 (heldout39): new pairs over every regime (infer-large too), CPU-bound CNN training first (held-out 38
    missed two plain eager BatchNorm pairs), fitting one device call."""
    rc = _module()
    _new_part(44, "heldout39", 17, ["resnet18", "regnety400mf", "resnet50", "resnet18", "mobilenetv2"], 9, 450)
    new = [p for p in rc.PAIRS if p.part == 44]
    assert {p.regime for p in new} == {p.regime for p in rc.PAIRS if p.part < 3} | {"infer-large"}
    assert [p.swap for p in new[-2:]] == ["side-stream", "main-stream"]


def test_part_45_is_held_out_40_every_regime_its_wide_truths_timed_on() -> None:
    """Part 45 (heldout40): new pairs over every regime, CPU-bound CNN training first, then GPU-bound CNN inference
    (where truths were widest); its pairs are timed on while their truth is wider than ±2%, earlier parts' are not."""
    rc = _module()
    _new_part(45, "heldout40", 19, ["resnet18", "regnety400mf", "mobilenetv2", "resnet50", "resnet18"], 10, 1000)
    new = [p for p in rc.PAIRS if p.part == 45]
    assert {p.regime for p in new} == {p.regime for p in rc.PAIRS if p.part < 3} | {"infer-large"}
    assert [p.name for p in new[6:8]] == ["resnet34-infer-b68-bn", "resnet50-infer-b76-bn"]
    assert (rc.EXTEND_FROM, rc.TRUTH_CI) == (45, 0.02)


def test_timing_goes_on_until_the_ratio_is_known_to_its_target_or_its_time_is_spent() -> None:
    """measure: a steady pair stops once its A/B ratio is known to the target; a pair whose A flips between two
    speeds from round to round is timed until its seconds are spent, and no round longer."""
    import time

    rc = _module()
    rc.DEV = "cpu"  # sync() is a no-op

    def variant(ms: Callable[[int], float]) -> object:  # its i-th step sleeps ms(i) milliseconds
        calls = iter(range(10**9))
        return rc.Variant(lambda: time.sleep(ms(next(calls)) / 1e3), rc.SwapTimer())

    def rec() -> dict:
        return {"step_ms": {"A": [], "B": []}, "cpu_ms": {"A": [], "B": []}, "swap_cpu_ms": {"A": [], "B": []},
                "round": []}

    steady = rec()
    t0 = time.perf_counter()
    rc.measure(variant(lambda i: 4.0), variant(lambda i: 2.0), 20.0, steady, min_rounds=1, target=rc.TRUTH_CI)
    _, ci = rc.ratio_ci(steady["step_ms"], steady["round"])
    assert ci <= rc.TRUTH_CI and time.perf_counter() - t0 < 10
    # under 12.5 ms a pair, 40 steps of each a round, after one step of each that sizes the round: A's steps take
    # 4 ms in even rounds and 8 ms in odd ones, so the rounds' ratios never settle
    flipping = rec()
    t0 = time.perf_counter()
    rc.measure(variant(lambda i: 8.0 if (i - 1) // 40 % 2 else 4.0), variant(lambda i: 2.0), 3.0, flipping,
               min_rounds=1, target=rc.TRUTH_CI)
    took = time.perf_counter() - t0
    ratios, ci = rc.ratio_ci(flipping["step_ms"], flipping["round"])
    assert ci > rc.TRUTH_CI and 3.0 < took < 5.0 and len(ratios) >= 3
    assert max(ratios) > 1.5 * min(ratios)


def test_part_46_is_held_out_41_the_same_rules_again() -> None:
    """Part 46 (heldout41): new pairs over every regime, CPU-bound CNN training first (plain eager BatchNorm in
    MobileNetV2, held-out 40's one miss, leads), its wide truths timed on as part 45's were."""
    rc = _module()
    _new_part(46, "heldout41", 19, ["mobilenetv2", "regnety400mf", "resnet50", "efficientnetb0", "resnet18"], 10, 1000)
    new = [p for p in rc.PAIRS if p.part == 46]
    assert {p.regime for p in new} == {p.regime for p in rc.PAIRS if p.part < 3} | {"infer-large"}
    assert min(p.part for p in new) >= rc.EXTEND_FROM


def test_part_47_is_held_out_42_every_regime_its_swapped_modules_also_timed_alone() -> None:
    """Part 47 (heldout42): new pairs over every regime, in two calls of about half each (CPU-bound CNN training split
    between them); from it on each side's swapped modules are also timed alone, as a user times a win's inputs."""
    rc = _module()
    _new_part(47, "heldout42", 17, ["mobilenetv2", "resnet50", "gpt", "bert", "resnet18"], 8, 1000)
    new = [p for p in rc.PAIRS if p.part == 47]
    assert {p.regime for p in new} == {p.regime for p in rc.PAIRS if p.part < 3} | {"infer-large"}
    first, second = new[:8], new[8:15]
    assert sum(p.regime == "cnn" and "train" in p.name for p in first) == 3
    assert sum(p.regime == "cnn" and "train" in p.name for p in second) == 2
    assert rc.ISOLATED_FROM == 47


def test_isolated_cpu_times_each_distinct_call_alone_in_its_context() -> None:
    """isolated_cpu: one timing per distinct call (class, input shapes, context), weighted by its calls per step, each
    with the keyword arguments its call had; a call taking anything but tensors and plain values is counted, not
    timed; the backward is timed where the step ran with grad, not under inference mode."""
    import time

    import torch
    from torch import nn

    rc = _module()
    rc.DEV = "cpu"

    class Slow(nn.Module):
        def forward(self, x: torch.Tensor, scale: float = 1.0, cache: object = None) -> torch.Tensor:
            time.sleep(2e-3 if x.shape[0] > 1 else 1e-3)
            return x * scale

    timer = rc.SwapTimer()
    net = rc.mark(nn.ModuleList([Slow(), Slow(), nn.Linear(4, 4)]), lambda m: isinstance(m, Slow), timer)
    x = torch.randn(2, 4, requires_grad=True)

    def step() -> None:
        h = net[0](x)
        h = net[0](h)  # the same call again: counted, timed once
        h = net[1](h[:1], scale=2.0)  # another shape, with a keyword argument
        net[1](h, cache=object())  # a cache would grow as it is called again: not timed
        net[2](h).sum().backward()

    out = rc.isolated_cpu(rc.Variant(step, timer, [net]))
    assert out["calls_skipped"] == 1 and out["calls_per_step"] == 3
    rows = sorted(out["calls"], key=lambda r: -r["calls_per_step"])
    assert [r["calls_per_step"] for r in rows] == [2, 1]
    assert rows[0]["forward_us"] > 1800 and 900 < rows[1]["forward_us"] < 1800  # each timed on its own inputs
    assert all(r["backward_us"] is not None for r in rows)
    assert out["forward_us_per_call"] == pytest.approx((2 * rows[0]["forward_us"] + rows[1]["forward_us"]) / 3)

    def infer() -> None:
        with torch.inference_mode():
            net[1](x.detach())

    out = rc.isolated_cpu(rc.Variant(infer, timer, [net]))
    assert out["calls_per_step"] == 1 and out["backward_us_per_call"] is None and out["calls"][0]["backward_us"] is None


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "gpu" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _timed_alone_meta() -> dict:
    """A capture's readings of its swapped modules: the hooks pass in the step (module_cpu) and timed alone."""
    return {"pair": "p", "part": 47, "swap_calls_per_step": {"A": 4, "B": 4}, "swap_cpu_ms": {"A": [0.5], "B": [0.2]},
            "module_cpu": {"A": {"modules": {"Eager": {"calls_per_step": 4.0, "cpu_us_per_step": 400.0},
                                             "Net": {"calls_per_step": 1.0, "cpu_us_per_step": 9000.0}}},
                           "B": {"modules": {"Fused": {"calls_per_step": 4.0, "cpu_us_per_step": 120.0}}}},
            "isolated_cpu": {"A": {"forward_us_per_call": 50.0, "backward_us_per_call": 40.0,
                                   "calls": [{"module": "Eager", "calls_per_step": 4}]},
                             "B": {"forward_us_per_call": 10.0, "backward_us_per_call": 8.0,
                                   "calls": [{"module": "Fused", "calls_per_step": 4}]}}}


def test_user_inputs_put_a_replacement_timed_alone_on_the_basis_given_reads() -> None:
    """given_isolated takes B's forward as a user times it alone: the step's reading less what the hooks pass read
    beyond the alone time (here 30 - 10 us a call); given_calibrated multiplies each alone time by the original's
    step-over-alone ratio (forward 100 / 50 us, backward 60 / 40 us a call); none without the timings."""
    mod = _load("replay_corpus_validation")
    meta = _timed_alone_meta()
    out = mod.user_inputs(meta, after=45.0, step_bwd=(240.0, 12.0))
    read = mod.user_inputs({**meta, "in_step_cpu": {"B": {"forward_us_per_call": 24.0, "backward_us_per_call": 9.0}}},
                           after=45.0, step_bwd=(240.0, 12.0))
    assert read["in_step"] == pytest.approx((24.0 + 125.0 - 100.0, 9.0))  # part 48 on: in_step_cpu_us's reading
    assert out["isolated"] == pytest.approx((45.0 - (30.0 - 10.0), 8.0))
    assert out["calibrated"] == pytest.approx((45.0 - (30.0 - 10.0 * 100.0 / 50.0), 8.0 * 60.0 / 40.0))
    # in_step: B's hooks reading (30) on the timer's basis: plus A's timer (500 / 4) less its hooks reading (100)
    assert out["in_step"] == pytest.approx((30.0 + 125.0 - 100.0, 12.0))
    assert "paired" not in out  # before part 49: no alternating-steps reading
    paired = mod.user_inputs({**meta, "paired_cpu": {"forward_ratio": 0.5, "backward_ratio": 0.75}}, 45.0, (240.0, 12.0))
    # paired: A's timer (125) less what the ratio removes of A's hooks reading (100); backward 0.75 x 240 / 4 a call
    assert paired["paired"] == pytest.approx((125.0 - 0.5 * 100.0, 0.75 * 60.0))
    forward_only = mod.user_inputs(meta, after=45.0, step_bwd=None)
    assert forward_only["isolated"][0] == pytest.approx(25.0) and np.isnan(forward_only["calibrated"][1])
    assert mod.user_inputs({**meta, "isolated_cpu": {}}, 45.0, None) == {}
    assert mod.user_inputs(meta, None, None) == {}  # no step reading of B to put it beside
    # a later study's readings fill what the capture did not read, and never replace what it did
    later = {"isolated_cpu": {"A": {"forward_us_per_call": 1.0}}, "paired_cpu": {"forward_ratio": 0.4}}
    assert mod.with_study({**meta, "paired_cpu": {}}, later)["paired_cpu"] == {"forward_ratio": 0.4}
    assert mod.with_study(meta, later)["isolated_cpu"] == meta["isolated_cpu"]


def test_isolated_cpu_table_reads_alone_over_the_step_per_side_and_half(tmp_path: Path) -> None:
    """gpu/isolated_cpu_table.py: per pair and side, the alone time over the hooks pass's; a study's pair takes its
    hooks pass from its capture under --corpus; a folder with none is a one-line error."""
    mod = _load("isolated_cpu_table")
    study = {**_timed_alone_meta(), "step_ms": {"A": [10.0], "B": [8.0]}}
    hooks = study.pop("module_cpu")
    (tmp_path / "iso").mkdir()
    (tmp_path / "iso" / "p.isolated.json").write_text(json.dumps(study))
    (tmp_path / "corpus" / "part-47").mkdir(parents=True)
    (tmp_path / "corpus" / "part-47" / "p.json").write_text(json.dumps({"module_cpu": hooks}))
    t = mod.table(tmp_path / "iso", tmp_path / "corpus")
    row = t.iloc[0]
    assert (row["A_fwd_ratio"], row["B_fwd_ratio"]) == pytest.approx((0.5, 10.0 / 30.0))
    assert np.isnan(row["B_bwd_ratio"]) and row["half"] == mod.half_of("p")
    assert np.isnan(mod.table(tmp_path / "iso").iloc[0]["B_fwd_ratio"])  # no capture to read the step from
    assert "timer vs hooks" not in mod.summary(t)  # not read in alternating steps
    # read in alternating steps too: timer 125 and 50 us a call (0.5 and 0.2 ms over 4 calls) against hooks 100, 40
    (tmp_path / "iso" / "p.isolated.json").write_text(json.dumps(
        {**study, "paired_cpu": {"forward_us_per_call": {"A": 100.0, "B": 40.0}}}))
    line = mod.summary(mod.table(tmp_path / "iso", tmp_path / "corpus")).splitlines()[-1]
    assert "timer less hooks A 25.0 us a call, B 10.0" in line and "timer over by the hooks 1.25" in line
    assert "B/A by the timer 0.40, by the hooks 0.40" in line
    assert mod.main([str(tmp_path / "iso"), "--corpus", str(tmp_path / "corpus"), "--csv", str(tmp_path / "t.csv")]) == 0
    assert (tmp_path / "t.csv").exists()
    (tmp_path / "empty").mkdir()
    res = subprocess.run([sys.executable, str(ROOT / "gpu/isolated_cpu_table.py"), str(tmp_path / "empty")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.strip().startswith("no pair under") and "Traceback" not in res.stderr


def test_user_inputs_read_the_originals_hooks_pass_at_the_timed_steps_speed_from_part_51_on() -> None:
    """Part 51 on, module_cpu.csv's reading of the original is at the timed steps' speed: each step's CPU over the
    host's speed then (here 200, 400 and 240 us over 4 calls at speeds 1, 2 and 1.2: 50 us a call each), the median;
    given_paired and given_in_step carry it, given_paired_raw the pass as it ran (100 us a call)."""
    mod = _load("replay_corpus_validation")
    meta = _timed_alone_meta()
    meta["paired_cpu"] = {"forward_ratio": 0.5, "backward_ratio": None}
    meta["module_cpu"]["A"]["forward_at_speed"] = {
        "step_ms_ref": 10.0, "speed": [1.0, 2.0, 1.2],
        "modules": {"Eager": {"calls_per_step": [4.0, 4.0, 4.0], "cpu_us_per_step": [200.0, 400.0, 240.0]},
                    "Net": {"calls_per_step": [1.0, None, 1.0], "cpu_us_per_step": [8000.0, None, 9000.0]}}}
    assert mod.at_speed_per_call(meta["module_cpu"]["A"], {"Eager"}) == pytest.approx(50.0)
    assert mod.at_speed_per_call(meta["module_cpu"]["A"], {"Net"}) == pytest.approx(7750.0)  # the steps it ran in
    assert np.isnan(mod.at_speed_per_call(meta["module_cpu"]["B"], {"Fused"}))  # not read so
    out = mod.user_inputs(meta, after=45.0, step_bwd=None)
    assert out["paired"][0] == pytest.approx(125.0 - 0.5 * 50.0)
    assert out["paired_raw"][0] == pytest.approx(125.0 - 0.5 * 100.0)
    assert out["in_step"][0] == pytest.approx(30.0 + 125.0 - 50.0)
    assert set(mod.USER_MODELS) >= {"given_paired", "given_paired_raw"}


def test_hooks_pass_speed_reads_each_pairs_pass_over_its_timed_step(tmp_path: Path) -> None:
    """gpu/hooks_pass_speed.py: A's hooks-pass step over its timed step from the capture, only pairs with a paired
    reading, and a one-line error with too few of them."""
    mod = _load("hooks_pass_speed")
    (tmp_path / "corpus" / "part-49").mkdir(parents=True)
    rows = []
    for i in range(4):
        meta = {"step_ms": {"A": [10.0, 10.0]}, "module_cpu": {"A": {"step_ms": [10.0 + 5 * i]}}}
        (tmp_path / "corpus" / "part-49" / f"p{i}.json").write_text(json.dumps(meta))
        rows.append({"pair": f"p{i}", **{f"{m}{s}": 0.01 * i for m in mod.MODELS for s in ("", "_error")}})
    rows.append({"pair": "unread", **{f"{m}{s}": np.nan for m in mod.MODELS for s in ("", "_error")}})
    pd.DataFrame(rows).to_csv(tmp_path / "v.csv", index=False)
    t = mod.table([tmp_path / "v.csv"], tmp_path / "corpus")
    assert list(t["pass_slow"]) == pytest.approx([1.0, 1.5, 2.0, 2.5])
    assert "Spearman of the signed error with log(pass_slow) +1.00" in mod.summary(t)
    assert mod.main([str(tmp_path / "v.csv"), "--corpus", str(tmp_path / "nothing")]) == 2


def test_part_48_is_held_out_43_its_swapped_modules_also_read_as_in_step_cpu_us_reads_them() -> None:
    """Part 48 (heldout43): 9 new pairs in one call, a compiled region first (the class hooks on every module slowed),
    read in the step from it on as scopes.in_step_cpu_us reads a replacement."""
    rc = _module()
    _new_part(48, "heldout43", 9, ["compiled", "resnet18", "mobilenetv2", "resnet18", "gpt"], 4, 400)
    assert rc.IN_STEP_FROM == 48 > rc.ISOLATED_FROM


def test_part_49_is_held_out_44_its_swapped_modules_also_read_against_the_original_in_alternating_steps() -> None:
    """Part 49 (heldout44): 18 new pairs in two calls of about half each, CPU-bound CNN training in both and every
    regime; from it on both sides' swapped modules are also read in alternating steps, as scopes.paired_cpu reads them."""
    rc = _module()
    _new_part(49, "heldout44", 18, ["mobilenetv2", "resnet18", "resnet18", "efficientnetb0", "resnet34"], 10, 800)
    new = [p for p in rc.PAIRS if p.part == 49]
    assert {p.regime for p in new} == {p.regime for p in rc.PAIRS if p.part < 3} | {"infer-large"}
    for half in (new[:9], new[9:]):
        assert sum(p.regime == "cnn" and "train" in p.name for p in half) >= 2 and sum(p.est_s for p in half) + 30 < 420
    assert rc.PAIRED_FROM == 49 > rc.IN_STEP_FROM


def test_part_50_is_held_out_45_five_pairs_cnn_training_first() -> None:
    """Part 50 (heldout45): 5 new pairs for one short call, CPU-bound CNN training first, under part 49's rules."""
    rc = _module()
    _new_part(50, "heldout45", 5, ["mobilenetv2", "resnet18", "efficientnetb0", "llama", "bert"], 3, 240)
    assert all(p.part >= rc.PAIRED_FROM for p in rc.PAIRS if p.part == 50)


def test_part_51_is_held_out_46_its_originals_forward_read_at_the_timed_steps_speed() -> None:
    """Part 51 (heldout46): 10 new pairs in one call, CPU-bound CNN training first; from it on the module_cpu pass's
    forward is read again as `profile` reads it, each step beside a plain step (measure.recorded_at_speed)."""
    rc = _module()
    _new_part(51, "heldout46", 10, ["mobilenetv2", "resnet18", "resnet18", "efficientnetb0", "llama"], 6, 420)
    assert rc.STEP_SPEED_FROM == 51 > rc.PAIRED_FROM
    assert "heldout46" in _load("replay_corpus_validation").HELD


def test_part_52_is_held_out_47_three_pairs_under_part_51s_rules() -> None:
    """Part 52 (heldout47): 3 new pairs for one short call, CPU-bound CNN training first, under part 51's rules."""
    rc = _module()
    _new_part(52, "heldout47", 3, ["resnet18", "resnet18", "bert"], 2, 170)
    assert all(p.part >= rc.STEP_SPEED_FROM for p in rc.PAIRS if p.part == 52)
    assert "heldout47" in _load("replay_corpus_validation").HELD


def test_part_53_is_held_out_48_the_next_members_of_the_families_that_missed() -> None:
    """Part 53 (heldout48): 16 new pairs under part 51's rules, one of each family that missed ±5% on held-outs
    33-43 first (GroupNorm CNN training, a whole-block swap, a side-stream swap, kept-dtype BatchNorm training)."""
    rc = _module()
    _new_part(53, "heldout48", 16, ["resnet18", "gpt", "two", "resnet34", "resnet18"], 12, 480)
    new = [p for p in rc.PAIRS if p.part == 53]
    assert {p.swap for p in new} == {"tiny", "block", "side-stream", "main-stream"}
    assert all(p.part >= rc.STEP_SPEED_FROM for p in new)
    assert "heldout48" in _load("replay_corpus_validation").HELD


def test_part_54_is_held_out_49_cnn_training_that_keeps_its_dtype() -> None:
    """Part 54 (heldout49): 10 new CNN training pairs whose swap keeps its output's dtype (GroupNorm, kept-dtype
    BatchNorm), the class replay.SPILLOVER_CONV_KEPT was chosen on, one of each family first."""
    rc = _module()
    _new_part(54, "heldout49", 10, ["resnet18", "resnet18", "mobilenetv2", "resnet34", "regnety400mf"], 10, 480)
    assert all("-gn-" in p.name or p.name.endswith("-bnkd") for p in rc.PAIRS if p.part == 54)
    assert "heldout49" in _load("replay_corpus_validation").HELD


def test_part_55_is_held_out_50_the_kept_dtype_spills_class_at_its_edges() -> None:
    """Part 55 (heldout50): 7 new CNN training pairs whose swap keeps its output's dtype, at what held-out 49 left
    out: GroupNorm on EfficientNet-B0 and RegNetX-400MF first, then batches that may leave the CPU bound."""
    rc = _module()
    _new_part(55, "heldout50", 7, ["efficientnetb0", "regnetx400mf", "mobilenetv2"], 7, 505)
    new = [p for p in rc.PAIRS if p.part == 55]
    assert all("-gn-" in p.name or p.name.endswith("-bnkd") for p in new)
    gn_archs_before = {p.name.split("-")[0] for p in rc.PAIRS if p.part < 55 and "-gn-" in p.name}
    assert {"efficientnetb0", "regnetx400mf"} <= {p.name.split("-")[0] for p in new if "-gn-" in p.name} - gn_archs_before
    assert "heldout50" in _load("replay_corpus_validation").HELD


def test_part_56_is_held_out_51_steps_the_gpu_alone_outlasts() -> None:
    """Part 56 (heldout51): 10 new pairs for replay.HOST_STEP_SLACK's class, side-stream swaps and GPU-bound BatchNorm
    inference alternating first, then a main-stream swap: every one inference (no backward)."""
    rc = _module()
    _new_part(56, "heldout51", 10, ["two", "resnet18", "two", "resnet34", "two"], 0, 480)
    new = [p for p in rc.PAIRS if p.part == 56]
    assert {p.swap for p in new} == {"side-stream", "main-stream", "tiny"}
    assert [p.regime for p in new].count("multi-stream") == 6 and all("-infer-" in p.name for p in new if p.regime == "cnn")
    assert "heldout51" in _load("replay_corpus_validation").HELD


def test_forward_pool_scan_reads_its_ratio_from_the_even_parts_and_chooses_the_weight_on_them(tmp_path: Path,
                                                                                              monkeypatch) -> None:
    """gpu/forward_pool_scan.py: the ratio is the even parts' median group over uniform scale of the CPU-bound CNN
    training pairs (1.2 here; the odd part's 3.0 is not read), each weight runs the CNN pairs at that ratio, and the
    weight is chosen by the even parts; a missing --before is a one-line error."""
    mod = _load("forward_pool_scan")
    for part, name in ((10, "a"), (11, "b")):
        (tmp_path / "c" / f"part-{part}").mkdir(parents=True)
        (tmp_path / "c" / f"part-{part}" / f"{name}.json").write_text("{}")
    pd.DataFrame({"pair": ["a", "b"], "regime_given": [mod.TRAINING] * 2, "group_scale": [0.6, 1.5],
                  "cpu_scale": [0.5, 0.5]}).to_csv(tmp_path / "before.csv", index=False)
    given = {0.0: (1.06, 1.0), 0.5: (1.02, 1.09)}  # a (even), b (odd) over measured 1

    def fake_main(argv: list[str]) -> int:
        assert argv[argv.index("--forward-pool-ratio") + 1] == "1.2" and "--corpus-regime" in argv
        w, out = float(argv[argv.index("--forward-pool-conv") + 1]), argv[argv.index("--out") + 1]
        pd.DataFrame({"pair": ["a", "b"], "given": given[w], "measured": [1.0, 1.0]}).to_csv(out, index=False)
        return 0
    monkeypatch.setattr(mod.cv, "main", fake_main)
    args = [str(tmp_path / "c"), "--before", str(tmp_path / "before.csv"), "--weights", "0,0.5", "--out", str(tmp_path / "o")]
    assert mod.main(args) == 0
    t = pd.read_csv(tmp_path / "o" / "forward_pool_scan.csv").set_index("w")
    assert list(t["even_within"]) == [0, 1] and list(t["odd_within"]) == [1, 0] and set(t["ratio"]) == {1.2}
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == ["forward_pool_scan.csv", "w0.5.csv", "w0.csv"]
    assert mod.main([str(tmp_path / "c"), "--before", str(tmp_path / "none.csv")]) == 2


def test_concurrent_work_clusters_measure_the_work_two_streams_did_at_once() -> None:
    """concurrent_work_choice.clusters: work 0 ran alone for 100 us and work 1 for 50; at 200-320 and 250-310 they
    overlap for 60 us, and their 150 us of solo work in a 120 us span is R = 1 + 30 / 60 = 1.5. A third kernel with no
    solo sample in that cluster leaves nothing to measure and is what R moves."""
    mod = _load("concurrent_work_choice")
    start, end = np.array([0.0, 200, 400, 250]), np.array([100.0, 320, 450, 310])
    stream, device, kernel = np.array([0, 0, 1, 1]), np.zeros(4, int), np.ones(4, bool)
    found, moves = mod.clusters(start, end, stream, device, kernel, np.array([0, 0, 1, 1]))
    assert list(found["r"]) == [pytest.approx(1.5)] and list(found["overlapped_us"]) == [pytest.approx(60)]
    assert not moves
    found, moves = mod.clusters(start, end, stream, device, kernel, np.array([0, 0, 1, 2]))
    assert found.empty and moves


def test_concurrent_work_replaces_one_only_where_both_halves_do_better() -> None:
    """concurrent_work_choice.better_on_both: more pairs within ±5% on each half, or as many at a lower median."""
    mod = _load("concurrent_work_choice")
    before = pd.Series({"even_within": 6, "even_median": 0.029, "odd_within": 14, "odd_median": 0.020})
    assert not mod.better_on_both(before, before.replace({6: 7, 0.020: 0.027}))
    assert mod.better_on_both(before, before.replace({6: 7, 0.020: 0.019}))


def test_part_57_is_held_out_52_the_next_member_of_each_family_that_missed() -> None:
    """Part 57 (heldout52): 8 new pairs, no change to the model: side-stream norms beside 4-5 GEMMs, GroupNorm and
    kept-dtype BatchNorm training at large batches off ResNet-18, and GPU-bound BatchNorm inference, one of each
    family first."""
    rc = _module()
    _new_part(57, "heldout52", 8, ["two", "resnet50", "resnet34", "efficientnetb0"], 3, 480)
    new = [p for p in rc.PAIRS if p.part == 57]
    assert [p.regime for p in new].count("multi-stream") == 3 and all(p.swap == "side-stream" for p in new
                                                                        if p.regime == "multi-stream")
    assert all(not p.name.startswith("resnet18") for p in new if "-train-" in p.name)
    assert "heldout52" in _load("replay_corpus_validation").HELD
