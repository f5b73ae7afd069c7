"""The adversarial zoo of issue 25 and beyond: candidates that game where the checks look, the clocks, the
verdict or the precision. Each must fail (or get review) for the reason named, in the contained subprocesses
`verify` runs by default: several of them patch the process they run in, so none may run in-process here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from addressable.verification.checks import Thresholds
from addressable.verification.runner import VerifyResult, verify

ROOT = Path(__file__).resolve().parents[2]
ZOO = Path(__file__).resolve().parent / "zoo"
RELU = ROOT / "examples" / "problems" / "05_relu.py"
MATMUL = ZOO / "matmul.py"
SMALL_RELU = {"batch_size": 512, "dim": 1024}
CPU_MATMUL = {"N": 768}  # a few ms a call on the CPU: long enough for the wall clock to resolve a lie
FORGED = {"N": 1536}  # a lie of 75% of a call: as long as the harness's own per-call overhead on the CPU, so that
# load on a 2-core machine (which lengthens both) does not hide it


# Caught by timing statistics alone: on a shared 2-core CPU they are caught 5-6 times in 6
# (results/cpu/verify_detection.csv), so the test allows two more runs; a harness that stopped catching them misses
# all three. On a GPU each is run once. cheat_intermittent_forgery is not among them: a run of it may pass, honestly
# timed (test_a_lie_in_some_batches_fails_or_buys_nothing).
BY_TIMING = {"cheat_repeat_input", "cheat_forged_report"}


def _verify(problem: Path, candidate: str, overrides: dict, **kw) -> VerifyResult:
    return verify(problem, ZOO / f"{candidate}.py", overrides=overrides, device=kw.pop("device", "cpu"),
                  calls=kw.pop("calls", 20), timeout=kw.pop("timeout", 300), **kw)


def _verify_honest(problem: Path, candidate: str, overrides: dict, **kw) -> VerifyResult:
    """`_verify` for a candidate that is honest about time, whose test is about another check: a CPU verification
    whose one failed check is `clock` is run once more. On a loaded 2-core CPU the harness's own overhead (3-5 ms a
    call beside a 0.2 ms ReLU) can differ between the two processes by more than the clock's 1 ms floor: two such
    false fails in whole-suite runs (docs/verification.md), none in 36 honest verifications beside the corpus
    validation (load 1.2-4.0, results/cpu/verify_threads/under_scoring.csv)."""
    r = _verify(problem, candidate, overrides, **kw)
    if kw.get("device", "cpu") == "cpu" and r.verdict == "fail" and _failed(r) == {"clock"}:
        r = _verify(problem, candidate, overrides, **kw)
    return r


def _failed(r: VerifyResult) -> set[str]:
    return {k for k, v in r.checks.items() if v["passed"] is False}


@pytest.mark.parametrize(("problem", "candidate", "overrides", "failed", "reason"), [
    # issue 25's classes, on the CPU
    (MATMUL, "cheat_repeat_input", {"N": 1024}, {"reuse"}, "reuses work across calls"),
    (RELU, "cheat_honest_then_half", SMALL_RELU, {"timed_outputs"}, "sampled timed call"),
    (RELU, "cheat_rewrites_checks", SMALL_RELU, {"rel_fro", "tampered"}, "tampered: addressable.verification.checks.check"),
    (RELU, "cheat_patches_clock", SMALL_RELU, {"tampered"}, "tampered: time.perf_counter"),
    # beyond the list
    (MATMUL, "cheat_forged_report", FORGED, {"clock"}, "by the parent's wall clock"),
    (RELU, "cheat_fake_result", SMALL_RELU, set(), "malformed reply"),
    (RELU, "cheat_slows_reference", SMALL_RELU, {"tampered"}, "nn.Module _global_forward_hooks"),
    (MATMUL, "cheat_background_thread", CPU_MATMUL, set(), ""),
    (RELU, "cheat_precomputed", SMALL_RELU, {"timed_outputs"}, "sampled timed call"),
    (RELU, "cheat_signal_timer", SMALL_RELU, {"tampered"}, "signal handler SIGALRM"),
    (RELU, "cheat_patches_builtins", SMALL_RELU, {"tampered"}, "builtins.max"),
    (RELU, "cheat_patches_get_inputs", SMALL_RELU, {"timed_outputs"}, "sampled timed call"),
])
def test_each_cheat_fails_for_its_reason(problem: Path, candidate: str, overrides: dict, failed: set[str],
                                         reason: str) -> None:
    r = _verify(problem, candidate, overrides)
    for _ in range(2 if candidate in BY_TIMING else 0):  # a miss of a statistical check: run it again, twice at most
        if r.verdict == "fail":
            break
        r = _verify(problem, candidate, overrides)
    assert r.verdict == "fail" and r.exit_code == 1 and r.speedup is None, r.reason
    assert failed <= _failed(r) and reason in r.reason, r.reason


def test_a_lie_in_some_batches_fails_or_buys_nothing() -> None:
    """cheat_intermittent_forgery reports 25% of its times in each timed batch with probability 0.6 (unseeded). Here
    a set is 4 batches of 5 calls; `clock` compares median per-batch overheads, so it fails a set with 2 or more
    forged batches and cannot see 1 or none, and a failed set is judged again pooled with a second (timing.py). A
    first set holds at most one forged batch 18% of the time (0.4^4 + 4 x 0.6 x 0.4^3) and then passes, so about one
    run in four passes (6 of 28 measured, docs/verification.md). Such a pass is honest: a lie in fewer than half the
    batches moves the median call only to a lower quantile of the honest ones (such passes measured 0.98-1.06x; a
    forged half gives 1.6x, three quarters 4x).
    So each run must fail by the wall clock, or report a speedup that honest timing gives within the clock's
    allowance: the candidate is the reference's own matmul, so honest timing gives 1 within the A/A spread
    (clock_tol), and a lie that passes `clock` shortens the median call by at most its median allowance
    (`overhead_allowance_median_ms`). Up to three runs, stopping at a fail: a harness that stopped catching a
    forged half or more would pass it at 1.6-4x in about 4 runs of 5."""
    tol = Thresholds().clock_tol
    for _ in range(3):
        r = _verify(MATMUL, "cheat_intermittent_forgery", FORGED)
        if r.verdict == "fail":
            assert r.exit_code == 1 and r.speedup is None and "clock" in _failed(r), r.reason
            assert "by the parent's wall clock" in r.reason, r.reason
            return
        assert r.ref_ms and r.speedup is not None, r.reason
        honest_ms = r.ref_ms / (1 + tol) - r.wall_clock["overhead_allowance_median_ms"]
        assert r.speedup <= r.ref_ms / max(honest_ms, 1e-9), (r.speedup, r.wall_clock)


def test_the_background_thread_is_caught_by_its_outputs_or_the_wall_clock() -> None:
    r = _verify(MATMUL, "cheat_background_thread", CPU_MATMUL)
    assert r.verdict == "fail" and _failed(r) & {"clock", "timed_outputs", "sentinel", "finite", "rel_fro"}, r.reason


def test_bf16_inputs_are_reviewed_as_lower_precision() -> None:
    r = _verify_honest(RELU, "cheat_bf16_inputs", SMALL_RELU)
    assert r.verdict == "review" and r.exit_code == 3, r.reason
    assert "lower precision than the reference" in r.reason and "consistent with bf16" in r.reason
    assert r.checks["precision"]["passed"] is None and r.checks["rel_fro"]["passed"] is True


@pytest.mark.parametrize("candidate", ["cheat_tf32", "cheat_cuda_graph", "honest_cuda_graph", "honest_matmul"])
def test_gpu_only_tricks_are_honest_on_the_cpu(candidate: str) -> None:
    """TF32 and CUDA graphs do not exist on the CPU: these are plain matmuls there and must pass."""
    r = _verify_honest(MATMUL, candidate, {"N": 256}, calls=20)
    assert r.verdict in ("pass", "review") and not _failed(r), r.reason
    assert r.checks["precision"]["passed"] is True and r.checks["tampered"]["passed"] is True


def test_the_verdict_is_not_the_candidates(tmp_path: Path) -> None:
    """A candidate that answers the harness itself (a forged reply, then exit) gets a fail, never its own verdict."""
    r = _verify(RELU, "cheat_fake_result", SMALL_RELU)
    assert r.verdict == "fail" and r.checks.get("rel_fro") is None and r.speedup is None


# ---------------------------------------------------------------- on a GPU (the issue's own setting: a 4096² fp32 matmul)

GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize(("candidate", "verdict", "reason"), [
    ("cheat_repeat_input", "fail", "reuse"),
    ("cheat_honest_then_half", "fail", "timed_outputs"),
    ("cheat_rewrites_checks", "fail", "tampered"),
    ("cheat_patches_clock", "fail", "tampered"),
    ("cheat_tf32", "review", "consistent with TF32"),
    ("cheat_bf16_inputs", "review", "consistent with bf16"),
    ("cheat_forged_report", "fail", "clock"),
    ("cheat_background_thread", "fail", ""),
    ("cheat_cuda_graph", "fail", "timed_outputs"),
    ("cheat_precomputed", "fail", "timed_outputs"),
    ("cheat_patches_builtins", "fail", "tampered"),
    ("honest_triton_matmul", "review", "consistent with TF32"),
])
def test_the_zoo_on_a_gpu(candidate: str, verdict: str, reason: str) -> None:
    r = _verify(MATMUL, candidate, {}, device="cuda", calls=30)
    assert r.verdict == verdict and reason in r.reason, r.reason


@pytest.mark.gpu
@GPU
@pytest.mark.parametrize("candidate", ["honest_matmul", "honest_side_stream", "honest_cuda_graph"])
def test_honest_gpu_candidates_pass_near_one(candidate: str) -> None:
    r = _verify(MATMUL, candidate, {}, device="cuda", calls=30)
    assert r.verdict == "pass" and 0.8 < r.speedup < 1.25, r.reason
    assert r.checks["clock"]["passed"] and r.checks["timed_outputs"]["value"] < 1e-4


@pytest.mark.gpu
@GPU
def test_a_tf32_triton_matmul_passes_when_tf32_is_allowed() -> None:
    r = _verify(MATMUL, "honest_triton_matmul", {}, device="cuda", calls=10, allow_precision="tf32")
    assert r.verdict == "pass" and r.precision["consistent_with"] == "TF32 or fp16", r.reason
    assert r.precision.get("note", "").startswith("; the candidate calls Triton's tl.dot")
