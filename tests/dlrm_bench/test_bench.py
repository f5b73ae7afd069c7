"""DLRM-Bench: problem files, loader, reference candidates (Triton interpreter), shares, CLI."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pandas as pd
import pytest
import torch
from click.testing import CliRunner

import addressable.dlrm_bench as bench
from addressable.classify.taxonomy import load_taxonomy
from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.verification.invariants import check_custom, parse_invariants
from addressable.verification.runner import verify

ROOT = Path(__file__).resolve().parents[2]
PROBLEMS = bench.problem_names()
CANDIDATES = [p for p in PROBLEMS if bench.candidate_path(p)]
HAS_TRITON = importlib.util.find_spec("triton") is not None

# Real kernel names (H200 / FBGEMM / ATen) each problem's DLRM_KERNEL must match.
KERNEL_EXAMPLES = {
    "01_embedding_bag_sum_uniform": ["split_embedding_codegen_forward_unweighted_v2_kernel",
                                     "void at::native::(anonymous namespace)::EmbeddingBag_updateOutputKernel_sum_mean<float, long>"],
    "02_embedding_bag_sum_zipf": ["split_embedding_codegen_forward_unweighted_kernel"],
    "03_embedding_backward_rowwise_adagrad": [
        "split_embedding_backward_codegen_rowwise_adagrad_unweighted_kernel_cta_per_row_1",
        "void at::native::(anonymous namespace)::compute_grad_weight_bags<float, float, long>",
        "void at::native::coalesceValuesKernel<float, float>"],
    "04_kjt_permute": ["void fbgemm_gpu::permute_2D_data_kernel<true, int, long, float>",
                       "fbgemm_gpu::permute_2D_lengths_kernel<int>"],
    "05_jagged_to_padded_dense": ["fbgemm_gpu::jagged_dense_elementwise_dense_output_kernel_<1, int, float>"],
    "06_dot_interaction": ["void at::native::index_elementwise_kernel<128, 4, at::native::gpu_index_kernel>"],
    "07_dcn_cross_layer": ["void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
                           "float, float, at::native::binary_internal::MulFunctor<float> >>"],
    "08_linear_bias_relu": ["void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
                            "launch_clamp_scalar(at::TensorIteratorBase&)::{lambda()#1}>"],
    "09_concat_interaction_input": ["void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 2, 64, 64>"],
    "10_sigmoid_bce_loss": ["void at::native::vectorized_elementwise_kernel<4, at::native::log_sigmoid_forward_kernel>"],
    "11_hash_sparse_ids": ["fbgemm_gpu::_block_bucketize_sparse_features_cuda_kernel2<true, int, long>",
                           "void at::native::remainder_kernel_cuda(at::TensorIteratorBase&)"],
    "12_dense_adagrad_step": ["void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::"
                              "(anonymous namespace)::TensorListMetadata<3>, at::native::(anonymous namespace)::"
                              "PointwiseOpScalarFunctor<float, 3, 3, 0>, std::multiplies<float>, float>"],
}


def _self_candidate(tmp_path: Path, stem: str) -> Path:
    """A candidate file whose ModelNew is the problem's own Model."""
    path = tmp_path / f"self_{stem}.py"
    path.write_text("import importlib.util\n"
                    f"_spec = importlib.util.spec_from_file_location('_ref', {str(bench.problem_path(stem))!r})\n"
                    "_mod = importlib.util.module_from_spec(_spec)\n"
                    "_spec.loader.exec_module(_mod)\n"
                    "ModelNew = _mod.Model\n")
    return path


def _run(m, seed: int = 0) -> tuple[list[torch.Tensor], torch.Tensor]:
    torch.manual_seed(seed)
    model = m.Model(*m.get_init_inputs())
    torch.manual_seed(seed + 1)
    inputs = m.get_inputs()
    with torch.no_grad():
        return inputs, model(*inputs)


