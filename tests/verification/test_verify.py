"""verify: a zoo of cheating candidates, each rejected by the right named check; honest ones accepted."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.verification import sandbox
from addressable.verification.checks import MARKER, check, gpu_work, stream_checks
from addressable.verification.harness import load_module, make_inputs, parse_overrides
from addressable.verification.invariants import parse_invariants
from addressable.verification.runner import (
    EXIT_CODES,
    WINS_COLUMNS,
    Thresholds,
    VerifyResult,
    batch_exit_code,
    helper_env,
    verify,
    verify_batch,
)
from addressable.verification.sandbox import Limits, Sandbox, bwrap_command, sandbox_available, scrubbed_env
from addressable.verification.session import review_flags

ROOT = Path(__file__).resolve().parents[2]
ZOO = Path(__file__).resolve().parent / "zoo"
SOFTMAX = ZOO / "softmax_long.py"
EXAMPLES = ROOT / "examples"
FAST = {"calls": 0, "isolate": False}  # in-process, no timing: the checks alone


def _check(path: Path, candidate: str, **kw) -> VerifyResult:
    return verify(path, ZOO / f"{candidate}.py", **{**FAST, **kw})


def _passed_or_noisy(verdict: str, reason: str) -> bool:
    """A pass, or a review only because CPU timing on a loaded machine was noisy (an IQR wider than the
    median, a speedup a load spike made, the reference slower once than before)."""
    noise = ("timing is noisy", "check the timing by hand")
    return verdict == "pass" or (verdict == "review" and all(any(n in f for n in noise) for f in reason.split("; ")))


def _failed(r: VerifyResult) -> set[str]:
    return {k for k, v in r.checks.items() if not v["passed"]}


def test_all_zeros_pass_allclose_but_fail_written_and_rel_fro() -> None:
    """The KernelBench hole: all zeros are within atol=1e-2 of a long-row softmax."""
    problem = load_module(SOFTMAX)
    ref = problem.Model()(*problem.get_inputs())
    assert torch.allclose(torch.zeros_like(ref), ref, atol=1e-2, rtol=1e-2)
    r = _check(SOFTMAX, "cheat_zeros")
    assert r.verdict == "fail" and r.speedup is None
    assert {"written", "rel_fro", "max_err"} <= _failed(r)
    assert r.checks["written"]["value"] == pytest.approx(1.0)
    assert "written" in r.reason


@pytest.mark.parametrize(("candidate", "named"), [
    ("cheat_first_rows", {"sentinel", "written", "finite"}),   # torch.empty, only row 0 written
    ("cheat_first_rows_zeros", {"written", "rel_fro"}),        # zero-filled, only row 0 written
    ("cheat_nan", {"finite"}),
    ("cheat_cached", {"fresh"}),
    ("cheat_hardcoded_seed", {"fresh", "rel_fro"}),
    ("cheat_uniform_rows", {"rel_fro", "max_err"}),
    ("cheat_wrong_dtype", {"dtype"}),
])
def test_cheats_are_rejected_by_the_named_check(candidate: str, named: set[str]) -> None:
    r = _check(SOFTMAX, candidate)
    assert r.verdict == "fail"
    assert named <= _failed(r), (named, r.reason)


def test_mutating_the_input_fails_only_inputs_unchanged() -> None:
    """The output is right (the reference ran on a clone), but the caller's tensor is destroyed."""
    r = _check(SOFTMAX, "cheat_mutates_input")
    assert _failed(r) == {"inputs_unchanged"}
    assert r.checks["inputs_unchanged"]["value"] == pytest.approx(1.0)


def test_right_row_sums_are_not_enough() -> None:
    """Uniform rows satisfy every declared invariant and still fail on values."""
    r = _check(SOFTMAX, "cheat_uniform_rows")
    assert r.checks["invariant:rows_sum_to_one"]["passed"] and r.checks["invariant:probability"]["passed"]
    assert not r.checks["rel_fro"]["passed"]


def test_stale_and_hard_coded_outputs_pass_trial_0_only() -> None:
    for candidate in ("cheat_cached", "cheat_hardcoded_seed"):
        r = _check(SOFTMAX, candidate)
        assert r.trials[0]["failed"] == []
        assert "fresh" in r.trials[1]["failed"] and "rel_fro" in r.trials[1]["failed"]


def test_trials_use_fresh_seeds_and_a_second_distribution() -> None:
    r = _check(SOFTMAX, "honest_torch", trials=4, seed=7)
    assert [t["seed"] for t in r.trials] == [7, 8, 9, 10]
    assert {t["distribution"] for t in r.trials} >= {"native", "randn"}


@pytest.mark.parametrize(("candidate", "allow"), [("honest_torch", None), ("honest_bf16", "bf16")])
def test_honest_candidates_pass(candidate: str, allow: str | None) -> None:
    r = _check(SOFTMAX, candidate, allow_precision=allow)
    assert r.verdict == "pass", r.reason
    assert all(v["passed"] for v in r.checks.values())
    assert {"rel_fro", "max_err", "written", "sentinel", "finite", "inputs_unchanged", "fresh", "shape", "dtype",
            "invariant:rows_sum_to_one", "invariant:probability", "precision", "tampered"} <= set(r.checks)


def test_bf16_is_within_rel_fro_but_reviewed_as_lower_precision() -> None:
    """Softmax computed in bf16 passes the 2e-2 comparison, but its error against float64 is thousands of
    times the fp32 reference's own: review, named as bf16, unless bf16 is allowed (it is still reported)."""
    r = _check(SOFTMAX, "honest_bf16")
    assert 1e-4 < r.checks["rel_fro"]["value"] < 2e-2
    assert r.verdict == "review" and r.checks["precision"]["passed"] is None
    assert "lower precision than the reference" in r.reason and "consistent with bf16" in r.reason
    assert r.precision["float64"] and r.precision["candidate_error"] > 1000 * r.precision["reference_error"]
    allowed = _check(SOFTMAX, "honest_bf16", allow_precision="bf16")
    assert allowed.precision["consistent_with"] == "bf16" and allowed.precision["allowed"] == "bf16"
    assert _check(SOFTMAX, "honest_bf16", allow_precision="tf32").verdict == "review"  # TF32 is 8x more precise
    assert _check(SOFTMAX, "honest_bf16", thresholds=Thresholds(precision_ratio=1e6)).verdict == "pass"
    strict = _check(SOFTMAX, "honest_bf16", thresholds=Thresholds(rel_fro=1e-4))
    assert "rel_fro" in _failed(strict)
    with pytest.raises(AddressableError, match="--allow-precision must be one of"):
        _check(SOFTMAX, "honest_bf16", allow_precision="fp8")


