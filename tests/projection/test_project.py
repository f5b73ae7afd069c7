"""`addressable project`: Amdahl projection of measured kernel speedups onto profiled runs.

Fixture runs (tests/fixtures/runs), per profiled step:
  toy-train    1000 us of kernels: gemm 500, memory 100 (library); elementwise 200, softmax 100,
               normalization 100 (replaceable); step 1.25 ms. Two repeats: elementwise 210 / 190,
               gemm 490 / 510, step 1.2 / 1.3 ms. kernels.csv splits softmax 120 fwd + 80 bwd (of 200).
  all-library  gemm, attention, memory only.
  no-wall      what `classify --out` writes: no step_time_ms, no repeats, no workload key.
  overlap      summed gemm 600, communication 300, elementwise 100; exposed communication 100.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from addressable.classify.taxonomy import load_taxonomy
from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.dlrm_bench import PROBLEMS_DIR, problem_categories
from addressable.projection.project import format_projection, project
from addressable.projection.wins import KERNELBENCH_MAP, Resolver, load_problem_map, load_wins
from addressable.runs.folder import Run, find_runs, load_run

RUNS = Path(__file__).resolve().parents[1] / "fixtures" / "runs"
DATA = Path(__file__).resolve().parents[1] / "data"
TOY, LIB, NOWALL, OVERLAP = (RUNS / n for n in ("toy-train", "all-library", "no-wall", "overlap"))
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "wins.csv"


def wins_file(tmp_path: Path, text: str, name: str = "wins.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def one(tmp_path: Path, text: str, run: Path = TOY, **kw) -> pd.Series:
    """Project one run from a wins.csv text; the run's row."""
    p = project([run], wins_file(tmp_path, text), **kw)
    return p.runs.iloc[0]


# ------------------------------------------------------------------ hand-computed Amdahl


def test_single_category_win(tmp_path: Path) -> None:
    r = one(tmp_path, "target,speedup\nsoftmax,2\n")
    assert r.speedup_kernel == pytest.approx(1 / (0.9 + 0.1 / 2))  # s = 100/1000
    assert r.speedup_wall == pytest.approx(1 / (1 - 0.08 + 0.08 / 2))  # s = 100 us / 1250 us
    assert r.ceiling_kernel == pytest.approx(1 / (1 - 0.4))
    assert r.ceiling_wall == pytest.approx(1 / (1 - 0.32))
    assert r.addressable_fraction == pytest.approx(0.4)
    assert r.addressable_fraction_wall == pytest.approx(0.32)
    assert r.basis == "summed" and r.workload == "toy" and r.run == "toy-train"


def test_two_wins_combine_in_one_amdahl(tmp_path: Path) -> None:
    r = one(tmp_path, "target,speedup\nsoftmax,2\nelementwise,4\n")
    assert r.speedup_kernel == pytest.approx(1 / (1 - 0.3 + 0.1 / 2 + 0.2 / 4))  # = 1.25
    assert r.speedup_kernel == pytest.approx(1.25)
    assert r.speedup_wall == pytest.approx(1 / (1 - 0.24 + 0.08 / 2 + 0.16 / 4))


def test_contributions_each_win_alone_ordered(tmp_path: Path) -> None:
    p = project([TOY], wins_file(tmp_path, "target,speedup\nsoftmax,2\nelementwise,1.2\nnormalization,3\n"))
    c = p.contributions
    assert list(c["group"]) == ["normalization", "softmax", "elementwise"]
    gains = dict(zip(c["group"], c["gain_kernel"], strict=True))
    assert gains["normalization"] == pytest.approx(1 / (0.9 + 0.1 / 3))
    assert gains["softmax"] == pytest.approx(1 / (0.9 + 0.1 / 2))
    assert gains["elementwise"] == pytest.approx(1 / (0.8 + 0.2 / 1.2))
    row = c[c["group"] == "elementwise"].iloc[0]
    assert row["share"] == pytest.approx(0.2) and row["share_wall"] == pytest.approx(0.16)
    assert row["gain_wall"] == pytest.approx(1 / (0.84 + 0.16 / 1.2))
    assert row["k"] == 1.2 and row["class"] == "replaceable" and row["rows"] == [2]


def test_win_on_library_category_is_applied(tmp_path: Path) -> None:
    r = one(tmp_path, "target,speedup\ngemm,2\n")
    assert r.speedup_kernel == pytest.approx(1 / (0.5 + 0.5 / 2))


# ------------------------------------------------------------------ edge cases


def test_huge_k_approaches_ceiling_and_inf_equals_it(tmp_path: Path) -> None:
    huge = one(tmp_path, "target,speedup\nelementwise,1e12\nsoftmax,1e12\nnormalization,1e12\n")
    assert huge.speedup_kernel < huge.ceiling_kernel
    assert huge.speedup_kernel == pytest.approx(huge.ceiling_kernel, rel=1e-9)
    inf = one(tmp_path, "target,speedup\nelementwise,inf\nsoftmax,inf\nnormalization,Infinity\n")
    assert inf.speedup_kernel == inf.ceiling_kernel == pytest.approx(1 / 0.6)
    assert inf.speedup_wall == inf.ceiling_wall
    assert inf.speedup_kernel_hi == inf.ceiling_kernel_hi and inf.speedup_kernel_lo == inf.ceiling_kernel_lo


def test_all_library_workload_is_exactly_one(tmp_path: Path) -> None:
    r = one(tmp_path, "target,speedup\nelementwise,5\nsoftmax,inf\n23_Softmax,3\n", run=LIB)
    for m in ("speedup_kernel", "speedup_wall", "ceiling_kernel", "ceiling_wall"):
        assert r[m] == 1.0 and r[f"{m}_lo"] == 1.0 and r[f"{m}_hi"] == 1.0
    assert r.addressable_fraction == 0.0


