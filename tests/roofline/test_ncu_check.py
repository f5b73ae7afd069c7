"""addressable.roofline.ncu_check: Nsight Compute's measurements read, paired with the trace's kernels, and checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from addressable.core.errors import AddressableError
from addressable.roofline import ncu_check
from addressable.runs.folder import NCU_RAW_FILE
from addressable.trace.reader import load_trace

DATA = Path(__file__).resolve().parents[1] / "data"
RESNET = DATA / "resnet50_train_b64_shapes.json.gz"
HEAD = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
        '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
BN_STATS = "batch_norm_collect_statistics_channels_last_kernel"


def ncu_csv(launches: list[dict]) -> str:
    """Text as `ncu --csv --print-units base` writes it: launches of {kernel, grid, block, read, write, l2, ns}."""
    lines = ["==PROF== Connected to process 1 (/usr/bin/python3)", HEAD]
    for i, x in enumerate(launches):
        metrics = (("dram__bytes_read.sum", "byte", x["read"]), ("dram__bytes_write.sum", "byte", x["write"]),
                   ("lts__t_sectors_srcunit_tex_op_write.sum", "sector", x["l2"] / 32),
                   ("gpu__time_duration.sum", "ns", x.get("ns", 10_000_000)))
        for metric, unit, v in metrics:
            lines.append(f'"{i}","1","python3","h","{x["kernel"]}","1","7","{x["block"]}","{x["grid"]}","0","9.0",'
                         f'"Command line profiler metrics","{metric}","{unit}","{v:,.0f}"')
    return "\n".join(lines) + "\n"


def test_read_ncu_csv_scales_units_and_keeps_launch_order() -> None:
    text = ncu_csv([{"kernel": "void k2<int>(int)", "grid": "(2, 1, 1)", "block": "(64, 1, 1)", "read": 3e6,
                     "write": 1e6, "l2": 2e6}])
    text = text.replace('"byte","3,000,000"', '"Mbyte","3"')  # units other than base are scaled too
    text += text.splitlines()[2].replace('"0"', '"1"', 1).replace("k2<int>", "k1") + "\n"  # a second launch
    df = ncu_check.read_ncu_csv(text)
    assert list(df["kernel"]) == ["void k2<int>(int)", "void k1(int)"]
    assert df.loc[0, "dram_read"] == 3e6 and df.loc[0, "l2_write"] == 2e6 and df.loc[0, "time_ns"] == 1e7
    assert np.isnan(df.loc[0, "flops"])
    with pytest.raises(AddressableError, match="no measurements"):
        ncu_check.read_ncu_csv("==ERROR== something failed\n")


def test_measured_bytes_count_writes_left_dirty_in_l2() -> None:
    """ncu flushes caches before each kernel: reads come from DRAM, but written lines can stay in L2."""
    df = pd.DataFrame({"dram_read": [100.0, 100.0], "dram_write": [20.0, 90.0], "l2_write": [80.0, 60.0]})
    assert list(ncu_check.measured_bytes(df)) == [180.0, 190.0]


def _sampled_launches(rows: pd.DataFrame, scale: dict[str, float]) -> list[dict]:
    """What ncu would measure of the trace's step: the first 2 launches per (function base name, grid, block) of
    the top kernels' functions, each measuring its estimated bytes times scale[base name] (half read, half
    written into L2, a tenth of that reaching DRAM)."""
    names = ncu_check.top_kernel_names(rows, 20)
    bases = {ncu_check.base_name(n) for n in names}
    r = rows[rows["name"].astype(str).map(ncu_check.base_name).isin(bases)]
    r = r[ncu_check.config_rank(r) < 2]
    out = []
    for x in r.itertuples():
        b = (x.bytes if x.modelled else 1e8) * scale.get(ncu_check.base_name(x.name), 1.0)
        out.append({"kernel": x.name.replace("at::native::", "at::"), "grid": str(x.grid).replace("[", "(")
                    .replace("]", ")").replace(",", ", "), "block": str(x.block).replace("[", "(").replace("]", ")")
                    .replace(",", ", "), "read": b / 2, "write": b / 20, "l2": b / 2})
    return out


def test_check_pairs_sampled_launches_and_lists_every_miss() -> None:
    rows = ncu_check.step_kernels(load_trace(RESNET))
    mul = rows["launch_op"] == "aten::_foreach_mul_"  # as if its op had no model
    rows.loc[mul, "modelled"], rows.loc[mul, "bytes"] = False, np.nan
    launches = _sampled_launches(rows, {BN_STATS: 0.5})
    extra = {"kernel": "void unrelated_kernel(int)", "grid": "(1, 1, 1)", "block": "(32, 1, 1)", "read": 1e9,
             "write": 0, "l2": 0}
    df = ncu_check.read_ncu_csv(ncu_csv([extra, *launches]))  # a launch the trace lacks shifts nothing
    c = ncu_check.compare(rows, df, 20, peak_gbps=4000)
    k = c.kernels.set_index("kernel")
    assert len(c.kernels) == 20 and c.n_matched == len(launches)
    stats = k.loc[BN_STATS]
    assert stats["status"] == "outside" and stats["ratio"] == pytest.approx(2.0)
    assert stats["launches"] < stats["launches_in_step"]  # 2 per launch configuration, not all 53
    transform = k.loc["batch_norm_transform_input_channels_last_kernel"]
    assert transform["status"] == "within" and transform["ratio"] == pytest.approx(1.0)
    assert set(c.kernels["status"]) >= {"within", "outside", "unmodelled", "small, outside"}
    assert set(c.misses["status"]) == set(c.kernels["status"]) - {"within"}
    text = ncu_check.format_check(c, "resnet50")
    assert f"OUTSIDE         {BN_STATS}" in text and "UNMODELLED" in text
    assert f"{int(c.checked['within'].sum())} of {len(c.checked)} checked within ±20%" in text
    assert list(c.over_peak["kernel"]) == [] and "beats the memory roof (4,000 GB/s)" in text
    d = c.to_dict()
    assert d["within"] == int(c.checked["within"].sum()) and d["kernels"][0]["name"] == c.kernels["name"][0]
    json.dumps(d)


def test_a_launch_faster_than_the_memory_roof_is_listed() -> None:
    rows = ncu_check.step_kernels(load_trace(RESNET))
    launches = _sampled_launches(rows, {})
    launches[0]["ns"] = 1  # its bytes in 1 ns
    c = ncu_check.compare(rows, ncu_check.read_ncu_csv(ncu_csv(launches)), 20, peak_gbps=4000)
    assert len(c.over_peak) == 1 and c.over_peak["gbps"][0] > 4200


def test_check_of_a_run_folder_and_the_roofline_command(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from addressable.classify.breakdown import classify_trace
    from addressable.cli import main
    from addressable.roofline.model import roofline_of_trace
    from addressable.runs.folder import write_breakdown

    run = tmp_path / "run"
    write_breakdown(classify_trace(RESNET), run, extra={"roofline": {
        **roofline_of_trace(RESNET, gpu="H200").to_dict(), "ncu": {"top": 10}}})
    shutil.copy(RESNET, run / "trace.json.gz")
    assert ncu_check.check_of_run(run) is None  # no ncu_raw.csv
    rows = ncu_check.step_kernels(load_trace(RESNET))
    (run / NCU_RAW_FILE).write_text(ncu_csv(_sampled_launches(rows, {BN_STATS: 0.5})))
    c = ncu_check.check_of_run(run)
    assert len(c.kernels) == 10
    res = CliRunner().invoke(main, ["roofline", str(run), "--gpu", "H200"])
    assert res.exit_code == 0, res.output
    assert "Nsight Compute check" in res.output and f"OUTSIDE         {BN_STATS}" in res.output


def test_the_roofline_command_checks_a_run_with_its_taxonomy_file(tmp_path: Path) -> None:
    """`roofline RUN --taxonomy FILE` reads the rule file for the Nsight Compute check too (it passed the
    path where the rules belong, and failed with a traceback)."""
    from click.testing import CliRunner

    from addressable.classify.breakdown import classify_trace
    from addressable.classify.taxonomy import DEFAULT_TAXONOMY
    from addressable.cli import main
    from addressable.runs.folder import write_breakdown

    run = tmp_path / "run"
    write_breakdown(classify_trace(RESNET), run, extra={"roofline": {"ncu": {"top": 10}}})
    shutil.copy(RESNET, run / "trace.json.gz")
    rows = ncu_check.step_kernels(load_trace(RESNET))
    (run / NCU_RAW_FILE).write_text(ncu_csv(_sampled_launches(rows, {BN_STATS: 0.5})))
    rules = DEFAULT_TAXONOMY.read_text()
    assert "normalization: {class: replaceable" in rules
    (tmp_path / "tax.yaml").write_text(rules.replace("normalization: {class: replaceable",
                                                     "normalization: {class: library"))
    for taxonomy, listed in ((DEFAULT_TAXONOMY, True), (tmp_path / "tax.yaml", False)):
        res = CliRunner().invoke(main, ["roofline", str(run), "--gpu", "H200", "--taxonomy", str(taxonomy)])
        assert res.exit_code == 0, res.output
        assert "Nsight Compute check" in res.output
        assert (f"OUTSIDE         {BN_STATS}" in res.output) is listed  # batch norm: library in tax.yaml


# ---------------------------------------------------------------- real H200 measurements (23:27 run)
# tests/data/ncu/*_ncu_trace.json.gz: the profiled step; *_ncu_raw.csv.gz: ncu's CSV of one re-run step, measured with
# --filter-mode per-launch-config --launch-count 2 (FLOPs too for llama3-8b infer)
LLAMA_TRACE, LLAMA_NCU = DATA / "ncu/llama3_8b_infer_ncu_trace.json.gz", DATA / "ncu/llama3_8b_infer_ncu_raw.csv.gz"
GPT2_TRACE, GPT2_NCU = DATA / "ncu/gpt2_train_ncu_trace.json.gz", DATA / "ncu/gpt2_train_ncu_raw.csv.gz"


def real_step(trace: Path, raw: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    import gzip

    return ncu_check.step_kernels(load_trace(trace)), ncu_check.read_ncu_csv(gzip.decompress(raw.read_bytes()).decode())


def test_ncu_keys_launch_configurations_by_function_base_name_grid_and_block() -> None:
    """On the real measurement: ncu took exactly the first 2 launches of each (function base name, grid, block),
    template arguments aside, so config_rank < 2 selects the same launches on the trace's side."""
    rows, df = real_step(LLAMA_TRACE, LLAMA_NCU)
    keys = [df["kernel"].map(ncu_check.base_name), ncu_check.launch_config(df["grid"]), ncu_check.launch_config(df["block"])]
    assert df.groupby(keys).size().max() == 2
    assert set(df["kernel"].map(ncu_check.base_name)) <= {ncu_check.base_name(n) for n in rows["name"].astype(str)}
    bases = set(df["kernel"].map(ncu_check.base_name))
    chosen = rows[(ncu_check.config_rank(rows) < 2) & rows["name"].astype(str).map(ncu_check.base_name).isin(bases)]
    assert len(chosen) == len(df) == 56
    assert ncu_check.base_name("void unnamed>::multi_tensor_apply_kernel<unnamed>::TensorListMetadata<1>, "
                         "std::plus<float>, float>(T1, T2, T3...)") == "multi_tensor_apply_kernel"


def test_real_launches_all_pair_and_silu_gets_its_own_measurement() -> None:
    """Every launch ncu measured pairs with its trace launch. Pairing by full name (the old key) gave
    aten::silu the measurement of the gate*up mul launched with the same grid (469.8 vs 704.7 MB)."""
    rows, df = real_step(LLAMA_TRACE, LLAMA_NCU)
    m = ncu_check.match(rows, df, 2)
    assert m["measured_bytes"].notna().sum() == len(df)
    silu = m[(m["launch_op"] == "aten::silu") & m["measured_bytes"].notna()].iloc[0]
    assert silu["dram_read"] == 234_919_936  # ncu's launch 23: the silu_kernel, reading its 8x1024x14336 bf16 input
    assert silu["bytes"] / silu["measured_bytes"] == pytest.approx(1.0, abs=0.01)
    c = ncu_check.compare(rows, df, 20, per_config=2)
    assert c.n_matched == c.n_ncu == 56
    assert set(c.kernels["status"]) <= {"within", "small, within", "unsampled"}
    assert (c.kernels["status"] == "unsampled").sum() == 3