def test_twelve_problems() -> None:
    assert len(PROBLEMS) == 12
    assert [int(p[:2]) for p in PROBLEMS] == list(range(1, 13))
    assert len(CANDIDATES) >= 4


DLRM_RUNS = {mode: ROOT / "results" / "h200" / f"dlrm-{mode}-b8192-bf16-cuda" for mode in ("train", "infer")}


def test_docstring_shares_match_the_committed_dlrm_profile() -> None:
    """The share each docstring states is what its DLRM_KERNEL matches in the committed H200 runs."""
    shares = {mode: bench.problem_shares(run).set_index("problem") for mode, run in DLRM_RUNS.items()}
    for stem in PROBLEMS:
        doc = bench.load_problem(stem).__doc__
        for mode in ("train", "infer"):
            stated = re.search(rf"{mode} ([\d.]+)% of kernel time, ([\d.]+)% of the step", doc)
            assert stated, (stem, mode)
            row = shares[mode].loc[stem]
            assert float(stated[1]) == pytest.approx(100 * row.kernel_share, abs=0.051)
            assert float(stated[2]) == pytest.approx(100 * row.step_share, abs=0.051)


@pytest.mark.parametrize("stem", PROBLEMS)
def test_problem_file_format(stem: str) -> None:
    m = bench.load_problem(stem)
    assert m.CATEGORY in load_taxonomy().classes
    doc = m.__doc__ or ""
    assert doc.strip() and "Share of DLRM step time" in doc
    re.compile(m.DLRM_KERNEL)
    assert all(re.search(m.DLRM_KERNEL, k, re.IGNORECASE) for k in KERNEL_EXAMPLES[stem])
    assert isinstance(getattr(m, "INVARIANTS", None), list) or callable(getattr(m, "check_invariants", None))
    assert getattr(m, "INVARIANTS", []) or callable(getattr(m, "check_invariants", None))
    parse_invariants(getattr(m, "INVARIANTS", None))
    assert m.SMALL and all(k.isupper() and hasattr(m, k) for k in m.SMALL)
    assert bench.sizes(m) and all(callable(getattr(m, f)) for f in ("get_inputs", "get_init_inputs"))


@pytest.mark.parametrize("stem", PROBLEMS)
def test_small_model_is_deterministic_and_keeps_its_invariants(stem: str) -> None:
    m = bench.load_problem(stem, small=True)
    inputs, out = _run(m)
    inputs_b, out_b = _run(m)
    assert all(torch.equal(a, b) for a, b in zip(inputs, inputs_b, strict=True))
    assert torch.equal(out, out_b)
    checks = {f"invariant:{s.name}": s.check(out) for s in parse_invariants(getattr(m, "INVARIANTS", None))}
    if hasattr(m, "check_invariants"):
        checks |= check_custom(m.check_invariants(inputs, out), 1e-3)
    assert checks and all(c["passed"] for c in checks.values()), checks


@pytest.mark.parametrize("stem", PROBLEMS)
def test_verify_passes_the_reference_against_itself(stem: str, tmp_path: Path) -> None:
    small = bench.load_problem(stem).SMALL
    r = verify(bench.problem_path(stem), _self_candidate(tmp_path, stem), device="cpu", calls=0, isolate=False,
               overrides=small)
    assert r.verdict == "pass", r.reason


@pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed")
@pytest.mark.parametrize("stem", CANDIDATES)
def test_triton_candidate_matches_under_the_interpreter(stem: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    m = bench.load_problem(stem, small=True)
    cand = bench.load_candidate(stem)
    torch.manual_seed(0)
    ref = m.Model(*m.get_init_inputs())
    torch.manual_seed(0)
    new = cand.ModelNew(*m.get_init_inputs())
    torch.manual_seed(1)
    inputs = m.get_inputs()
    with torch.no_grad():
        a, b = ref(*inputs), new(*inputs)
    assert a.shape == b.shape and a.dtype == b.dtype
    err = float((a.double() - b.double()).norm() / a.double().norm().clamp_min(1e-30))
    assert err < 1e-5, err
    r = verify(bench.problem_path(stem), bench.candidate_path(stem), device="cpu", calls=0, isolate=False,
               overrides=m.SMALL, trials=2)
    assert r.verdict == "pass", r.reason


def test_the_01_candidate_also_solves_02(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    m = bench.load_problem("02", small=True)
    torch.manual_seed(0)
    ref = m.Model(*m.get_init_inputs())
    new = bench.load_candidate("01").ModelNew(*m.get_init_inputs())
    new.load_state_dict(ref.state_dict())
    inputs = m.get_inputs()
    with torch.no_grad():
        torch.testing.assert_close(new(*inputs), ref(*inputs))


def test_small_sizes_do_not_leak_between_loads() -> None:
    small = bench.load_problem("01", small=True)
    full = bench.load_problem("01")
    assert small.SMALL["BATCH"] == small.BATCH == 4 and full.BATCH == 16384
    assert small.get_inputs()[1].numel() == 26 * small.SMALL["BATCH"]


def test_problem_path_resolution(tmp_path: Path) -> None:
    stem = "06_dot_interaction"
    for ref in (stem, "6", "06", "dot_interaction", f"{stem}.py", bench.problem_path(stem)):
        assert bench.problem_path(ref).stem == stem
    with pytest.raises(AddressableError, match="unknown bench problem"):
        bench.problem_path("no_such_problem")
    with pytest.raises(AddressableError, match="no reference candidate"):
        bench.load_candidate("04")


def test_candidate_files_are_data_named_after_problems() -> None:
    files = sorted(bench.CANDIDATES_DIR.glob("*.py"))
    assert not (bench.CANDIDATES_DIR / "__init__.py").exists()
    assert {f.stem for f in files} <= set(PROBLEMS)
    assert all("class ModelNew" in f.read_text() for f in files)


def test_problem_table() -> None:
    df = bench.problem_table()
    assert list(df["problem"]) == PROBLEMS
    assert df.loc[0, "sizes"].startswith("BATCH=16384")
    assert set(df.loc[df["candidate"], "problem"]) == set(CANDIDATES)
    lines = bench.format_problem_table(df).splitlines()
    assert len(lines) == 4 * len(df) and lines[0].startswith(PROBLEMS[0]) and lines[2].startswith("    sizes: BATCH=")


def _fake_run(path: Path) -> Path:
    kernels = pd.DataFrame({
        "name": ["split_embedding_codegen_forward_unweighted_kernel", "nvjet_sm90_tst_128x256",
                 "void at::native::index_elementwise_kernel<128, 4>", "multi_tensor_apply_kernel<...>"],
        "category": ["embedding", "gemm", "data_movement", "optimizer"],
        "class": ["replaceable", "library", "replaceable", "replaceable"],
        "time_us": [300.0, 500.0, 100.0, 100.0], "count": [10, 10, 10, 10], "share": [0.3, 0.5, 0.1, 0.1]})
    path.mkdir()
    kernels.to_csv(path / "kernels.csv", index=False)
    (path / "breakdown.json").write_text(json.dumps({"kernel_time_per_step_us": 800.0, "step_time_ms": 1.0}))
    return path


def test_problem_shares(tmp_path: Path) -> None:
    df = bench.problem_shares(_fake_run(tmp_path / "run")).set_index("problem")
    assert df.loc["01_embedding_bag_sum_uniform", "kernel_share"] == pytest.approx(0.3)
    assert df.loc["01_embedding_bag_sum_uniform", "step_share"] == pytest.approx(0.24)
    assert df.loc["01_embedding_bag_sum_uniform", "shared_with"] == "02_embedding_bag_sum_zipf"
    assert df.loc["12_dense_adagrad_step", "time_us"] == pytest.approx(100.0)
    assert df.loc["04_kjt_permute", "kernels"] == 0 and df.loc["04_kjt_permute", "top_kernel"] == ""
    (tmp_path / "run" / "breakdown.json").unlink()
    assert bench.problem_shares(tmp_path / "run")["step_share"].isna().all()
    with pytest.raises(AddressableError, match=r"no such run folder: .*missing$"):
        bench.problem_shares(tmp_path / "missing")
    (tmp_path / "bad").mkdir()
    with pytest.raises(AddressableError, match=r"no kernels\.csv"):
        bench.problem_shares(tmp_path / "bad")
    (tmp_path / "bad" / "kernels.csv").write_text("")
    with pytest.raises(AddressableError, match=r"cannot read .*kernels\.csv"):
        bench.problem_shares(tmp_path / "bad")
    (tmp_path / "bad" / "kernels.csv").write_text("name,time_us\nsplit_embedding_codegen,10\nfoo,\n")
    with pytest.raises(AddressableError, match="time_us on row 2 is not a number"):
        bench.problem_shares(tmp_path / "bad")


def test_baseline_times_cpu() -> None:
    df = bench.baseline_times(["10", "12"], device="cpu", small=True, warmup=1, repeats=3)
    assert list(df["problem"]) == ["10_sigmoid_bce_loss", "12_dense_adagrad_step"]
    assert (df["ref_ms"] > 0).all() and (df["runs"] == 3).all()


def test_cli_bench_list() -> None:
    res = CliRunner().invoke(main, ["dlrm-bench", "list"])
    assert res.exit_code == 0, res.output
    assert all(stem in res.output for stem in PROBLEMS)
    assert "DLRM kernel: /split_embedding" in res.output and "sizes: BATCH=16384" in res.output
    res = CliRunner().invoke(main, ["dlrm-bench", "list", "--json", "--small"])
    records = json.loads(res.output)
    assert len(records) == 12 and records[0]["sizes"].startswith("BATCH=4")


def test_cli_bench_shares(tmp_path: Path) -> None:
    run = _fake_run(tmp_path / "run")
    res = CliRunner().invoke(main, ["dlrm-bench", "shares", str(run), "--csv", str(tmp_path / "shares.csv")])
    assert res.exit_code == 0, res.output
    assert "01_embedding_bag_sum_uniform" in res.output
    assert len(pd.read_csv(tmp_path / "shares.csv")) == 12
    res = CliRunner().invoke(main, ["dlrm-bench", "shares", str(tmp_path / "no" / "such" / "run")])  # issue 26
    assert res.exit_code == 2 and res.stderr == f"error: no such run folder: {tmp_path / 'no' / 'such' / 'run'}\n"
    (tmp_path / "empty").mkdir()
    res = CliRunner().invoke(main, ["dlrm-bench", "shares", str(tmp_path / "empty")])
    assert res.exit_code == 2 and "no kernels.csv in" in res.stderr


def test_cli_bench_time_cpu(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["dlrm-bench", "time", "10", "--device", "cpu", "--small", "--calls", "2",
                                    "--warmup", "1", "--csv", str(tmp_path / "t.csv")])
    assert res.exit_code == 0, res.output
    assert pd.read_csv(tmp_path / "t.csv")["problem"].tolist() == ["10_sigmoid_bce_loss"]
    res = CliRunner().invoke(main, ["dlrm-bench", "time", "nope", "--device", "cpu"])
    assert res.exit_code == 2 and "unknown bench problem" in res.output


def test_old_command_name_bench_still_works_warns_and_is_hidden() -> None:
    new = CliRunner().invoke(main, ["dlrm-bench", "list", "--json", "--small"])
    old = CliRunner().invoke(main, ["bench", "list", "--json", "--small"])
    assert old.exit_code == 0 and old.stdout == new.stdout, old.output
    assert "warning: 'bench' is deprecated and goes in the next release; use 'dlrm-bench'" in old.stderr
    assert "deprecated" not in new.stderr
    commands = CliRunner().invoke(main, ["--help"]).output
    assert "dlrm-bench" in commands and not re.search(r"^\s+bench\s", commands, re.M)