def test_absent_category_gives_one_and_is_reported(tmp_path: Path) -> None:
    p = project([TOY], wins_file(tmp_path, "target,speedup\npooling,3\n"))
    assert p.runs.iloc[0].speedup_kernel == 1.0 and p.runs.iloc[0].speedup_wall == 1.0
    c = p.contributions.iloc[0]
    assert (c["group"], c["share"], c["gain_kernel"], c["gain_wall"]) == ("pooling", 0.0, 1.0, 1.0)
    assert list(p.unmatched["target"]) == ["pooling"]
    assert "no kernel time" in p.unmatched.iloc[0]["reason"]
    # present in another run: matched, not listed
    p2 = project([TOY, LIB], wins_file(tmp_path, "target,speedup\nsoftmax,3\n"))
    assert p2.unmatched.empty
    assert list(p2.runs["speedup_kernel"])[1] == 1.0


def test_run_without_kernel_time_is_undefined_not_a_crash(tmp_path: Path) -> None:
    run = tmp_path / "empty"
    run.mkdir()
    (run / "breakdown.json").write_text("{}")
    p = project([run], wins_file(tmp_path, "target,speedup\nsoftmax,2\n"))
    r = p.runs.iloc[0]
    assert math.isnan(r.addressable_fraction) and math.isnan(r.speedup_kernel) and math.isnan(r.ceiling_kernel)
    assert list(p.unmatched["target"]) == ["softmax"]
    res = CliRunner().invoke(main, ["project", "--speedups", str(tmp_path / "wins.csv"), "--runs", str(run)])
    assert res.exit_code == 0 and "n/a" in res.output, res.output


def test_no_wall_run_has_null_wall(tmp_path: Path) -> None:
    p = project([NOWALL], wins_file(tmp_path, "target,speedup\nelementwise,2\n"))
    r = p.runs.iloc[0]
    assert r.speedup_kernel == pytest.approx(1 / (0.75 + 0.25 / 2))
    assert math.isnan(r.speedup_wall) and math.isnan(r.ceiling_wall)
    assert r.workload == "tiny-mlp"  # from manifest.json
    d = p.to_dict()["runs"][0]
    assert d["speedup_wall"] is None and d["speedup_wall_interval"] is None and d["ceiling_wall"] is None
    assert d["speedup_kernel_interval"] == [pytest.approx(1 / 0.875)] * 2


def test_exposed_basis_uses_exposed_times(tmp_path: Path) -> None:
    r = one(tmp_path, "target,speedup\nelementwise,2\n", run=OVERLAP)
    assert r.basis == "exposed"
    assert r.speedup_kernel == pytest.approx(1 / (1 - 0.125 + 0.125 / 2))  # 100 of 800 us exposed
    assert r.ceiling_kernel == pytest.approx(1 / (1 - 0.125))
    assert r.speedup_wall == pytest.approx(1 / (1 - 1 / 9 + 1 / 18))
    # the repeat is rescaled by the exposed/summed ratio, so the interval is a point here
    assert r.speedup_kernel_lo == pytest.approx(r.speedup_kernel) and r.speedup_kernel_hi == pytest.approx(
        r.speedup_kernel)