def test_integer_inputs_offsets_weights_and_custom_invariants() -> None:
    problem = ZOO / "embedding_bag.py"
    r = verify(problem, ZOO / "honest_embedding_bag.py", **FAST)
    assert r.verdict == "pass", r.reason
    assert r.checks["custom:one_row_per_bag"]["passed"] and "custom:no_nan" in r.checks
    assert [t["distribution"] for t in r.trials][:2] == ["native", "randn"]
    assert all("note" not in t for t in r.trials)  # re-drawn offsets stayed valid


def test_make_inputs_redraw_keeps_domains() -> None:
    problem = load_module(ZOO / "embedding_bag.py")
    native = make_inputs(problem, 3, "native", "cpu")
    again = make_inputs(problem, 3, "native", "cpu")
    assert all(torch.equal(a, b) for a, b in zip(native, again, strict=True))
    idx, off = make_inputs(problem, 3, "randn", "cpu")
    assert idx.dtype == native[0].dtype and idx.shape == native[0].shape and not torch.equal(idx, native[0])
    assert int(idx.min()) >= int(native[0].min()) and int(idx.max()) <= int(native[0].max())
    assert bool((off[1:] >= off[:-1]).all()) and off[0] == native[1][0] and off[-1] == native[1][-1]
    (x,) = make_inputs(load_module(SOFTMAX), 3, "randn*2", "cpu")
    assert x.dtype == torch.float32 and bool((x >= 0).all()) and float(x.max()) > 1.0  # not torch.rand


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 5), min_size=1, max_size=3), st.integers(-50, 50), st.integers(0, 100),
       st.sampled_from(["randn", "randn*2", "randn*0.1"]), st.integers(0, 2**31))
def test_redraw_properties(shape: list[int], lo: int, span: int, dist: str, seed: int) -> None:
    """Same shapes and dtypes; integers stay within the native [min, max]; floats stay finite."""

    class P:
        @staticmethod
        def get_inputs():
            return [torch.randint(lo, lo + span + 1, shape), torch.randn(shape).double(), torch.rand(shape), 3]

    ints, f64, f32, three = make_inputs(P, seed, dist, "cpu")
    native = make_inputs(P, seed, "native", "cpu")
    assert three == 3
    for new, old in zip((ints, f64, f32), native[:3], strict=True):
        assert new.shape == old.shape and new.dtype == old.dtype
    assert int(ints.min()) >= int(native[0].min()) and int(ints.max()) <= int(native[0].max())
    assert bool(torch.isfinite(f64).all()) and bool((f32 >= 0).all())


