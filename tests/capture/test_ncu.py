"""addressable.capture.ncu: one step of a workload run under Nsight Compute (the command line, the launch budget,
the fallback to the step's first launches), and `profile --ncu`'s checks of its inputs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from addressable.capture import ncu
from addressable.core.errors import AddressableError
from addressable.roofline import ncu_check
from addressable.trace.reader import load_trace
from tests.roofline.test_ncu_check import GPT2_NCU, GPT2_TRACE, RESNET, ncu_csv, real_step


def test_base_name_and_kernel_filter_reach_both_spellings() -> None:
    trace_name = "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>>(int)"
    ncu_name = "void at::vectorized_elementwise_kernel<8, at::CUDAFunctor_add<c10::BFloat16>>(int, T2, T3)"
    assert ncu_check.base_name(trace_name) == ncu_check.base_name(ncu_name) == "vectorized_elementwise_kernel"
    import re

    pattern = re.compile(ncu.kernel_filter([trace_name, "void elementwise_kernel<1>(int)"]).removeprefix("regex:"))
    assert pattern.search("vectorized_elementwise_kernel") and pattern.search("at::elementwise_kernel<1>")
    assert not pattern.search("unrolled_elementwise_kernel_for_multi_outputs")


def test_cli_profile_ncu_needs_a_gpu_and_ncu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from addressable.cli import main

    res = CliRunner().invoke(main, ["profile", "resnet50", "--device", "cpu", "--ncu", "--out", str(tmp_path)])
    assert res.exit_code == 2 and "--ncu needs a CUDA GPU" in res.output and "Traceback" not in res.output
    assert list(tmp_path.iterdir()) == []
    res = CliRunner().invoke(main, ["profile", "resnet50", "--device", "cpu", "--ncu", "0"])
    assert res.exit_code == 2 and "0 is not in the range x>=1" in res.output
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(AddressableError, match="no `ncu` on PATH"):
        ncu.find_ncu()


def test_ncu_command_measures_the_step_process_wide_per_launch_config(tmp_path: Path) -> None:
    cmd = ncu.ncu_command("/x/ncu", {"name": "resnet50"}, ["void at::native::k<1>(int)"], tmp_path / "o.csv")
    line = " ".join(cmd)
    assert "--profile-from-start off" in line and "--filter-mode per-launch-config --launch-count 2" in line
    assert "--cache-control all" in line and "lts__t_sectors_srcunit_tex_op_write.sum" in line
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:(^|::)(k)($|<|\\()"
    assert cmd[-2:] == ["addressable.capture.ncu", json.dumps({"name": "resnet50"})]


@pytest.mark.gpu
def test_profile_ncu_on_the_gpu(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from addressable.cli import main

    if shutil.which("ncu") is None:
        pytest.skip("Nsight Compute (ncu) is not installed")
    res = CliRunner().invoke(main, ["profile", "resnet50", "--batch", "8", "--warmup", "1", "--steps", "1",
                                    "--profile-steps", "1", "--repeats", "1", "--out", str(tmp_path), "--ncu", "5"])
    assert res.exit_code == 0, res.output
    run = next(tmp_path.iterdir())
    doc = json.loads((run / "breakdown.json").read_text())["roofline"]["ncu"]
    assert doc["launches_matched"] > 0 and len(doc["kernels"]) == 5
    assert (run / "ncu.csv").is_file() and (run / "ncu_raw.csv").is_file()


def test_measure_step_falls_back_to_the_steps_first_launches(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A stand-in `ncu` on PATH that measures nothing per launch configuration: the check then measures the
    first launches of the top kernels' functions and pairs them in order."""
    rows = ncu_check.step_kernels(load_trace(RESNET))
    bases = {ncu_check.base_name(n) for n in ncu_check.top_kernel_names(rows, 20)}
    first = rows[rows["name"].astype(str).map(ncu_check.base_name).isin(bases)].head(50)
    launches = [{"kernel": x.name, "grid": x.grid, "block": x.block, "read": 2e6, "write": 0, "l2": 1e6}
                for x in first.itertuples()]
    (tmp_path / "prefix.csv").write_text(ncu_csv(launches))
    fake = tmp_path / "bin" / "ncu"
    fake.parent.mkdir()
    k, n = ncu.choose_per_config(rows, ncu_check.top_kernel_names(rows, 20), ncu.MAX_LAUNCHES_FLOPS)  # flops=True
    fake.write_text(f"""#!{shutil.which("python3") or "/usr/bin/python3"}
import sys
args = sys.argv[1:]
if "--query-metrics" in args:
    sys.exit(0)
log = args[args.index("--log-file") + 1]
text = "==PROF== Connected" if "per-launch-config" in args else open({str(tmp_path / "prefix.csv")!r}).read()
assert args[args.index("--launch-count") + 1] == ("{k}" if "per-launch-config" in args else "{n}")
open(log, "w").write(text)
""")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:/usr/bin:/bin")
    said: list[str] = []
    text, per_config = ncu.measure_step({"name": "resnet50"}, rows, 20, tmp_path, progress=said.append)
    assert per_config is None and "measuring the step's first launches" in said[-1]
    c = ncu_check.compare(rows, ncu_check.read_ncu_csv(text), 20, per_config=per_config)
    assert c.n_matched == 50
    m = ncu_check.match(rows, ncu_check.read_ncu_csv(text), None)
    assert list(m.loc[m["measured_bytes"].notna(), "name"]) == list(first["name"])


def test_choose_per_config_reaches_every_top_kernel_within_the_budget() -> None:
    """gpt2 train: one (vectorized_elementwise_kernel, 24576 blocks) configuration holds 228 launches of 8 top
    kernels, the tanh backward's first at place 99: 2 per configuration missed 5 of the top 20."""
    rows, df = real_step(GPT2_TRACE, GPT2_NCU)
    names = ncu_check.top_kernel_names(rows, 20)
    c = ncu_check.compare(rows, df, 20, per_config=2)
    assert (c.kernels["status"] == "unsampled").sum() == 5 and c.n_matched == c.n_ncu == 39
    cgw = c.kernels.set_index("kernel").loc["compute_grad_weight"]  # embedding backward's fp32 segment sums
    assert cgw["status"] == "within" and cgw["ratio"] == pytest.approx(1.0, abs=0.02)
    assert set(c.kernels["status"]) == {"within", "unsampled"}
    table = ncu_check.format_check(c, "gpt2-train", all_kernels=True).splitlines()
    assert "39 launches measured (the first 2 of each launch configuration), 39 paired" in table[0]
    assert len(table) == 3 + 20 and sum(x.startswith("  UNSAMPLED") for x in table) == 5
    assert any(x.startswith("  UNSAMPLED") and "aten::tanh_backward" in x and " 0/12 " in x for x in table)
    k, n = ncu.choose_per_config(rows, names, ncu.MAX_LAUNCHES)
    rank = ncu_check.config_rank(rows)
    assert all((rank[rows["name"].astype(str) == x] < k).any() for x in names)
    assert not all((rank[rows["name"].astype(str) == x] < k - 1).any() for x in names)  # the smallest such K
    bases = {ncu_check.base_name(x) for x in names}
    assert n == int(((rank < k) & rows["name"].astype(str).map(ncu_check.base_name).isin(bases)).sum()) <= ncu.MAX_LAUNCHES
    k2, n2 = ncu.choose_per_config(rows, names, 100)  # a smaller budget: fewer launches, not all reached
    assert ncu_check.PER_CONFIG <= k2 < k and n2 <= 100