def test_exposed_needs_streams_overlap(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(OVERLAP, run)
    doc = json.loads((run / "breakdown.json").read_text())
    doc["streams_overlap"] = False
    (run / "breakdown.json").write_text(json.dumps(doc))
    r = one(tmp_path, "target,speedup\nelementwise,2\n", run=run)
    assert r.basis == "summed" and r.speedup_kernel == pytest.approx(1 / 0.95)


def test_exposed_repeat_times_used_when_present(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(OVERLAP, run)
    doc = json.loads((run / "breakdown.json").read_text())
    doc["repeats"][0]["exposed_category_time_per_step_us"] = {"gemm": 600.0, "communication": 200.0,
                                                              "elementwise": 100.0}
    (run / "breakdown.json").write_text(json.dumps(doc))
    r = one(tmp_path, "target,speedup\nelementwise,2\n", run=run)
    assert r.speedup_kernel == pytest.approx(1 / (1 - 0.0625))  # all-steps: 100 of 800 us
    assert r.speedup_kernel_lo == pytest.approx(1 / (1 - 100 / 900 / 2))  # repeat: 100 of 900 us


def test_wall_over_the_work_when_kernels_exceed_step(tmp_path: Path) -> None:
    """Summed kernel time (1000 us/step) above the step (50 us): the wall-clock shares are over the work, so the
    wall fraction and ceiling are the kernel ones (never a wall ceiling above the kernel ceiling), and it says so."""
    run = tmp_path / "run"
    shutil.copytree(OVERLAP, run)
    doc = json.loads((run / "breakdown.json").read_text())
    del doc["exposed_category_time_us"]  # summed: 1000 us of kernels in a 0.9 ms step
    doc["step_time_ms"] = 0.05
    (run / "breakdown.json").write_text(json.dumps(doc))
    p = project([run], wins_file(tmp_path, "target,speedup\nelementwise,2\n"), model="amdahl")
    r = p.runs.iloc[0]
    assert r.addressable_fraction_wall == pytest.approx(r.addressable_fraction)
    assert r.ceiling_wall == pytest.approx(r.ceiling_kernel) and r.speedup_wall == pytest.approx(r.speedup_kernel)
    assert load_run(run).addressable_fraction_wall == pytest.approx(r.addressable_fraction_wall)
    assert any("wall-clock shares are over the summed work" in w for w in p.warnings)


def test_one_wall_fraction_for_profile_breakdown_json_and_project(tmp_path: Path) -> None:
    """The CPU run of issue 26: CPU-op time 116% of the step. profile's printout, breakdown.json and project
    report one wall fraction (they gave 59.2%, 63.7% and 74.2%), never above the work fraction."""
    from addressable.capture.measure import Measurement, manifest, run_keys
    from addressable.capture.profile import ProfileResult, format_profile
    from addressable.capture.workload import WorkloadConfig, get_workload
    from addressable.classify.breakdown import Breakdown, breakdown_from_tables
    from addressable.runs.folder import write_run

    def rep(repl: float, lib: float) -> Breakdown:
        k = pd.DataFrame({"name": ["aten::mm", "aten::tanh"], "category": ["gemm", "elementwise"],
                          "class": ["library", "replaceable"], "time_us": [lib, repl], "count": [1, 1]})
        return breakdown_from_tables(k, "cpu_op_time", n_steps=1)

    reps = [rep(740.0, 420.0), rep(500.0, 500.0)]  # 1160 us of ops in a 0.9 ms step, then 1000 us in 1.1 ms
    both = rep(1240.0, 920.0)
    both.n_steps = 2
    cfg = WorkloadConfig("gpt2", "train", 1, "fp32", "cpu", seq_len=32)
    keys = run_keys(get_workload("gpt2"), cfg, both, reps, [0.9, 1.1], 1.0)
    steps = pd.DataFrame({"repeat": [0, 1], "step": [0, 0], "time_ms": [0.9, 1.1], "profiled": [False, False]})
    m = Measurement(1, 1, 1, 2)
    write_run(tmp_path / "run", both, keys, steps, {**manifest(cfg, m), "measurement": vars(m)})
    printed = format_profile(ProfileResult(both, keys, tmp_path / "run", {"measurement": vars(m), "gpu": None}), "cpu")
    run = load_run(tmp_path / "run")
    p = project([run], wins_file(tmp_path, "target,speedup\nelementwise,2\n"), model="amdahl")
    wall = keys["addressable_fraction_wall"]
    assert wall == pytest.approx(620 / 1080) and wall <= both.addressable_fraction  # over max(work, step)
    assert keys["addressable_fraction_wall_range"] == pytest.approx([500 / 1100, 740 / 1160])
    assert run.addressable_fraction_wall == pytest.approx(wall)
    assert p.runs.iloc[0].addressable_fraction_wall == pytest.approx(wall)
    assert f"Addressable fraction of wall time: {wall:.1%}" in printed
    assert run.fraction_range(wall=True) == pytest.approx(tuple(keys["addressable_fraction_wall_range"]))
    assert p.runs.iloc[0].ceiling_wall <= p.runs.iloc[0].ceiling_kernel + 1e-12


# ------------------------------------------------------------------ targets


def test_regex_target_takes_kernels_from_category(tmp_path: Path) -> None:
    r = one(tmp_path, "target,speedup\nre:softmax_warp_forward,2\n")
    assert r.speedup_kernel == pytest.approx(1 / (1 - 0.06 + 0.06 / 2))  # 120 of 2000 us
    p = project([TOY], wins_file(tmp_path, "target,speedup\nsoftmax,1.5\nre:softmax_warp_forward,2\n"))
    # the regex group takes fwd (0.06) out of softmax first; the softmax group keeps bwd (0.04)
    assert p.runs.iloc[0].speedup_kernel == pytest.approx(1 / (1 - 0.06 + 0.03 - 0.04 + 0.04 / 1.5))
    shares = dict(zip(p.contributions["group"], p.contributions["share"], strict=True))
    assert shares == {"softmax": pytest.approx(0.04), "re:softmax_warp_forward": pytest.approx(0.06)}
    assert p.contributions.set_index("group").loc["re:softmax_warp_forward", "class"] == "replaceable"


def test_overlapping_regex_first_row_wins(tmp_path: Path) -> None:
    p = project([TOY], wins_file(tmp_path, "target,speedup\nre:softmax_warp,2\nre:softmax_warp_backward,10\n"))
    shares = dict(zip(p.contributions["group"], p.contributions["share"], strict=True))
    assert shares == {"re:softmax_warp": pytest.approx(0.1), "re:softmax_warp_backward": 0.0}
    assert p.runs.iloc[0].speedup_kernel == pytest.approx(1 / 0.95)
    assert list(p.unmatched["target"]) == ["re:softmax_warp_backward"]


def test_regex_across_categories_is_mixed(tmp_path: Path) -> None:
    p = project([TOY], wins_file(tmp_path, "target,speedup\nre:vectorized_,2\n"))
    c = p.contributions.iloc[0]
    assert c["class"] == "replaceable" and c["share"] == pytest.approx((400 + 120) / 2000)
    p = project([TOY], wins_file(tmp_path, "target,speedup\nre:vectorized_|nvjet,2\n"))
    assert p.contributions.iloc[0]["class"] == "mixed"


def test_regex_is_case_sensitive(tmp_path: Path) -> None:
    p = project([TOY], wins_file(tmp_path, "target,speedup\nre:SOFTMAX,2\n"))
    assert p.runs.iloc[0].speedup_kernel == 1.0 and len(p.unmatched) == 1
    assert one(tmp_path, "target,speedup\nre:(?i)SOFTMAX,2\n").speedup_kernel == pytest.approx(1 / 0.95)


def test_regex_repeats_scale_with_category(tmp_path: Path) -> None:
    r = one(tmp_path, "target,speedup\nre:GeluCUDAKernelImpl,2\n")  # 240 of 400 us elementwise = 0.12
    assert r.speedup_kernel == pytest.approx(1 / (1 - 0.06))
    assert r.speedup_kernel_hi == pytest.approx(1 / (1 - 0.6 * 0.21 / 2))  # repeat 1: 210 us elementwise
    assert r.speedup_kernel_lo == pytest.approx(1 / (1 - 0.6 * 0.19 / 2))


@pytest.mark.parametrize("target", ["23_Softmax", "Softmax", "softmax.py", "23_softmax.py", "24_LogSoftmax",
                                    "level1/23_Softmax.py", "KernelBench/level1/23_Softmax.py"])
def test_problem_name_targets(tmp_path: Path, target: str) -> None:
    assert one(tmp_path, f"target,speedup\n{target},2\n").speedup_kernel == pytest.approx(1 / 0.95)


@pytest.mark.parametrize(("target", "share"), [("33_BatchNorm", 0.1), ("LayerNorm", 0.1), ("GELU", 0.2),
                                               ("26_GELU_", 0.2), ("19_relu", 0.2), ("88_MinGPTNewGelu", 0.2)])
def test_problem_names_map_to_category(tmp_path: Path, target: str, share: float) -> None:
    assert one(tmp_path, f"target,speedup\n{target},2\n").speedup_kernel == pytest.approx(1 / (1 - share / 2))


def test_kernelbench_map_covers_level1() -> None:
    doc = yaml.safe_load(KERNELBENCH_MAP.read_text())
    level1 = doc["level1"]
    assert len(level1) == 100
    prefixes = [int(re.match(r"(\d+)_", name).group(1)) for name in level1]
    assert sorted(prefixes) == list(range(1, 101))
    known = load_taxonomy().classes
    assert all(c in known for section in doc.values() for c in section.values())
    for name, category in {"1_Square_matrix_multiplication_": "gemm", "23_Softmax": "softmax",
                           "12_Matmul_with_diagonal_matrices_": "elementwise",  # A.unsqueeze(1) * B
                           "33_BatchNorm": "normalization", "41_Max_Pooling_1D": "pooling",
                           "47_Sum_reduction_over_a_dimension": "reduction", "63_conv_standard_2D__square_input__square_kernel": "conv",
                           "87_conv_pointwise_2D": "conv", "89_cumsum": "reduction", "95_CrossEntropyLoss": "loss",
                           "100_HingeLoss": "loss"}.items():
        assert level1[name] == category
    # unprefixed names never point at two categories
    short: dict[str, set[str]] = {}
    for section in doc.values():
        for name, category in section.items():
            short.setdefault(re.sub(r"^\d+_", "", name).lower().strip("_"), set()).add(category)
    assert all(len(v) == 1 for v in short.values())


def test_bench_problem_category_constant(tmp_path: Path) -> None:
    probs = tmp_path / "problems"
    probs.mkdir()
    (probs / "__init__.py").write_text("")
    (probs / "1_EmbeddingBagSum.py").write_text('"""Pooled embedding lookup."""\nCATEGORY = "embedding"\n')
    (probs / "2_JaggedToPadded.py").write_text('"""Jagged to padded dense.\n\nCategory: data_movement\n"""\n')
    (probs / "3_Broken.py").write_text("def (:\n")
    assert problem_categories([probs]) == {"1_EmbeddingBagSum": "embedding", "2_JaggedToPadded": "data_movement"}
    pm = load_problem_map(problem_dirs=[probs])
    assert pm["1_EmbeddingBagSum"] == "embedding" and pm["23_Softmax"] == "softmax"
    run = Run.from_times("dlrm", {"embedding": 300.0, "gemm": 700.0}, {"embedding": "replaceable", "gemm": "library"})
    p = project([run], pd.DataFrame({"target": ["EmbeddingBagSum"], "speedup": [3.0]}), problem_map=pm)
    assert p.runs.iloc[0].speedup_kernel == pytest.approx(1 / (0.7 + 0.1))


def test_packaged_bench_problems_resolve() -> None:
    """The DLRM-Bench problems resolve through their CATEGORY constant, with or without the prefix."""
    pm = load_problem_map()
    known = load_taxonomy().classes
    assert all(c in known for c in pm.values())
    resolver = Resolver(set(known), pm)
    for name, category in problem_categories([PROBLEMS_DIR]).items():
        for target in (name, re.sub(r"^\d+_", "", name), name.upper() + ".py"):
            t, why = resolver.resolve(target, "test")
            assert t is not None and t.category == category, (target, why)


def test_unknown_target_is_an_error_with_a_did_you_mean(tmp_path: Path) -> None:
    """Issue 26: `softmx` exited 0 with "0 win(s) used"; the README says an unknown category is exit 2."""
    with pytest.raises(AddressableError, match=re.escape(
            "wins row 2: unknown target 'softmx': not a category, a re: regex or a known problem name; did you "
            "mean 'softmax'?")):
        project([TOY], wins_file(tmp_path, "target,speedup\nsoftmax,2\nsoftmx,9\n"))
    with pytest.raises(AddressableError, match=r"did you mean '01_embedding_bag_sum_uniform'"):  # a problem name
        project([TOY], wins_file(tmp_path, "target,speedup\n01_embeding_bag_sum_uniform,2\n"))
    with pytest.raises(AddressableError, match=r"unknown target 'flux_capacitor': .*problem name$"):
        project([TOY], wins_file(tmp_path, "target,speedup\nflux_capacitor,9\n"))  # nothing close
    r = CliRunner().invoke(main, ["project", "--speedups", str(wins_file(tmp_path, "target,speedup\nSoftmx,2\n")),
                                  "--runs", str(TOY)])
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "did you mean 'softmax'?" in r.stderr


def test_only_wins_that_matched_count_as_used(tmp_path: Path) -> None:
    """A known category with no time in any run is listed as unmatched, not counted among the wins used."""
    p = project([TOY], wins_file(tmp_path, "target,speedup\nsoftmax,2\nembedding,3\n"))
    assert p.runs.iloc[0].speedup_kernel == pytest.approx(1 / 0.95)
    assert p.wins["used"].tolist() == [True, False]
    assert p.unmatched.to_dict(orient="records") == [
        {"row": 2, "target": "embedding", "speedup": 3.0, "reason": "matched no kernel time in any run"}]
    assert format_projection(p).startswith("Projected end-to-end speedup: 1 win(s) used")
    assert p.to_dict()["left_out_unverified"] == []
    q = project([TOY], wins_file(tmp_path, "target,speedup,verified\nsoftmax,2,false\nembedding,3,false\n"))
    assert [w["target"] for w in q.to_dict()["left_out_unverified"]] == ["softmax", "embedding"]
    q = project([TOY], wins_file(tmp_path, "target,speedup,verified\nsoftmax,2,false\nembedding,3,false\n"),
                include_unverified=True)
    assert q.to_dict()["left_out_unverified"] == [] and q.wins["used"].tolist() == [True, False]


# ------------------------------------------------------------------ combine, verified


def test_best_and_median_combine(tmp_path: Path) -> None:
    text = "target,speedup\nsoftmax,1.5\n23_Softmax,3\nsoftmax,2\n"
    assert one(tmp_path, text).speedup_kernel == pytest.approx(1 / (0.9 + 0.1 / 3))
    assert one(tmp_path, text, combine="median").speedup_kernel == pytest.approx(1 / (0.9 + 0.1 / 2))
    even = "target,speedup\nsoftmax,1.5\nsoftmax,2.5\n"
    assert one(tmp_path, even, combine="median").speedup_kernel == pytest.approx(1 / (0.9 + 0.1 / 2))
    p = project([TOY], wins_file(tmp_path, text))
    c = p.contributions.iloc[0]
    assert c["target"] == "23_Softmax" and c["rows"] == [1, 2, 3]
    with pytest.raises(AddressableError, match="combine"):
        project([TOY], wins_file(tmp_path, text), combine="mean")


def test_unverified_left_out_unless_included(tmp_path: Path) -> None:
    text = "target,speedup,verified\nsoftmax,3,false\nsoftmax,1.5,true\nelementwise,2,no\nnormalization,2,\n"
    r = one(tmp_path, text)
    assert r.speedup_kernel == pytest.approx(1 / (1 - 0.2 + 0.1 / 1.5 + 0.1 / 2))
    p = project([TOY], wins_file(tmp_path, text))
    assert p.to_dict()["left_out_unverified"] == [{"row": 1, "target": "softmax", "speedup": 3.0},
                                                 {"row": 3, "target": "elementwise", "speedup": 2.0}]
    assert p.unmatched.empty
    r = one(tmp_path, text, include_unverified=True)
    assert r.speedup_kernel == pytest.approx(1 / (1 - 0.4 + 0.1 / 3 + 0.2 / 2 + 0.1 / 2))


# ------------------------------------------------------------------ uncertainty


def test_interval_from_repeats(tmp_path: Path) -> None:
    r = one(tmp_path, "target,speedup\nelementwise,4\n")
    assert r.speedup_kernel == pytest.approx(1 / (0.8 + 0.2 / 4))
    assert r.speedup_kernel_lo == pytest.approx(1 / (0.81 + 0.19 / 4))  # repeat 2: 190 of 1000 us
    assert r.speedup_kernel_hi == pytest.approx(1 / (0.79 + 0.21 / 4))  # repeat 1: 210 of 1000 us
    s1, s2 = 210 / 1200, 190 / 1300
    assert r.speedup_wall == pytest.approx(1 / (1 - 0.16 * 0.75))
    assert r.speedup_wall_lo == pytest.approx(1 / (1 - s2 * 0.75))
    assert r.speedup_wall_hi == pytest.approx(1 / (1 - s1 * 0.75))
    assert (r.ceiling_kernel_lo, r.ceiling_kernel_hi) == (pytest.approx(1 / 0.61), pytest.approx(1 / 0.59))
    assert r.ceiling_wall_lo == pytest.approx(1 / (1 - 390 / 1300))
    assert r.ceiling_wall_hi == pytest.approx(1 / (1 - 410 / 1200))
    assert r.n_repeats == 2


def test_interval_from_speedup_spread(tmp_path: Path) -> None:
    r = one(tmp_path, "target,speedup,speedup_lo,speedup_hi\nelementwise,4,3,5\n")
    assert r.speedup_kernel == pytest.approx(1 / (0.8 + 0.2 / 4))
    assert r.speedup_kernel_lo == pytest.approx(1 / (1 - 0.19 * (1 - 1 / 3)))  # lo speedup, repeat minimum
    assert r.speedup_kernel_hi == pytest.approx(1 / (1 - 0.21 * (1 - 1 / 5)))  # hi speedup, repeat maximum
    assert r.speedup_kernel_lo <= r.speedup_kernel <= r.speedup_kernel_hi


def test_interval_without_repeats_is_speedup_spread(tmp_path: Path) -> None:
    r = one(tmp_path, "target,speedup,speedup_lo,speedup_hi\nelementwise,2,1.5,3\n", run=NOWALL)
    assert r.speedup_kernel_lo == pytest.approx(1 / (0.75 + 0.25 / 1.5))
    assert r.speedup_kernel_hi == pytest.approx(1 / (0.75 + 0.25 / 3))


# ------------------------------------------------------------------ KernelBench JSON input


def test_kernelbench_results_json_dict(tmp_path: Path) -> None:
    doc = {"23_Softmax": {"speedup": 2.0, "correct": True}, "19_ReLU": {"speedup": 4.0, "correct": False},
           "95_CrossEntropyLoss": {"speedup": None, "correct": False}}
    p = wins_file(tmp_path, json.dumps(doc), "results.json")
    w = load_wins(p)
    assert list(w["target"]) == ["23_Softmax", "19_ReLU"] and list(w["verified"]) == [True, False]
    assert any("95_CrossEntropyLoss" in m for m in w.attrs["warnings"])
    assert project([TOY], p).runs.iloc[0].speedup_kernel == pytest.approx(1 / 0.95)
    r = project([TOY], p, include_unverified=True).runs.iloc[0]
    assert r.speedup_kernel == pytest.approx(1 / (0.7 + 0.05 + 0.05))


def test_kernelbench_results_json_list(tmp_path: Path) -> None:
    doc = [{"problem": "23_Softmax.py", "speedup": 2, "verified": True},
           {"name": "40_LayerNorm", "speedup": 1.25, "correct": True}]
    r = project([TOY], wins_file(tmp_path, json.dumps(doc), "r.json")).runs.iloc[0]
    assert r.speedup_kernel == pytest.approx(1 / (0.8 + 0.05 + 0.08))


@pytest.mark.parametrize(("text", "match"), [
    ("{not json", "not valid JSON"),
    ('[{"speedup": 2}]', "entry 1 has no 'problem' or 'name'"),
    ('{"23_Softmax": {"speedup": "fast", "correct": true}}', "row 1: speedup 'fast' is not a number"),
    ("[]", "empty"),
    ("[3]", "entry 1 is not an object"),
    ('{"level1/1_Square_matrix_multiplication_.py": {"compiled": true, "correctness": true, "runtime": 2.9}}',
     "holds runtimes but no speedups (KernelBench's eval_results.json does)"),
])
def test_kernelbench_json_errors(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(AddressableError, match=re.escape(match)):
        load_wins(wins_file(tmp_path, text, "r.json"))


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(("text", "match"), [
    ("", "is empty"),
    ("   \n\n", "is empty"),
    ("target,speedup\n", "header but no rows"),
    ("target,verified\nsoftmax,true\n", "missing column(s) speedup"),
    ("name,speedup\nsoftmax,2\n", "missing column(s) target"),
    ("target,speedup\nsoftmax,2\nelementwise,abc\n", "row 2: speedup 'abc' is not a number"),
    ("target,speedup\nsoftmax,0\n", "row 1: speedup must be a positive number, got '0'"),
    ("target,speedup\nsoftmax,-2\n", "row 1: speedup must be a positive number"),
    ("target,speedup\nsoftmax,2\nelementwise,nan\n", "row 2: speedup must be a positive number, got 'nan'"),
    ("target,speedup\nsoftmax,2\nelementwise,\n", "row 2: missing speedup"),
    ("target,speedup\nsoftmax,-inf\n", "row 1: speedup must be a positive number"),
    ("target,speedup\nsoftmax,2\nelementwise,3\nsoftmax,2\n", "rows 1 and 3 are duplicates"),
    ("target,speedup\n,2\n", "row 1: empty target"),
    ("target,speedup,verified\nsoftmax,2,maybe\n", "row 1: verified must be true or false, got 'maybe'"),
    ("target,speedup,speedup_lo\nsoftmax,2,3\n", "row 1: need speedup_lo <= speedup <= speedup_hi"),
    ("target,speedup,speedup_hi\nsoftmax,2,zero\n", "row 1: speedup_hi 'zero' is not a number"),
    ("target,speedup\nsoftmax,2,extra,fields\n", "not a readable CSV"),
])
def test_bad_wins_file(tmp_path: Path, text: str, match: str) -> None:
    with pytest.raises(AddressableError, match=re.escape(match)):
        project([TOY], wins_file(tmp_path, text))


def test_bad_regex_names_row(tmp_path: Path) -> None:
    with pytest.raises(AddressableError, match=re.escape("row 2: invalid regex in target 're:softmax('")):
        project([TOY], wins_file(tmp_path, "target,speedup\nsoftmax,2\nre:softmax(,3\n"))


def test_missing_speedups_file(tmp_path: Path) -> None:
    with pytest.raises(AddressableError, match="no such speedups file"):
        project([TOY], tmp_path / "nope.csv")


def test_same_target_other_speedup_is_not_duplicate(tmp_path: Path) -> None:
    w = load_wins(wins_file(tmp_path, "target,speedup,notes\nsoftmax,2,a\nsoftmax,2.5,b\n"))
    assert list(w["speedup"]) == [2.0, 2.5] and list(w["row"]) == [1, 2]


def test_unknown_column_warns(tmp_path: Path) -> None:
    w = load_wins(wins_file(tmp_path, "target,speedup,speedup_low\nsoftmax,2,1\n"))
    assert any("speedup_low" in m for m in w.attrs["warnings"])


def test_missing_run_folder_and_no_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(AddressableError, match="no such run folder"):
        find_runs([tmp_path / "nope"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(AddressableError, match=r"no breakdown\.json"):
        find_runs([tmp_path / "empty"])
    monkeypatch.chdir(tmp_path)
    with pytest.raises(AddressableError, match="no runs found under outputs"):
        find_runs()


def test_find_runs_below_a_folder() -> None:
    assert find_runs([RUNS]) == sorted([LIB, NOWALL, OVERLAP, TOY])
    assert find_runs([TOY, TOY / "breakdown.json"]) == [TOY]


def test_regex_needs_kernels_csv(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(TOY, run)
    (run / "kernels.csv").unlink()
    with pytest.raises(AddressableError, match=r"no kernels\.csv"):
        project([run], wins_file(tmp_path, "target,speedup\nre:softmax,2\n"))
    assert project([run], wins_file(tmp_path, "target,speedup\nsoftmax,2\n")).runs.iloc[0].speedup_kernel > 1


def test_bad_run_files(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(TOY, run)
    (run / "breakdown.json").write_text("{")
    with pytest.raises(AddressableError, match="not valid JSON"):
        load_run(run)
    shutil.copy(TOY / "breakdown.json", run / "breakdown.json")
    (run / "categories.csv").write_text("category,class,time_us\nsoftmax,replaceable,lots\n")
    with pytest.raises(AddressableError, match=re.escape("categories.csv: bad time_us on row 1 ('softmax')")):
        load_run(run).check()
    (run / "categories.csv").unlink()  # falls back to breakdown.json's categories
    assert load_run(run).times["softmax"] == 200.0


# ------------------------------------------------------------------ JSON schema


def test_json_schema(tmp_path: Path) -> None:
    p = project([TOY, NOWALL], wins_file(tmp_path, "target,speedup\nsoftmax,2\nembedding,3\n"))
    d = json.loads(json.dumps(p.to_dict()))  # strict JSON round trip
    assert set(d) == {"combine", "include_unverified", "runs", "unmatched", "left_out_unverified", "warnings"}
    assert d["combine"] == "best" and d["include_unverified"] is False
    for r in d["runs"]:
        for m in ("speedup_kernel", "speedup_wall", "ceiling_kernel", "ceiling_wall"):
            assert m in r and f"{m}_interval" in r
            iv = r[f"{m}_interval"]
            assert iv is None or (len(iv) == 2 and iv[0] <= r[m] <= iv[1])
        assert {"run", "workload", "basis", "contributions", "addressable_fraction",
                "addressable_fraction_wall", "n_repeats"} <= set(r)
        for c in r["contributions"]:
            assert {"target", "group", "class", "share", "share_wall", "k", "k_interval", "rows", "gain_kernel",
                    "gain_wall"} <= set(c)
    toy = d["runs"][0]
    assert toy["run"] == "toy-train" and toy["basis"] == "summed"
    assert toy["speedup_kernel"] == pytest.approx(1 / 0.95)
    assert d["unmatched"] == [{"row": 2, "target": "embedding", "speedup": 3.0,
                               "reason": "matched no kernel time in any run"}]


def test_json_infinity_is_a_string() -> None:
    run = Run.from_times("all", {"elementwise": 10.0}, {"elementwise": "replaceable"})
    d = project([run], pd.DataFrame({"target": ["elementwise"], "speedup": ["inf"]})).to_dict()
    assert d["runs"][0]["speedup_kernel"] == "inf" and d["runs"][0]["ceiling_kernel"] == "inf"
    json.loads(json.dumps(d, allow_nan=False))


# ------------------------------------------------------------------ properties

CATS = {"gemm": "library", "memory": "library", "elementwise": "replaceable", "softmax": "replaceable",
        "normalization": "replaceable", "reduction": "replaceable"}
REPL = [c for c, k in CATS.items() if k == "replaceable"]
times_st = st.fixed_dictionaries({c: st.floats(0, 1e6, allow_nan=False) for c in CATS}).filter(
    lambda d: sum(d.values()) * 1.5e-3 > 0)  # a step time that does not underflow to 0
k_st = st.floats(1, 1e9, allow_nan=False)


def _run(times: dict[str, float], step_ms: float | None = None) -> Run:
    return Run.from_times("prop", times, CATS, n_steps=1.0, step_time_ms=step_ms)


def _speedup(run: Run, ks: dict[str, float]) -> pd.Series:
    wins = pd.DataFrame({"target": list(ks), "speedup": list(ks.values())})
    return project([run], wins, problem_map={}).runs.iloc[0]


@settings(max_examples=60, deadline=None)
@given(times_st, st.dictionaries(st.sampled_from(REPL), k_st, min_size=1))
def test_never_exceeds_ceiling(times: dict[str, float], ks: dict[str, float]) -> None:
    step_ms = sum(times.values()) * 1.5e-3
    r = _speedup(_run(times, step_ms), ks)
    assert 1.0 <= r.speedup_kernel <= r.ceiling_kernel
    assert 1.0 <= r.speedup_wall <= r.ceiling_wall


@settings(max_examples=40, deadline=None)
@given(times_st, st.lists(st.sampled_from(list(CATS)), min_size=1, unique=True))
def test_k_one_everywhere_is_exactly_one(times: dict[str, float], cats: list[str]) -> None:
    r = _speedup(_run(times, 1.0), dict.fromkeys(cats, 1.0))
    assert r.speedup_kernel == 1.0


@settings(max_examples=60, deadline=None)
@given(times_st, st.sampled_from(list(CATS)), st.floats(0.05, 1e6), st.floats(0.05, 1e6),
       st.dictionaries(st.sampled_from(list(CATS)), st.floats(0.05, 1e6), max_size=3))
def test_monotone_in_k(times: dict[str, float], cat: str, k1: float, k2: float, others: dict[str, float]) -> None:
    lo, hi = sorted((k1, k2))
    run = _run(times)
    a = _speedup(run, {**others, cat: lo}).speedup_kernel
    b = _speedup(run, {**others, cat: hi}).speedup_kernel
    assert a <= b


# ------------------------------------------------------------------ CLI


def test_cli_table(tmp_path: Path) -> None:
    wins = wins_file(tmp_path, "target,speedup,verified\nsoftmax,2,true\nelementwise,4,true\nsoftmax,9,false\n")
    res = CliRunner().invoke(main, ["project", "--speedups", str(wins), "--runs", str(TOY), "--runs", str(LIB)])
    assert res.exit_code == 0, res.output
    assert "toy train b8 s128 bf16 H200 " in res.output and "gemm-only train b8 s128 bf16 H200" in res.output
    assert "1.250x" in res.output  # 1 / (0.7 + 0.05 + 0.05)
    assert "1 unverified win(s) left out" in res.output
    assert "1.667x" in res.output  # ceiling 1 / 0.6


def test_labels_are_unique_full_and_readable(tmp_path: Path) -> None:
    """Runs whose folder names share 27 characters, an eager and a --compile twin, and a CPU run of the
    same configuration each get their own label: workload, mode, batch, dtype, device, compile."""
    names = ["gpt2-train-b8-s1024-bf16-cuda", "gpt2-train-b8-s1024-bf16-cuda-compile", "gpt2-train-b8-s1024-bf16-cpu"]
    for name in names:
        shutil.copytree(TOY, tmp_path / name)
        doc = json.loads((tmp_path / name / "breakdown.json").read_text())
        doc.update(workload="gpt2", batch=8, seq_len=1024, dtype="bf16", device=name.split("-")[5],
                   compile=name.endswith("compile"))
        (tmp_path / name / "breakdown.json").write_text(json.dumps(doc))
    wins = wins_file(tmp_path, "target,speedup,verified\nsoftmax,2,true\n")
    res = CliRunner().invoke(main, ["project", "--speedups", str(wins), "--runs", str(tmp_path)])
    assert res.exit_code == 0, res.output
    rows = [line.split("  ")[0] for line in res.output.splitlines() if line.startswith("gpt2 ") and ":" not in line]
    assert sorted(rows) == ["gpt2 train b8 s1024 bf16 H200", "gpt2 train b8 s1024 bf16 H200 compile",
                            "gpt2 train b8 s1024 bf16 cpu"]
    d = json.loads(CliRunner().invoke(main, ["project", "--speedups", str(wins), "--runs", str(tmp_path),
                                             "--json"]).output)
    assert sorted(r["run"] for r in d["runs"]) == sorted(names)  # the folder names stay in the JSON
    assert len({r["label"] for r in d["runs"]}) == 3


def test_cli_json_and_options(tmp_path: Path) -> None:
    wins = wins_file(tmp_path, "target,speedup,verified\nsoftmax,1.5,true\nsoftmax,2.5,true\nsoftmax,9,false\n")
    args = ["project", "--speedups", str(wins), "--runs", str(TOY), "--json"]
    d = json.loads(CliRunner().invoke(main, args).output)
    assert d["runs"][0]["speedup_kernel"] == pytest.approx(1 / (0.9 + 0.1 / 2.5))
    d = json.loads(CliRunner().invoke(main, [*args, "--combine", "median"]).output)
    assert d["runs"][0]["speedup_kernel"] == pytest.approx(1 / (0.9 + 0.1 / 2))
    d = json.loads(CliRunner().invoke(main, [*args, "--include-unverified"]).output)
    assert d["runs"][0]["speedup_kernel"] == pytest.approx(1 / (0.9 + 0.1 / 9))


def test_cli_default_outputs_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(RUNS, tmp_path / "outputs")
    shutil.copytree(TOY, tmp_path / "outputs" / ".toy.partial")  # half-written runs are skipped
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["project", "--speedups", str(EXAMPLE), "--json"])
    assert res.exit_code == 0, res.output
    assert [r["run"] for r in json.loads(res.stdout)["runs"]] == ["all-library", "no-wall", "overlap", "toy-train"]


def test_cli_warning_on_stderr(tmp_path: Path) -> None:
    wins = wins_file(tmp_path, "target,speedup\nsoftmax,2\nembedding,3\n")  # a category the run has no time in
    res = CliRunner().invoke(main, ["project", "--speedups", str(wins), "--runs", str(TOY), "--json"])
    assert res.exit_code == 0
    assert "warning: wins row 2: target 'embedding' matched no kernel time in any run" in res.stderr
    assert json.loads(res.stdout)["unmatched"][0]["target"] == "embedding"


@pytest.mark.parametrize(("args", "match"), [
    (["--runs", "no/such/run"], "no such run folder"),
    ([], "no runs found"),
])
def test_cli_run_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], match: str) -> None:
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(main, ["project", "--speedups", str(EXAMPLE), *args])
    assert res.exit_code == 2 and match in res.stderr and "Traceback" not in res.output


def test_cli_bad_wins_exit_2(tmp_path: Path) -> None:
    wins = wins_file(tmp_path, "target,speedup\nsoftmax,fast\n")
    res = CliRunner().invoke(main, ["project", "--speedups", str(wins), "--runs", str(TOY)])
    assert res.exit_code == 2 and "row 1: speedup 'fast' is not a number" in res.stderr
    assert res.stdout == ""


def test_example_wins_file_is_valid() -> None:
    w = load_wins(EXAMPLE)
    assert w["notes"].str.contains("measured on H200").all() and w["verified"].all()
    p = project([TOY], EXAMPLE)
    # toy-train: softmax is 10% of kernel time (k 2.0456), the LayerNorm forward kernel 6% (k 1.3311)
    assert p.runs.iloc[0].speedup_kernel == pytest.approx(1 / (0.84 + 0.10 / 2.0456 + 0.06 / 1.3311))
    assert list(p.unmatched["target"]) == ["01_embedding_bag_sum_uniform", "re:(?i)rms_?norm"]


def test_one_run_reader_for_folders_and_trace_files() -> None:
    """runs.load_runs reads run folders and trace files into one Run type, which project and plot both take."""
    from addressable.report import plot
    from addressable.runs.folder import load_runs

    trace = Path(__file__).resolve().parents[1] / "data" / "resnet50_train.json.gz"
    folder, from_trace = load_runs([TOY, trace], step_ms=50.0)
    assert folder.is_folder and not from_trace.is_folder
    assert from_trace.name == from_trace.workload == "resnet50_train"
    assert from_trace.wall_basis == "--step-ms" and from_trace.step_time_ms == 50.0
    assert from_trace.traces == [from_trace.trace] and folder.traces == []
    assert from_trace.times.sum() == pytest.approx(from_trace.kernel_times["time_us"].sum())
    assert from_trace.n_steps >= 1 and from_trace.basis == "summed"
    assert folder.kernel_times is not None and folder.times.sum() > 0
    assert math.isnan(folder.ceiling_kernel_roofline)
    wins = pd.DataFrame({"target": ["softmax"], "speedup": [2.0]})
    assert list(project([folder, from_trace], wins, model="amdahl").runs["run"]) == ["toy-train", "resnet50_train"]
    assert len(plot.projected_speedups([folder], wins)) == 1


def test_target_column_shows_long_targets_and_keeps_them_apart(tmp_path: Path) -> None:
    """issue 26: targets were cut at 29 characters (`re:vectorized_layer_norm_kern`), so two could look alike."""
    from addressable.projection.project import format_projection

    fwd = "re:softmax_warp_forward<float, float, float, 8, false, false>"  # 61 characters
    bwd = "re:softmax_warp_backward<float, float, float, 8, false, false>"
    norm = "re:vectorized_layer_norm_kernel"
    wins = wins_file(tmp_path, f'target,speedup\n"{fwd}",2\n"{bwd}",1.5\n{norm},1.2\nsoftmax,1.1\n')
    text = format_projection(project([TOY], wins), top=5)
    rows = text.split("wins by end-to-end gain (that win alone)\n")[1].splitlines()[1:5]
    targets = [r[2:50].rstrip() for r in rows]
    assert norm in targets  # 31 characters: shown whole now
    assert len(set(targets)) == 4 and all(len(t) <= 48 for t in targets)
    assert any("forward" in t for t in targets) and any("backward" in t for t in targets)
    header = text.split("wins by end-to-end gain (that win alone)\n")[1].splitlines()[0]
    assert header.index("group") == 2 + 49  # the column as wide as its longest entry allows


def test_wall_fraction_of_overlapping_streams_is_on_the_exposed_basis_everywhere(tmp_path: Path) -> None:
    """Kernels on two streams overlap: breakdown.json's wall fraction is over the exposed times, the basis
    project reads for such a run, so breakdown.json, Run and project agree (they differed on DDP runs)."""
    import pandas as pd

    from addressable.capture.measure import Measurement, run_keys
    from addressable.capture.workload import WorkloadConfig, get_workload
    from addressable.classify.breakdown import classify_trace
    from addressable.runs.folder import write_run

    b = classify_trace(DATA / "pairs" / "two-stream-gelu.A.json.gz")
    assert b.timeline is not None and b.timeline.streams_overlap
    step_ms = 1.2 * b.timeline.busy_us / b.n_steps / 1e3  # busy < step < summed: the two bases disagree
    cfg = WorkloadConfig("gpt2", "train", 1, "bf16", "cuda", seq_len=32)
    keys = run_keys(get_workload("gpt2"), cfg, b, [b], [step_ms], step_ms)
    assert "exposed_category_time_per_step_us" in keys["repeats"][0]
    repl, _ = b.wall_times()
    assert keys["addressable_fraction_wall"] == pytest.approx(repl / (step_ms * 1e3 * b.n_steps))
    m = Measurement(1, 1, 1, 1)
    steps = pd.DataFrame({"repeat": [0], "step": [0], "time_ms": [step_ms], "profiled": [False]})
    write_run(tmp_path / "run", b, keys, steps, {"measurement": vars(m)})
    run = load_run(tmp_path / "run")
    p = project([run], wins_file(tmp_path, "target,speedup\nelementwise,2\n"), model="amdahl")
    assert run.basis == "exposed"
    assert run.addressable_fraction_wall == pytest.approx(keys["addressable_fraction_wall"])
    assert p.runs.iloc[0].addressable_fraction_wall == pytest.approx(keys["addressable_fraction_wall"])
    assert run.fraction_range(wall=True) == pytest.approx(tuple(keys["addressable_fraction_wall_range"]))