def test_invariant_broken_by_the_reference_is_skipped(tmp_path: Path) -> None:
    """Identity on torch.rand: 'probability' holds on native inputs, not on inputs re-drawn ×2."""
    problem = tmp_path / "identity.py"
    problem.write_text(
        "import torch\nfrom torch import nn\nn_el = 64\n\nclass Model(nn.Module):\n"
        "    def forward(self, x):\n        return x * 1.0\n\n"
        "def get_inputs():\n    return [torch.rand(n_el)]\n\ndef get_init_inputs():\n    return []\n\n"
        "INVARIANTS = ['probability']\n\n"
        "def check_invariants(inputs, output):\n    return {'first': float(output[0] - inputs[0][0])}\n")
    cand = tmp_path / "cand.py"
    cand.write_text("from torch import nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                    "        return x.clone()\n")
    r = verify(problem, cand, trials=4, **FAST)
    assert r.verdict == "pass", r.reason
    assert r.trials[0]["skipped_invariants"] == [] and "invariant:probability" in r.trials[3]["skipped_invariants"]
    bad = tmp_path / "bad.py"
    bad.write_text("from torch import nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                   "        return x[:0]\n")  # custom check raises on it: a candidate failure
    r = verify(problem, bad, **FAST)
    assert r.verdict == "fail" and not r.checks["shape"]["passed"] and not r.checks["custom:first"]["passed"]


def test_timing_speedup_and_review_flag() -> None:
    r = verify(SOFTMAX, ZOO / "honest_torch.py", calls=5, warmup=1, isolate=False,
               thresholds=Thresholds(review_speedup=0.0))
    assert r.verdict == "review" and r.exit_code == 3 and r.timing_runs >= 5
    assert r.timed_inputs == "problem"  # timed on get_inputs() itself, under fresh seeds
    assert r.speedup == pytest.approx(r.ref_ms / r.candidate_ms)
    assert r.speedup_lo <= r.speedup <= r.speedup_hi
    assert r.review and "check the timing by hand" in r.reason
    row = r.wins_row()  # a review is not verified: project leaves it out unless --include-unverified
    assert row["verified"] is False and row["notes"].startswith("REVIEW") and row["target"] == "softmax_long"


def test_a_seed_blind_problem_is_timed_on_redrawn_inputs(tmp_path: Path) -> None:
    """get_inputs() that ignores the seed cannot give fresh timed inputs: the harness re-draws them and says why."""
    problem = tmp_path / "blind.py"
    problem.write_text(
        "import torch\nfrom torch import nn\n\nclass Model(nn.Module):\n    def forward(self, x):\n"
        "        return x * 2.0\n\ndef get_inputs():\n    return [torch.linspace(-1, 1, 256)]\n\n"
        "def get_init_inputs():\n    return []\n")
    cand = tmp_path / "cand.py"
    cand.write_text("from torch import nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                    "        return x + x\n")
    r = verify(problem, cand, calls=3, warmup=1, isolate=False, thresholds=Thresholds(review_speedup=1e9))
    assert r.timed_inputs == "redraw" and "same inputs for every seed" in r.timed_inputs_note, r.timed_inputs_note


# ---------------------------------------------------------------- isolation: crash, hang, compile error


def test_subprocess_pass_reports_timing() -> None:
    r = verify(SOFTMAX, ZOO / "honest_torch.py", calls=3, warmup=1, timeout=120,
               thresholds=Thresholds(review_speedup=1e9))  # a loaded CPU can make any ratio
    assert _passed_or_noisy(r.verdict, r.reason), r.reason
    assert r.ref_ms > 0 and r.candidate_ms > 0 and r.speedup > 0 and r.env["device"] == "cpu"
    # each model's host time a call comes through (on the CPU it is the call's time), and no backlog
    assert r.ref_host_ms > 0 and r.candidate_host_ms > 0 and r.backlog_ms == 0.0
    assert {"ref_host_ms", "candidate_host_ms", "backlog_ms"} <= set(r.to_dict())


def test_hanging_candidate_times_out_cleanly() -> None:
    t0 = time.perf_counter()
    r = verify(SOFTMAX, ZOO / "cheat_sleeps.py", timeout=6)
    assert time.perf_counter() - t0 < 30
    assert r.verdict == "fail" and r.reason.startswith("timed out after 6 s") and r.speedup is None


def test_crashing_candidate_is_a_fail_verdict() -> None:
    r = verify(SOFTMAX, ZOO / "cheat_crashes.py", timeout=120)
    assert r.verdict == "fail" and "crashed with exit code 3" in r.reason and "candidate, trial 0" in r.reason


@pytest.mark.parametrize(("candidate", "reason"), [
    ("cheat_raises", "candidate raised on trial 0: RuntimeError"),
    ("import_error", "candidate failed to build: ImportError"),
])
def test_candidate_errors_are_fail_verdicts(candidate: str, reason: str) -> None:
    r = _check(SOFTMAX, candidate)
    assert r.verdict == "fail" and r.reason.startswith(reason)


def test_syntax_error_is_a_compile_fail(tmp_path: Path) -> None:
    cand = tmp_path / "broken.py"
    cand.write_text("class ModelNew(\n")
    r = verify(SOFTMAX, cand, **FAST)
    assert r.verdict == "fail" and r.reason.startswith("candidate does not compile: SyntaxError")


@pytest.mark.parametrize(("problem", "candidate", "message"), [
    ("missing.py", "honest_torch.py", "reference file not found"),
    ("softmax_long.py", "missing.py", "candidate file not found"),
    ("honest_torch.py", "honest_torch.py", "not a KernelBench problem: no Model, get_inputs"),
    ("softmax_long.py", "no_modelnew.py", "defines no ModelNew"),
])
def test_bad_input_is_an_addressable_error(problem: str, candidate: str, message: str) -> None:
    with pytest.raises(AddressableError, match=message):
        verify(ZOO / problem, ZOO / candidate, **FAST)


def test_bad_options() -> None:
    with pytest.raises(AddressableError, match="no module-level constant 'nope'"):
        verify(SOFTMAX, ZOO / "honest_torch.py", overrides={"nope": 1}, **FAST)
    with pytest.raises(AddressableError, match="at least 2"):
        verify(SOFTMAX, ZOO / "honest_torch.py", trials=1, **FAST)
    with pytest.raises(AddressableError, match="NAME=VALUE"):
        parse_overrides(["batch_size"])
    assert parse_overrides("a=2; b=[1,2] c=x") == {"a": 2, "b": [1, 2], "c": "x"}
    with pytest.raises(AddressableError, match="unknown invariant 'sums'"):
        parse_invariants(["sums"])
    with pytest.raises(AddressableError, match="unexpected keyword"):
        parse_invariants([("unit_norm", {"axis": 0})])


def test_overrides_resize_the_problem() -> None:
    r = verify(SOFTMAX, ZOO / "honest_torch.py", overrides={"batch_size": 3, "dim": 100}, **FAST)
    assert r.checks["shape"]["value"] == [3, 100]


# ---------------------------------------------------------------- batch and CLI


def _pairs(tmp_path: Path) -> Path:
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("problem,candidate,source,notes,set\n"
                     f"{SOFTMAX},{ZOO / 'honest_torch.py'},torch,baseline,dim=1000\n"
                     f"{SOFTMAX},{ZOO / 'cheat_zeros.py'},,zeros,\n")
    return pairs


def test_verify_batch_writes_wins_that_project_reads(tmp_path: Path) -> None:
    df = verify_batch(_pairs(tmp_path), json_dir=tmp_path / "json", calls=0, isolate=False)
    assert list(df.columns) == [*WINS_COLUMNS, "problem", "candidate", "verdict"]
    assert WINS_COLUMNS == ["target", "speedup", "verified", "source", "notes", "speedup_lo", "speedup_hi"]
    assert df["target"].tolist() == ["softmax_long", "softmax_long"]
    assert df["verdict"].tolist() == ["pass", "fail"] and df["candidate"].tolist() == ["honest_torch.py", "cheat_zeros.py"]
    assert df["verified"].tolist() == [True, False]
    assert df.loc[1, "speedup"] == 1.0 and "written" in df.loc[1, "notes"]
    assert df.loc[0, "source"] == "torch" and df.loc[0, "notes"].startswith("baseline")
    files = sorted(p.name for p in (tmp_path / "json").iterdir())
    assert files == ["verify_softmax_long__cheat_zeros.json", "verify_softmax_long__honest_torch.json"]
    assert json.loads((tmp_path / "json" / files[1]).read_text())["checks"]["shape"]["value"] == [4, 1000]
    from addressable.projection import wins as wins_file
    wins_csv = tmp_path / "wins.csv"
    df[WINS_COLUMNS].to_csv(wins_csv, index=False)
    wins = wins_file.load_wins(wins_csv)
    assert wins["verified"].tolist() == [True, False]


def test_cli_verify_json_and_exit_codes() -> None:
    runner = CliRunner()
    res = runner.invoke(main, ["verify", str(SOFTMAX), str(ZOO / "honest_torch.py"), "--json", "--calls", "3",
                               "--warmup", "1", "--set", "dim=2000", "--review-speedup", "1e9"])
    d = json.loads(res.output)
    assert res.exit_code == {"pass": 0, "review": 3}[d["verdict"]], res.output
    assert {"verdict", "checks", "speedup", "ref_ms", "candidate_ms", "reason"} <= set(d)
    assert _passed_or_noisy(d["verdict"], d["reason"]) and d["speedup"] > 0
    assert set(d["checks"]["rel_fro"]) == {"value", "threshold", "passed"}
    res = runner.invoke(main, ["verify", str(SOFTMAX), str(ZOO / "cheat_zeros.py"), "--json"])
    assert res.exit_code == 1
    d = json.loads(res.output)
    assert d["verdict"] == "fail" and d["speedup"] is None and d["checks"]["written"]["passed"] is False
    res = runner.invoke(main, ["verify", str(SOFTMAX), str(ZOO / "cheat_zeros.py"), "--rel-fro", "2"])
    assert res.exit_code == 1 and "FAIL" in res.output and "written" in res.output


@pytest.mark.parametrize("args", [
    ["verify", str(ZOO / "missing.py"), str(ZOO / "honest_torch.py")],
    ["verify", str(SOFTMAX), str(ZOO / "no_modelnew.py")],
    ["verify", str(ZOO / "honest_torch.py"), str(ZOO / "honest_torch.py")],
    ["verify", str(SOFTMAX), str(ZOO / "honest_torch.py"), "--set", "nope=1"],
    ["verify", str(SOFTMAX), str(ZOO / "honest_torch.py"), "--trials", "1"],
    ["verify-batch", str(ZOO / "missing.csv"), "--wins-out", "w.csv"],
    ["verify", str(SOFTMAX), str(ROOT / "tests/data/not_python.png")],
    ["verify", str(ROOT / "tests/data/not_python.png"), str(ZOO / "honest_torch.py")],
])
def test_cli_bad_input_is_one_line_exit_2(args: list[str]) -> None:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert res.output.startswith("error: ") and res.output.count("\n") == 1


def test_cli_verify_batch(tmp_path: Path) -> None:
    wins = tmp_path / "out" / "wins.csv"
    res = CliRunner().invoke(main, ["verify-batch", str(_pairs(tmp_path)), "--wins-out", str(wins),
                                    "--json-dir", str(tmp_path / "j"), "--calls", "0"])
    assert res.exit_code == 1, res.output  # one pair failed
    assert "1 passed, 0 to review, 1 failed of 2" in res.output
    assert "softmax_long <- cheat_zeros.py" in res.output  # rows are labelled by problem file and candidate
    df = pd.read_csv(wins)  # passes only
    assert df["verified"].tolist() == [True] and len(list((tmp_path / "j").iterdir())) == 2
    bad = tmp_path / "bad.csv"
    bad.write_text("problem\nx.py\n")
    res = CliRunner().invoke(main, ["verify-batch", str(bad), "--wins-out", str(wins)])
    assert res.exit_code == 2 and "needs columns problem,candidate" in res.output
    bad.write_text(f"problem,candidate\n{SOFTMAX},{ZOO / 'honest_torch.py'}\n{SOFTMAX},missing.py\n")
    res = CliRunner().invoke(main, ["verify-batch", str(bad), "--wins-out", str(wins)])
    assert res.exit_code == 2 and "row 2: candidate file not found" in res.output


# ---------------------------------------------------------------- real Triton candidates (interpreter)


def _triton_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # read by the verification subprocess at triton import


@pytest.mark.parametrize(("stem", "sizes"), [
    ("01_softmax_long_rows", {"batch_size": 2, "dim": 9000}),  # several chunks per row, ragged tail
    ("02_rmsnorm", {"tokens": 5, "hidden": 1000}),
    ("03_layernorm", {"tokens": 5, "hidden": 1000}),
    ("04_frobenius_norm", {"batch_size": 1, "features": 2, "dim1": 100, "dim2": 70}),
])
def test_triton_candidates_pass_in_the_interpreter(stem: str, sizes: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    _triton_interpreter(monkeypatch)
    r = verify(EXAMPLES / "problems" / f"{stem}.py", EXAMPLES / "candidates" / f"{stem}_triton.py",
               overrides=sizes, calls=0, timeout=300)
    assert r.verdict == "pass", r.reason
    assert r.env.get("triton_interpret") and r.checks["rel_fro"]["value"] < 1e-5


def test_triton_kernels_compile_for_hopper() -> None:
    """Compile every example kernel for sm_90 (no GPU needed: the GPU run must not hit a compile error)."""
    triton = pytest.importorskip("triton")
    try:
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
    except ImportError:
        pytest.skip("this triton has no ASTSource/GPUTarget")
    p, i32 = "*fp32", "i32"
    cases = {
        "01_softmax_long_rows_triton": [
            ("_chunk_stats", ["x_ptr", "m_ptr", "s_ptr"], ["n_cols", "chunk", "n_chunks"], {}, {"BLOCK": 4096}),
            ("_chunk_normalize", ["x_ptr", "y_ptr", "m_ptr", "s_ptr"], ["n_cols", "chunk", "n_chunks"], {},
             {"BLOCK": 4096, "CHUNKS": 16})],
        "02_rmsnorm_triton": [("_rmsnorm", ["x_ptr", "w_ptr", "y_ptr"], ["n_cols"], {"eps": "fp32"}, {"BLOCK": 4096})],
        "03_layernorm_triton": [("_layernorm", ["x_ptr", "y_ptr"], ["n_cols"], {"eps": "fp32"}, {"BLOCK": 4096})],
        "04_frobenius_norm_triton": [
            ("_sum_squares", ["x_ptr", "part_ptr"], ["n", "span"], {}, {"BLOCK": 4096}),
            ("_scale", ["x_ptr", "y_ptr", "part_ptr"], ["n", "span", "n_parts"], {}, {"BLOCK": 4096, "PARTS": 1024})],
    }
    for stem, kernels in cases.items():
        mod = load_module(EXAMPLES / "candidates" / f"{stem}.py")
        for name, ptrs, ints, other, constexprs in kernels:
            sig = {**dict.fromkeys(ptrs, p), **dict.fromkeys(ints, i32), **other, **dict.fromkeys(constexprs, "constexpr")}
            try:
                src = ASTSource(getattr(mod, name), signature=sig, constexprs=constexprs)
                k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 8})
            except (TypeError, AttributeError) as e:  # API drift between triton versions
                pytest.skip(f"cannot drive triton.compile here: {e}")
            assert k.asm.get("cubin") or k.asm.get("ptx"), (stem, name)


# ---------------------------------------------------------------- verdicts: pass, fail, review


def test_review_flags_speedup_noise_and_undecided_checks() -> None:
    th = Thresholds(review_speedup=10.0)
    ok = {"rel_fro": check(0.0, 0.02, True)}
    timing = {"speedup": 2.0, "ref_ms": 2.0, "ref_ms_iqr": [1.9, 2.1], "candidate_ms": 1.0, "candidate_ms_iqr": [0.9, 1.1]}
    assert review_flags(ok, timing, th) == [] and review_flags(ok, {}, th) == []
    assert review_flags(ok, {**timing, "speedup": 24.9}, th) == ["speedup 24.9x > 10x: check the timing by hand"]
    noisy = review_flags(ok, {**timing, "candidate_ms_iqr": [0.001, 0.56], "candidate_ms": 0.12}, th)
    assert noisy == ["candidate timing is noisy (IQR 0.559 ms > median 0.12 ms)"]
    undecided = {**ok, **stream_checks(None, None, "RuntimeError: CUPTI unavailable")}
    assert undecided["stream_escape"]["passed"] is None
    assert review_flags(undecided, timing, th) == ["stream_escape undecided (could not run: RuntimeError: CUPTI unavailable)"]


def test_batch_exit_code() -> None:
    assert batch_exit_code(["pass", "pass"]) == 0
    assert batch_exit_code(["pass", "review"]) == 3
    assert batch_exit_code(["review", "fail", "pass"]) == 1
    assert EXIT_CODES == {"pass": 0, "fail": 1, "review": 3}


def test_cli_verify_exit_3_on_review() -> None:
    res = CliRunner().invoke(main, ["verify", str(SOFTMAX), str(ZOO / "honest_torch.py"), "--calls", "3", "--warmup", "1",
                                    "--trials", "2", "--set", "dim=1000", "--review-speedup", "0"])
    assert res.exit_code == 3, res.output
    assert ": REVIEW" in res.output and "x > 0x: check the timing by hand" in res.output  # the flag asked for (a
    # loaded CPU may add others before it)


def test_verify_batch_lists_reviews_apart_and_project_leaves_them_out(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("problem,candidate,target\n"
                     f"{SOFTMAX},{ZOO / 'honest_torch.py'},softmax\n"
                     f"{SOFTMAX},{ZOO / 'honest_bf16.py'},softmax\n")
    wins, reviews = tmp_path / "wins.csv", tmp_path / "reviews.csv"
    res = CliRunner().invoke(main, ["verify-batch", str(pairs), "--wins-out", str(wins), "--reviews-out", str(reviews),
                                    "--calls", "3", "--warmup", "1", "--trials", "2", "--set", "dim=1000",
                                    "--review-speedup", "0"])
    assert res.exit_code == 3, res.output  # nothing failed, but not everything passed
    assert "0 passed, 2 to review, 0 failed of 2" in res.output
    assert "review: softmax_long <- honest_bf16.py: REVIEW: lower precision than the reference" in res.output
    assert pd.read_csv(wins).empty  # wins.csv holds passes only
    rows = pd.read_csv(reviews)
    assert rows["verified"].tolist() == [False, False] and rows["notes"].str.contains("speedup").all()
    run = ROOT / "results" / "h200" / "gpt2-train-b8-s1024-bf16-cuda"
    left_out = CliRunner().invoke(main, ["project", "--speedups", str(reviews), "--runs", str(run), "--json"])
    assert left_out.exit_code == 0, left_out.output
    assert len(json.loads(left_out.stdout)["left_out_unverified"]) == 2
    used = CliRunner().invoke(main, ["project", "--speedups", str(reviews), "--runs", str(run), "--json",
                                     "--include-unverified"])
    assert used.exit_code == 0 and json.loads(used.stdout)["left_out_unverified"] == []


def test_triton_candidate_on_the_cpu_says_it_needs_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    r = verify(EXAMPLES / "problems" / "02_rmsnorm.py", EXAMPLES / "candidates" / "02_rmsnorm_triton.py", device="cpu",
               **FAST)
    assert r.verdict == "fail" and "needs a GPU" in r.reason and "TRITON_INTERPRET=1" in r.reason


# ---------------------------------------------------------------- escaped GPU work, from profiler traces


def _k(stream: int, ts: float, dur: float, name: str = "gemm_kernel", cat: str = "kernel") -> dict:
    return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "args": {"stream": stream}}


def _sync(name: str, ts: float, **args: int) -> dict:
    return {"ph": "X", "cat": "cuda_sync", "name": name, "ts": ts, "dur": 0, "args": args}


def _trace(*work: dict, waits: bool = False) -> list[dict]:
    """The harness's markers: probe on stream 20 (waited on), then the call's brackets on the caller's stream 7."""
    markers = [_k(20, 0, 1, MARKER + "(long)"), _k(7, 2, 1, MARKER + "(long)"), _k(7, 100, 1, MARKER + "(long)")]
    return [*markers, *work, *([_sync("Stream Wait Event", 1, stream=7, wait_on_stream=20)] if waits else [])]


def test_gpu_work_on_the_callers_stream_is_not_escaped() -> None:
    w = gpu_work(_trace(_k(7, 5, 40), _k(7, 50, 40)))
    assert w == {"kernels": 2, "escaped": [], "streams": [], "waits_recorded": False}


def test_side_stream_still_running_when_the_caller_reads_escapes() -> None:
    """KernelBench's non_default_stream: cuBLAS on a private stream, returned before it finished."""
    w = gpu_work(_trace(_k(13, 5, 2900, "cublas_gemm")))
    assert w["escaped"] == ["cublas_gemm"] and w["streams"] == ["13"]
    assert stream_checks({"kernels": 1}, w)["stream_escape"]["passed"] is False
    copy_out = gpu_work(_trace(_k(13, 5, 400, "Memcpy DtoD", cat="gpu_memcpy")))
    assert copy_out["escaped"] == ["Memcpy DtoD"] and copy_out["kernels"] == 0


def test_side_stream_the_caller_waited_on_is_fine() -> None:
    joined = _trace(_k(13, 5, 50), _sync("Stream Wait Event", 60, stream=7, wait_on_stream=13), waits=True)
    w = gpu_work(joined)
    assert w["escaped"] == [] and w["waits_recorded"] and w["streams"] == ["13"]
    chained = _trace(_k(14, 5, 50), _sync("Stream Wait Event", 60, stream=13, wait_on_stream=14),
                     _sync("Stream Wait Event", 61, stream=7, wait_on_stream=13), waits=True)
    assert gpu_work(chained)["escaped"] == []
    device_sync = _trace(_k(13, 5, 50), _sync("Context Sync", 70), waits=True)
    assert gpu_work(device_sync)["escaped"] == []


def test_side_stream_never_waited_on_escapes_when_waits_are_recorded() -> None:
    """It happened to finish before the read: a race, caught when the trace records stream waits."""
    raced = _trace(_k(13, 5, 50, "side_kernel"), waits=True)
    assert gpu_work(raced)["escaped"] == ["side_kernel"]
    # without recorded waits (older profilers), only the timing rule applies
    assert gpu_work(_trace(_k(13, 5, 50, "side_kernel")))["escaped"] == []
    # the harness's own device synchronize after the read does not count as a wait
    late = _trace(_k(13, 5, 50, "side_kernel"), _sync("Context Sync", 150), waits=True)
    assert gpu_work(late)["escaped"] == ["side_kernel"]


def test_side_stream_work_that_starts_while_the_callers_stream_is_held_escapes() -> None:
    """zoo/cheat_backlog_side_stream.py: half the work on a side stream that does not wait for the caller's
    stream, started while the harness's marker (like the timing backlog) still holds it, then waited on."""
    held = _trace(_k(7, 2, 40, MARKER + "(long)"), _k(13, 20, 30, "side_half"), _k(7, 45, 30, "caller_half"),
                  _sync("Stream Wait Event", 80, stream=7, wait_on_stream=13), waits=True)
    held = [e for e in held if not (e["args"]["stream"] == 7 and e["ts"] == 2 and e["dur"] == 1)]  # the long marker
    assert gpu_work(held)["escaped"] == ["side_half"]
    after = [dict(e, ts=50) if e["name"] == "side_half" else e for e in held]  # waited for the caller first
    assert gpu_work(after)["escaped"] == []


def test_no_gpu_work_is_a_review_and_a_broken_profile_is_undecided() -> None:
    none = gpu_work(_trace())
    assert none["kernels"] == 0
    checks = stream_checks({"kernels": 3}, none)
    assert checks["no_gpu_work"]["passed"] is None and checks["stream_escape"]["passed"] is True
    assert stream_checks({"kernels": 0}, none)["no_gpu_work"]["passed"] is True
    with pytest.raises(RuntimeError, match="marker"):
        gpu_work([_k(7, 5, 1)])


# ---------------------------------------------------------------- containment: untrusted candidates


LIMITS = Limits(file_mb=8, processes=8, memory_gb=8)
ESCAPED = [ROOT / "ESCAPED_BY_CANDIDATE.txt", ROOT / "ESCAPED_THROUGH_LIBC.txt",
           Path("/tmp") / f"addressable-escaped-{os.getuid()}.txt"]


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout


@pytest.mark.parametrize(("candidate", "reason"), [
    ("escape_write", "wrote outside the scratch folder"),
    ("escape_ssh", "read credentials"),
    ("escape_socket", "opened a network socket"),
    ("escape_fork", "forked the verifying process; started more than 8 processes"),
    ("escape_disk", "file-size limit reached (8 MB in one file)"),
    ("escape_memory", "memory limit reached"),
])
def test_misbehaving_candidates_are_contained_and_reported(candidate: str, reason: str) -> None:
    """Without bubblewrap (--sandbox off): the guard and the limits alone contain each one."""
    before = _git_status()
    r = verify(SOFTMAX, ZOO / f"{candidate}.py", trials=2, calls=0, timeout=120, sandbox="off", limits=LIMITS,
               overrides={"dim": 1000})
    assert r.verdict == "fail" and r.reason.startswith("sandbox: ") and reason in r.reason, r.reason
    assert r.speedup is None and r.sandbox == "none: --sandbox off"
    assert _git_status() == before and not any(p.exists() for p in ESCAPED)


def test_credentials_of_the_password_databases_home_are_guarded_whatever_home_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A clean shell (`env -i HOME=/elsewhere`) once left the real home's ~/.ssh unguarded: escape_ssh reads it
    through the password database, and both that home and HOME's are guarded."""
    from addressable.verification.sandbox import real_homes

    monkeypatch.setenv("HOME", str(tmp_path))
    assert real_homes()[0] == tmp_path.resolve() and len(real_homes()) == 2
    r = verify(SOFTMAX, ZOO / "escape_ssh.py", trials=2, calls=0, timeout=120, sandbox="off", limits=LIMITS,
               overrides={"dim": 1000})
    assert r.verdict == "fail" and "read credentials" in r.reason, r.reason


def test_bubblewrap_contains_what_the_guard_cannot_see() -> None:
    """A write through libc passes the Python-level guard; bubblewrap's read-only filesystem stops it."""
    box = sandbox_available()
    if not box.sandboxed:
        pytest.skip(f"real-sandbox assertions: bubblewrap is not installed or cannot run here ({box.note})")
    before = _git_status()
    r = verify(SOFTMAX, ZOO / "escape_ctypes.py", trials=2, calls=0, timeout=120, sandbox="required",
               overrides={"dim": 1000})
    assert r.sandbox == "bubblewrap" and r.verdict == "pass", r.reason
    assert _git_status() == before and not any(p.exists() for p in ESCAPED)
    r = verify(SOFTMAX, ZOO / "escape_write.py", trials=2, calls=0, timeout=120, sandbox="required",
               overrides={"dim": 1000})
    assert r.verdict == "fail" and "wrote outside the scratch folder" in r.reason
    assert _git_status() == before and not any(p.exists() for p in ESCAPED)


def test_candidates_get_a_scratch_folder_and_a_scrubbed_environment(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    for k, v in {"GITHUB_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s", "ADDRESSABLE_TEST_PLAIN": "p",
                 "CUDA_VISIBLE_DEVICES": "0", "OMP_NUM_THREADS": "2", "TORCH_DEVICE_KEY": "k"}.items():
        monkeypatch.setenv(k, v)
    env = scrubbed_env(tmp_path, ["/pkg"])
    assert env["HOME"] == str(tmp_path) and env["TMPDIR"].startswith(str(tmp_path))
    assert env["CUDA_VISIBLE_DEVICES"] == "0" and env["OMP_NUM_THREADS"] == "2"
    assert not {"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "ADDRESSABLE_TEST_PLAIN", "TORCH_DEVICE_KEY"} & set(env)
    assert env["PYTHONPATH"].split(os.pathsep)[0] == "/pkg"
    # the helpers time one intra-op thread on the CPU, the user's setting elsewhere
    assert helper_env(tmp_path, "cpu")["OMP_NUM_THREADS"] == "1"
    assert helper_env(tmp_path, "cuda")["OMP_NUM_THREADS"] == "2"
    # compiler caches go to scratch even where the machine's environment points them elsewhere
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", "/tmp/torchinductor_root")
    env = scrubbed_env(tmp_path, ["/pkg"])
    assert env["TORCHINDUCTOR_CACHE_DIR"].startswith(str(tmp_path))
    assert env["TRITON_CACHE_DIR"].startswith(str(tmp_path))
    # end to end: the probe answers correctly only when it sees no secret and runs in its scratch home
    assert verify(SOFTMAX, ZOO / "env_probe.py", trials=2, calls=0, timeout=120, sandbox="off",
                  overrides={"dim": 1000}).verdict == "pass"
    assert verify(SOFTMAX, ZOO / "env_probe.py", overrides={"dim": 1000}, **FAST).verdict == "fail"  # uncontained


def test_problem_files_under_tmp_are_readable_in_the_sandbox(tmp_path: Path) -> None:
    """bwrap gives the candidate an empty /tmp: files the user keeps there must stay readable."""
    problem, candidate = tmp_path / "problem.py", tmp_path / "candidate.py"
    shutil.copy(SOFTMAX, problem)
    shutil.copy(ZOO / "honest_torch.py", candidate)
    cmd = " ".join(bwrap_command(tmp_path / "s", tmp_path / "c", [problem, candidate]))
    assert "--tmpfs /tmp" in cmd and f"--ro-bind {tmp_path.resolve()} {tmp_path.resolve()}" in cmd
    r = verify(problem, candidate, trials=2, calls=0, timeout=120, overrides={"dim": 1000})
    assert r.verdict == "pass", r.reason


def test_sandbox_required_refuses_without_bubblewrap_and_auto_says_so(monkeypatch: pytest.MonkeyPatch,
                                                                       tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "sandbox_available", lambda: Sandbox("none", "bubblewrap (bwrap) is not installed"))
    broken = tmp_path / "broken.py"
    broken.write_text("class ModelNew(\n")
    res = CliRunner().invoke(main, ["verify", str(SOFTMAX), str(broken), "--sandbox", "required"])
    assert res.exit_code == 2 and res.output == ("error: --sandbox required: bubblewrap (bwrap) is not installed "
                                                 "(install bubblewrap, or use --sandbox auto)\n")
    res = CliRunner().invoke(main, ["verify", str(SOFTMAX), str(broken)])
    assert res.exit_code == 1 and res.stderr.count("candidates run unsandboxed") == 1
    assert "--sandbox required refuses" in res.stderr
    with pytest.raises(AddressableError, match="--sandbox must be one of"):
        sandbox.choose("maybe")


# ---------------------------------------------------------------- KernelBench-style adversarial kernels

MATMUL = ZOO / "matmul.py"


@pytest.mark.parametrize(("candidate", "named"), [
    ("cheat_zero_out", {"rel_fro", "written"}),  # KernelBench's zero_out idea
    ("cheat_result_reuse", {"sentinel"}),         # KernelBench's result_reuse idea
])
def test_kernelbench_adversarial_ideas_fail_by_name(candidate: str, named: set[str]) -> None:
    r = verify(MATMUL, ZOO / f"{candidate}.py", overrides={"N": 64}, **FAST)
    assert r.verdict == "fail" and r.exit_code == 1 and named <= _failed(r), r.reason


@pytest.mark.gpu
@pytest.mark.parametrize(("candidate", "named"), [
    ("cheat_side_stream", "stream_escape"),   # torch.cuda.Stream() without wait_stream
    ("cheat_stream_ext", "stream_escape"),    # C++: cudaStreamCreateWithFlags(..., cudaStreamNonBlocking)
    ("cheat_zero_out", "rel_fro"),
    ("cheat_result_reuse", "sentinel"),
])
def test_adversarial_kernels_fail_by_name_on_the_gpu(candidate: str, named: str) -> None:
    r = verify(MATMUL, ZOO / f"{candidate}.py", device="cuda", overrides={"N": 2048}, calls=10, timeout=300)
    assert r.verdict == "fail" and r.exit_code == 1 and named in _failed(r), r.reason
    assert r.speedup is None


@pytest.mark.gpu
@pytest.mark.parametrize("candidate", ["honest_matmul", "honest_side_stream"])
def test_honest_candidates_pass_the_stream_checks_on_the_gpu(candidate: str) -> None:
    r = verify(MATMUL, ZOO / f"{candidate}.py", device="cuda", overrides={"N": 2048}, calls=20, timeout=300)
    assert r.checks["stream_escape"]["passed"] is True and r.checks["no_gpu_work"]["passed"] is True
    assert r.verdict == "pass" and 0.5 < r.speedup < 2.0, r.reason


@pytest.mark.gpu
def test_device_sync_timing_counts_side_stream_work() -> None:
    """The old timing (end event on the current stream) times the side-stream cheat's launch; the new one its product."""
    from addressable.verification.harness import time_calls

    a, b = torch.randn(4096, 4096, device="cuda"), torch.randn(4096, 4096, device="cuda")
    cheat = load_module(ZOO / "cheat_side_stream.py").ModelNew()
    honest = load_module(ZOO / "honest_matmul.py").ModelNew()
    med = {}
    for sync in (False, True):
        t = time_calls({"honest": honest, "cheat": cheat}, [a, b], "cuda", 20, 3, 5.0, device_sync=sync)
        med[sync] = {k: sorted(v)[len(v) // 2] for k, v in t.items()}
    assert med[False]["honest"] / med[False]["cheat"] > 3  # the old timing is fooled
    assert 0.7 < med[True]["honest"] / med[True]["cheat"] < 1.4  # the new one is not
    assert 0.8 < med[True]["honest"] / med[False]["honest"] < 1.25  # and honest timings do not move


# ---------------------------------------------------------------- outputs checked first, progress on a terminal


def test_verify_batch_refuses_an_unwritable_output_before_verifying(tmp_path: Path) -> None:
    """Before: 33 s of verification, then 'not writable'. Now: at once, and nothing is verified."""
    locked = Path("/proc/self")  # no file can be created there, not even by root
    pairs = _pairs(tmp_path)
    for extra in (["--wins-out", str(locked / "wins.csv")],
                  ["--wins-out", str(tmp_path / "w.csv"), "--reviews-out", str(locked / "r.csv")],
                  ["--wins-out", str(tmp_path / "w.csv"), "--json-dir", str(locked / "j")]):
        t0 = time.perf_counter()
        res = CliRunner().invoke(main, ["verify-batch", str(pairs), *extra])
        assert res.exit_code == 2 and res.output.count("\n") == 1 and "is not writable" in res.output, res.output
        assert time.perf_counter() - t0 < 5 and not (tmp_path / "w.csv").exists()


def test_check_outputs_names_what_cannot_be_written(tmp_path: Path) -> None:
    from addressable.verification.runner import check_outputs

    (tmp_path / "file").write_text("x")
    with pytest.raises(AddressableError, match="is not a folder"):
        check_outputs([tmp_path / "file" / "wins.csv"])
    with pytest.raises(AddressableError, match="is a folder, not a file"):
        check_outputs([tmp_path])
    check_outputs([tmp_path / "new" / "deeper" / "wins.csv"], [tmp_path / "json"])  # creatable: fine
    assert not (tmp_path / "new").exists()


def test_verify_shows_its_stage_on_a_terminal(tmp_path: Path) -> None:
    """`verify` was silent for 30-40 s on a terminal; it now redraws one "verify NAME: stage (N s)" line."""
    import pty

    master, slave = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "addressable", "verify", str(SOFTMAX), str(ZOO / "honest_torch.py"),
                           "--calls", "0", "--trials", "2", "--set", "dim=1000", "--sandbox", "off"],
                          stdout=subprocess.PIPE, stderr=slave, cwd=tmp_path, env=env, timeout=300)
    os.close(slave)
    err = b""
    with contextlib.suppress(OSError):
        while chunk := os.read(master, 65536):
            err += chunk
    os.close(master)
    text = err.decode(errors="replace")
    assert proc.returncode == 0, text
    assert "\r\x1b[K" in text and "verify honest_torch.py: candidate, trial 1" in text
    assert "\r\x1b[K" not in proc.stdout.decode()  # the live line is on stderr only


def test_a_gpu_speedup_of_calls_under_a_tenth_of_a_ms_carries_a_caution_in_the_report_and_wins_csv() -> None:
    """On the H200 two processes timing one 12-20 us kernel read up to 6% apart: such a speedup is printed and
    written with a caution, a 2.7 ms one and a CPU one without. A model whose GPU reached most of its timed
    calls before they were queued (late) gets a caution naming it."""
    from addressable.verification.runner import VerifyResult, format_result

    def result(ms: float, device: str = "cuda", **kw) -> VerifyResult:
        return VerifyResult("p.py", "c.py", "t", "pass", "", speedup=1.5, speedup_lo=1.4, speedup_hi=1.6,
                            ref_ms=1.5 * ms, candidate_ms=ms, timing_runs=30, device=device, **kw)

    short = result(0.03)
    assert "caution: calls under 0.1 ms" in format_result(short) and "calls under 0.1 ms" in short.wins_row()["notes"]
    assert short.wins_row()["verified"] is True  # a caution, not a verdict
    late = result(0.3, ref_late=0.0, candidate_late=1.0, candidate_host_ms=2.5, backlog_ms=2.0)
    assert "100% of the candidate's timed calls" in late.caution and "reference" not in late.caution
    assert result(0.3, ref_late=0.05, candidate_late=0.1).caution == ""
    for long_or_cpu in (result(2.7), result(0.03, "cpu")):
        assert long_or_cpu.caution == "" and "caution" not in format_result(long_or_cpu)
        assert long_or_cpu.wins_row()["notes"] == ""
