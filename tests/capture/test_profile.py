"""`addressable profile` / `addressable workloads`: run folders, bad input, atomicity, extrapolation."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import click
import pandas as pd
import pytest
import torch
from click.testing import CliRunner

from addressable.capture.measure import Measurement, measurement, memory_errors
from addressable.capture.profile import (
    check_depth_fit,
    extrapolate,
    extrapolate_breakdown,
    profile_workload,
    resolve_config,
    validate_extrapolation,
)
from addressable.capture.workload import WorkloadConfig, get_workload, registry, workload_table
from addressable.classify.breakdown import Breakdown
from addressable.cli import main
from addressable.core.errors import AddressableError

TINY_ADAPTER = '''
import time

import torch

from addressable.capture.phases import phase
from addressable.capture.workload import WorkloadSpec


def build(cfg):
    layers, width = int(cfg.options.get("layers", 8)), int(cfg.options.get("width", 64))
    fail_at, calls, sleep_s = cfg.options.get("fail_at"), [0], float(cfg.options.get("sleep_s", 0))
    sleep_s = max(0.0, sleep_s + float(cfg.options.get("layer_sleep_s", 0)) * layers)  # a step's cost per layer
    model = torch.nn.Sequential(*[m for _ in range(layers) for m in (torch.nn.Linear(width, width), torch.nn.ReLU())])
    x = torch.randn(cfg.batch, width)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step():
        calls[0] += 1
        time.sleep(sleep_s)
        if fail_at and calls[0] >= fail_at:
            raise RuntimeError("adapter failed mid-run")
        with phase("forward"):
            loss = model(x).square().mean()
        with phase("backward"):
            loss.backward()
        with phase("optimizer"):
            opt.step()
            opt.zero_grad()

    return step


def build_oom(cfg):
    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")


WORKLOADS = [
    WorkloadSpec("tiny-mlp", "test", "tiny MLP", build, modes=("train",), default_batch=8,
                 default_dtype="fp32", dtypes=("fp32",), full_layers=8, options=("width", "fail_at", "sleep_s", "layer_sleep_s")),
    WorkloadSpec("tiny-oom", "test", "runs out of memory", build_oom, default_batch=8, default_dtype="fp32"),
]
'''

RUN_FILES = {"trace.json.gz", "breakdown.json", "categories.csv", "kernels.csv", "steps.csv", "manifest.json"}
RUN_KEYS = {"workload", "family", "mode", "device", "batch", "seq_len", "dtype", "step_time_ms",
            "kernel_time_per_step_us", "addressable_fraction_wall", "repeats", "addressable_fraction_range",
            "addressable_fraction_wall_range", "phases", "addressable_fraction", "categories"}
MANIFEST_KEYS = {"config", "measurement", "torch", "cuda", "cudnn", "driver", "gpu", "git_revision", "argv", "date"}


@pytest.fixture(scope="module")
def adapter(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("adapters") / "tiny_adapter.py"
    path.write_text(textwrap.dedent(TINY_ADAPTER))
    return str(path)


def cli(*args: object) -> object:
    return CliRunner().invoke(main, [str(a) for a in args])


def tiny(adapter: str, **options: object):
    return resolve_config("tiny-mlp", device="cpu", options=options, adapters=(adapter,))


# ------------------------------------------------------------------ workloads


def test_workloads_lists_builtins_and_user_adapters(adapter: str) -> None:
    r = cli("workloads", "--adapter", adapter)
    assert r.exit_code == 0, r.output
    header, *rows = r.output.splitlines()
    assert header.split()[:3] == ["workload", "family", "modes"]
    assert any(row.split()[:2] == ["resnet50", "cnn"] and " 64 " in row for row in rows)
    assert any(row.startswith("tiny-mlp") for row in rows)
    df = workload_table((adapter,))
    assert {"resnet50", "tiny-mlp"} <= set(df["workload"])
    assert df.set_index("workload").loc["tiny-mlp", "full_layers"] == 8


def test_workloads_shows_every_option_key(adapter: str) -> None:
    """issue 26: descriptions were cut at 72 characters, which hid each workload's options."""
    out = cli("workloads", "--adapter", adapter).output
    assert "…" not in out
    blocks = out.split("Descriptions and --option KEY=VALUE keys:\n")[1]
    text = {b.split()[0]: " ".join(b.split()[1:]) for b in re.split(r"\n(?=\S)", blocks)}
    assert text["tiny-mlp"] == "tiny MLP; options: width, fail_at, sleep_s, layer_sleep_s, layers"  # not in its description
    for row in workload_table((adapter,)).itertuples():
        named = text[row.workload].partition("options:")[2]
        assert all(re.search(rf"\b{k}\b", named) for k in row.options.split(",") if k), row.workload
    assert "decode_tokens (infer, default 16), checkpoint (train)" in text["gpt2"]  # the whole description


def test_user_adapter_registers_without_touching_the_package(adapter: str) -> None:
    assert "tiny-mlp" in registry((adapter,))
    spec = get_workload("tiny-mlp", (adapter,))
    assert spec.full_layers == 8 and spec.modes == ("train",)


def test_env_adapters_and_bad_adapter(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "env_adapter.py"
    path.write_text(TINY_ADAPTER.replace('"tiny-mlp"', '"env-mlp"').replace('"tiny-oom"', '"env-oom"'))
    monkeypatch.setenv("ADDRESSABLE_ADAPTERS", str(path))
    assert "env-mlp" in registry()
    monkeypatch.delenv("ADDRESSABLE_ADAPTERS")
    r = cli("workloads", "--adapter", "no_such_adapter_module")
    assert r.exit_code == 2 and r.stderr.count("\n") == 1 and "cannot import adapter" in r.stderr


@pytest.mark.parametrize(("source", "fragments"), [
    ("WORKLOADS = [\ndef broken(:\n", ["SyntaxError", "bad_adapter.py:2"]),
    ("import torch\n  WORKLOADS = []\n", ["IndentationError", "bad_adapter.py:2"]),
    ("x = 1\nraise ValueError('no config here')\nWORKLOADS = []\n", ["bad_adapter.py:2: ValueError: no config here"]),
])
def test_a_broken_adapter_is_one_line(tmp_path: Path, source: str, fragments: list[str]) -> None:
    """Issue 26: an adapter with a syntax error printed a traceback; every other adapter error is one line."""
    path = tmp_path / "bad_adapter.py"
    path.write_text(source)
    for args in (["workloads", "--adapter", path], ["profile", "x", "--adapter", path, "--out", tmp_path / "o"]):
        _one_line_error(cli(*args), f"cannot import adapter {path}", *fragments)
    assert not (tmp_path / "o").exists()


def test_an_adapter_path_that_is_not_a_python_file_is_one_line(tmp_path: Path) -> None:
    """A path Python cannot import (no .py) said "AttributeError: 'NoneType' object has no attribute
    'loader'"; a missing file said "AddressableError: no such adapter file" inside another error."""
    (tmp_path / "adapter").write_text(TINY_ADAPTER)
    _one_line_error(cli("workloads", "--adapter", tmp_path / "adapter"),
                    f"error: cannot import adapter {tmp_path / 'adapter'}: not a Python file (name it *.py)")
    r = cli("workloads", "--adapter", tmp_path / "missing.py")
    _one_line_error(r, f"error: no such adapter file: {tmp_path / 'missing.py'}")
    assert "AddressableError" not in r.stderr


def test_registry_skips_only_builtins_that_do_not_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import addressable.capture.workload as wl

    monkeypatch.setattr(wl, "BUILTIN_ADAPTERS", (*wl.BUILTIN_ADAPTERS, "workloads.not_written_yet"))
    assert "resnet50" in registry()
    (tmp_path / "adapter_missing_dep.py").write_text("import no_such_dependency_xyz\nWORKLOADS = []\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(wl, "BUILTIN_ADAPTERS", (*wl.BUILTIN_ADAPTERS, "adapter_missing_dep"))
    with pytest.raises(AddressableError, match="no_such_dependency_xyz"):
        registry()


# ------------------------------------------------------------------ a real CPU run


@pytest.mark.slow
def test_profile_resnet50_on_cpu_writes_a_complete_run_folder(tmp_path: Path) -> None:
    r = cli("profile", "resnet50", "--batch", 2, "--option", "image_size=32", "--warmup", 1, "--steps", 1,
            "--repeats", 2, "--device", "auto", "--out", tmp_path)
    assert r.exit_code == 0, r.output
    run = tmp_path / ("resnet50-train-b2-fp32-cpu-image_size32" if not torch.cuda.is_available()
                      else "resnet50-train-b2-bf16-cuda-image_size32")
    assert {p.name for p in run.iterdir()} >= RUN_FILES
    assert [p.name for p in tmp_path.iterdir()] == [run.name]  # no temporary folder left behind
    b = json.loads((run / "breakdown.json").read_text())
    assert set(b) >= RUN_KEYS
    assert 0.0 <= b["addressable_fraction_wall"] <= 1.0 and b["step_time_ms"] > 0
    assert len(b["repeats"]) == 2 and b["n_steps"] == 2
    assert {"forward", "backward", "optimizer"} <= set(b["phases"])
    lo, hi = b["addressable_fraction_range"]
    assert 0.0 <= lo <= hi <= 1.0
    for rep in b["repeats"]:
        assert rep["step_time_ms"] > 0 and rep["category_time_per_step_us"]
        assert rep["kernel_time_per_step_us"] == pytest.approx(sum(rep["category_time_per_step_us"].values()))
    assert set(json.loads((run / "manifest.json").read_text())) >= MANIFEST_KEYS
    steps = pd.read_csv(run / "steps.csv")
    assert list(steps.columns) == ["repeat", "step", "time_ms", "profiled"]
    assert len(steps) == 4 and steps["profiled"].sum() == 2
    cats = pd.read_csv(run / "categories.csv")
    assert list(cats.columns) == ["category", "class", "time_us", "share", "count"]
    assert cats["share"].sum() == pytest.approx(1.0)
    out = r.stdout
    assert "Device: cpu" in out or "Device: cuda" in out
    assert "Addressable fraction of wall time" in out and f"Run folder: {run}" in out
    assert "repeat 2/2" in r.stderr  # progress goes to stderr


def test_profile_infer_marks_only_forward(adapter: str, tmp_path: Path) -> None:
    cfg = resolve_config("resnet50", mode="infer", batch=1, device="cpu", options={"image_size": 32})
    res = profile_workload(cfg, measurement("cpu", warmup=0, steps=1, repeats=1), tmp_path)
    assert set(res.breakdown.to_dict()["phases"]) == {"forward"}
    assert res.run["mode"] == "infer" and res.path.name == "resnet50-infer-b1-fp32-cpu-image_size32"


def test_rerun_writes_name_2_and_force_replaces(adapter: str, tmp_path: Path) -> None:
    args = ("profile", "tiny-mlp", "--adapter", adapter, "--device", "cpu", "--warmup", 0, "--steps", 1,
            "--repeats", 1, "--option", "width=8", "--out", tmp_path)
    first = tmp_path / "tiny-mlp-train-b8-fp32-cpu-width8"
    assert cli(*args).exit_code == 0 and first.is_dir()
    # issue 26: the source is the trace where it lies, not the temporary .partial folder it was written in
    source = Path(json.loads((first / "breakdown.json").read_text())["source"])
    assert source == first / "trace.json.gz" and source.is_file()
    (first / "mine.txt").write_text("kept")  # the first run is never touched without --force
    r = cli(*args)
    assert r.exit_code == 0, r.output
    assert f"{first} exists: writing {first}-2 (--force replaces it)" in r.stderr
    assert f"Run folder: {first}-2" in r.stdout and (first / "mine.txt").is_file()
    r = cli(*args, "--force")
    assert r.exit_code == 0, r.output
    assert f"Run folder: {first}\n" in r.stdout and "exists" not in r.stderr
    assert not (first / "mine.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [first.name, f"{first.name}-2"]


def test_budget_fits_the_counts_to_the_warm_up_step_and_prints_the_plan(adapter: str, tmp_path: Path) -> None:
    # a 0.1 s step: the CPU defaults, 2 × (1 + 1), would take about 0.6 s (a profiled step costs two); the budget
    # allows 0.5 s, and the least plan, 1 × (1 + 1), about 0.3 s, fits it for any warm-up step under 0.167 s (at a
    # budget of 0.35 s, a 0.12 s warm-up step on a loaded 2-core machine made even the least plan too long)
    r = cli("profile", "tiny-mlp", "--adapter", adapter, "--device", "cpu", "--option", "sleep_s=0.1",
            "--option", "width=8", "--budget", 0.5, "--out", tmp_path)
    assert r.exit_code == 0, r.output
    assert re.search(r"warm-up step 0\.1\d s; plan: 1 repeat × \(1 timed \+ 1 profiled step\), about \d s of steps, "
                     r"cut to fit the 0\.5 s budget \(--budget\)", r.stderr), r.stderr
    assert "\r" not in r.stderr  # no live progress line when stderr is not a terminal
    run = tmp_path / "tiny-mlp-train-b8-fp32-cpu-sleep_s0.1-width8"
    m = json.loads((run / "manifest.json").read_text())["measurement"]
    assert (m["repeats"], m["steps"], m["profile_steps"], m["budget_s"]) == (1, 1, 1, 0.5)
    assert len(json.loads((run / "breakdown.json").read_text())["repeats"]) == 1
    assert "Steps: warm-up 1, then 1 repeat × (1 timed + 1 profiled step)" in r.stdout


def test_a_budget_that_cannot_be_met_says_so_and_gives_the_least(adapter: str, tmp_path: Path) -> None:
    """Issue 26: the plan said "cut to fit --budget 60 s" for 76 s. A 0.1 s step needs at least 0.3 s
    (1 timed + 1 profiled step at twice the cost): --budget 0.2 cannot be met, and the log says so."""
    r = cli("profile", "tiny-mlp", "--adapter", adapter, "--device", "cpu", "--option", "sleep_s=0.1",
            "--option", "width=8", "--budget", 0.2, "--out", tmp_path)
    assert r.exit_code == 0, r.output
    assert "cut to fit" not in r.stderr
    assert re.search(r"plan: 1 repeat × \(1 timed \+ 1 profiled step\), about \d s of steps; this cannot fit "
                     r"the 0\.2 s budget \(--budget\): about \d s is the least \(it runs anyway; --budget inf lifts the limit\)", r.stderr), r.stderr
    assert "lowered as far as they go, which could not fit the 0.2 s budget" in r.stdout
    r = cli("profile", "tiny-mlp", "--adapter", adapter, "--device", "cpu", "--option", "sleep_s=0.1",
            "--option", "width=8", "--budget", 0.2, "--steps", 2, "--out", tmp_path)
    assert "is the least with --steps 2 as given" in r.stderr, r.stderr


def test_each_repeat_reports_its_time_and_what_is_left(adapter: str, tmp_path: Path) -> None:
    # the plan counts steps only; the log times each repeat with its trace analysis and re-estimates
    r = cli("profile", "tiny-mlp", "--adapter", adapter, "--device", "cpu", "--option", "width=8",
            "--repeats", 2, "--out", tmp_path)
    assert r.exit_code == 0, r.output
    assert "profiled step), about" in r.stderr and "of steps" in r.stderr
    assert re.search(r"repeat 1/2: .*\(\d[\d.,]* m?s with its trace analysis; about \S+ m?s left\)", r.stderr), r.stderr
    assert re.search(r"repeat 2/2: .*\(\d[\d.,]* m?s with its trace analysis\)", r.stderr), r.stderr


def test_progress_line_on_a_terminal(adapter: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    cfg = tiny(adapter, width=8)
    profile_workload(cfg, measurement("cpu", warmup=1, steps=2, profile_steps=1, repeats=2), tmp_path,
                     adapters=(adapter,), progress=print)
    text = err.getvalue()
    assert "\r\033[Ktiny-mlp: warm-up: 1/1 steps" in text
    assert "\r\033[Ktiny-mlp: 6/6 steps" in text and "steps, about" in text  # done/total with the time left
    assert text.endswith("\r\033[K")  # the live line is gone at the end


# ------------------------------------------------------------------ bad input


def _one_line_error(r: object, *fragments: str) -> None:
    assert r.exit_code == 2, r.output
    assert r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr
    for f in fragments:
        assert f in r.stderr


@pytest.mark.parametrize(("args", "fragments"), [
    (["nosuch"], ["unknown workload 'nosuch'", "resnet50"]),
    (["tiny-mlp", "--mode", "infer"], ["tiny-mlp has no mode 'infer'", "train"]),
    (["resnet50", "--dtype", "fp16", "--device", "cpu"], ["fp16 is not supported on the CPU"]),
    (["tiny-mlp", "--dtype", "bf16"], ["does not run in bf16"]),
    (["resnet50", "--seq-len", "128"], ["takes no --seq-len"]),
    (["tiny-oom", "--batch", "8"], ["out of memory", "batch 8", "--batch 4", "it asked for 2.00 GiB more"]),
    (["tiny-oom", "--batch", "1"], ["out of memory", "batch 1", "it needs a device with more memory"]),
    (["tiny-mlp", "--option", "width"], ["KEY=VALUE"]),
    (["tiny-mlp", "--option", "widht=3"], ["tiny-mlp: unknown option 'widht'", "known: width, fail_at, sleep_s, layer_sleep_s, layers"]),
    (["tiny-oom", "--option", "x=1"], ["tiny-oom: unknown option 'x'", "takes no options"]),  # before build's OOM
    (["resnet50", "--option", "bogus=1"], ["resnet50: unknown option 'bogus'", "image_size"]),
    (["gpt2", "--option", "layer=2"], ["gpt2: unknown option 'layer'", "layers", "decode_tokens"]),
    (["dlrm", "--option", "row=2"], ["dlrm: unknown option 'row'", "rows"]),
    (["tiny-mlp", "--steps", "0"], ["--steps, --profile-steps and --repeats must be at least 1"]),
    (["tiny-mlp", "--budget", "0"], ["--budget must be a positive number of seconds"]),
    (["tiny-mlp", "--layers-subset", "4,2"], ["0 < L1 < L2"]),
    (["tiny-mlp", "--layers-subset", "2,16"], ["<= 8"]),
    (["tiny-oom", "--layers-subset", "1,2"], ["cannot be profiled on a subset of layers"]),
])
def test_bad_input_is_one_line_and_leaves_nothing(adapter: str, tmp_path: Path, args: list[str],
                                                  fragments: list[str]) -> None:
    out = tmp_path / "runs"
    _one_line_error(cli("profile", *args, "--device", "cpu", "--adapter", adapter, "--out", out), *fragments)
    assert not out.exists() or not any(out.iterdir())


def test_profile_command_is_the_library_form_of_the_command(adapter: str, tmp_path: Path) -> None:
    """The CLI's `profile` is a thin layer: the checks, the run and the printout are profile_command's."""
    from addressable.capture.profile import profile_command

    printed: list[str] = []
    code = profile_command("tiny-mlp", device="cpu", adapters=(adapter,), warmup=0, steps=1, repeats=1,
                           options=("width=8",), out=tmp_path, echo=printed.append)
    assert code == 0 and len(printed) == 1 and printed[0].endswith(f"Run folder: {tmp_path / 'tiny-mlp-train-b8-fp32-cpu-width8'}")
    with pytest.raises(AddressableError, match="--ncu needs a CUDA GPU"):
        profile_command("tiny-mlp", device="cpu", adapters=(adapter,), ncu_top=5, out=tmp_path)


def test_profile_takes_a_workload_config_and_a_measurement(adapter: str, tmp_path: Path) -> None:
    cfg = WorkloadConfig("tiny-mlp", "infer", batch=4, dtype="fp32", device="cpu", options={"width": 8})
    m = Measurement(warmup=0, steps=2, profile_steps=1, repeats=1)
    res = profile_workload(cfg, m, tmp_path, name="direct", adapters=(adapter,))
    assert res.path == tmp_path / "direct"
    assert (res.run["workload"], res.run["mode"], res.run["batch"], res.run["options"]) == ("tiny-mlp", "infer", 4,
                                                                                          {"width": 8})
    man = json.loads((res.path / "manifest.json").read_text())
    assert man["config"] == dataclasses.asdict(cfg)
    ran = {k: man["measurement"][k] for k in ("warmup", "steps", "profile_steps", "repeats", "budget_s")}
    assert ran == {"warmup": 0, "steps": 2, "profile_steps": 1, "repeats": 1, "budget_s": None}  # as given
    assert len(pd.read_csv(res.path / "steps.csv")) == 3
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.batch = 8  # type: ignore[misc]


@pytest.mark.parametrize(("make", "message"), [
    (lambda: WorkloadConfig("resnet50", "train", 0, "fp32", "cpu"), "--batch and --seq-len must be positive"),
    (lambda: WorkloadConfig("gpt2", "train", 1, "fp32", "cpu", seq_len=0), "--batch and --seq-len must be positive"),
    (lambda: WorkloadConfig("resnet50", "serve", 1, "fp32", "cpu"), "mode must be one of train, infer, got 'serve'"),
    (lambda: WorkloadConfig("resnet50", "train", 1, "fp8", "cpu"), "dtype must be one of bf16, fp16, fp32"),
    (lambda: WorkloadConfig("resnet50", "train", 1, "fp16", "cpu"), "fp16 is not supported on the CPU"),
    (lambda: Measurement(warmup=-1, steps=1, profile_steps=1, repeats=1), "--warmup at least 0"),
    (lambda: Measurement(warmup=0, steps=1, profile_steps=0, repeats=1), "must be at least 1"),
    (lambda: Measurement(warmup=0, steps=1, profile_steps=1, repeats=1, budget_s=float("nan")), "--budget"),
    (lambda: measurement("cpu", repeats=0), "must be at least 1"),
])
def test_bad_config_or_measurement_is_one_line_error(make: Any, message: str) -> None:
    with pytest.raises(AddressableError) as e:
        make()
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_asked_for_but_absent(tmp_path: Path) -> None:
    _one_line_error(cli("profile", "resnet50", "--device", "cuda", "--out", tmp_path / "o"), "no CUDA GPU")
    assert not (tmp_path / "o").exists()


def test_unwritable_output_folder(adapter: str, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    r = cli("profile", "tiny-mlp", "--device", "cpu", "--adapter", adapter, "--out", blocker / "runs")
    _one_line_error(r, "cannot create output folder")


def test_failure_mid_run_leaves_no_run_folder(adapter: str, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="failed mid-run"):
        profile_workload(tiny(adapter, fail_at=4), measurement("cpu", warmup=1, steps=1, repeats=2), tmp_path,
                         adapters=(adapter,))
    assert list(tmp_path.iterdir()) == []
    # an earlier complete run of the same name is kept when a rerun fails
    once = measurement("cpu", warmup=0, steps=1, repeats=1)
    profile_workload(tiny(adapter), once, tmp_path, name="keep", adapters=(adapter,))
    with pytest.raises(RuntimeError):
        profile_workload(tiny(adapter, fail_at=2), once, tmp_path, name="keep", adapters=(adapter,))
    assert [p.name for p in tmp_path.iterdir()] == ["keep"]
    assert {p.name for p in (tmp_path / "keep").iterdir()} >= RUN_FILES


# ------------------------------------------------------------------ extrapolation


def _breakdown(times: dict[str, float], n_steps: int = 1) -> Breakdown:
    classes = {"gemm": "library", "memory": "library", "elementwise": "replaceable", "softmax": "replaceable"}
    cats = pd.DataFrame([(c, classes[c], t, 0.0, 1) for c, t in times.items()],
                        columns=["category", "class", "time_us", "share", "count"])
    kernels = cats.assign(name=[f"k_{c}" for c in times])[["name", "category", "class", "time_us", "count", "share"]]
    phases = cats.assign(phase="forward")[["phase", "category", "class", "time_us"]]
    return Breakdown(cats, kernels, sum(times.values()), "gpu_kernel_time", n_steps, phases)


def test_extrapolate_is_the_line_through_two_points() -> None:
    assert extrapolate(10.0, 20.0, 2, 4, 8) == 40.0
    assert extrapolate(10.0, 20.0, 2, 4, 3) == 15.0
    assert extrapolate(5.0, 1.0, 2, 4, 8) == 0.0  # clipped, never negative


def test_extrapolate_breakdown_by_hand() -> None:
    # time per step at 2 layers: gemm 100, elementwise 30, memory 5 (b1 has 2 steps: totals doubled)
    # at 4 layers: gemm 180, elementwise 50, softmax 10. To 8 layers, slope x (8-2)/(4-2) = 3:
    # gemm 100 + 80*3 = 340, elementwise 30 + 20*3 = 90, softmax 0 + 10*3 = 30, memory 5 - 5*3 < 0 -> 0.
    b1 = _breakdown({"gemm": 200.0, "elementwise": 60.0, "memory": 10.0}, n_steps=2)
    b2 = _breakdown({"gemm": 180.0, "elementwise": 50.0, "softmax": 10.0}, n_steps=1)
    x = extrapolate_breakdown(b1, b2, 2, 4, 8)
    got = dict(zip(x.categories["category"], x.categories["time_us"], strict=True))
    assert got == pytest.approx({"gemm": 340.0, "elementwise": 90.0, "softmax": 30.0})
    assert x.total_time_us == pytest.approx(460.0) and x.n_steps == 1
    assert x.addressable_fraction == pytest.approx(120.0 / 460.0)
    assert x.categories["share"].sum() == pytest.approx(1.0)
    assert x.to_dict()["phases"]["forward"]["time_us"] == pytest.approx(460.0)


def test_layers_subset_extrapolates_and_validates_against_full_depth(adapter: str, tmp_path: Path) -> None:
    # 5 ms of sleep per layer: the step time grows with depth well above the timing noise
    r = cli("profile", "tiny-mlp", "--device", "cpu", "--adapter", adapter, "--layers-subset", "2,4",
            "--warmup", 1, "--steps", 2, "--repeats", 2, "--out", tmp_path, "--option", "layer_sleep_s=0.005")
    assert r.exit_code == 0, r.output
    run = tmp_path / "tiny-mlp-train-b8-fp32-cpu-layer_sleep_s0.005-extrap2-4"
    assert {"layers2", "layers4", "breakdown.json", "categories.csv", "kernels.csv", "steps.csv",
            "manifest.json"} <= {p.name for p in run.iterdir()}
    assert {p.name for p in (run / "layers4").iterdir()} >= RUN_FILES
    for depth in ("layers2", "layers4"):
        assert json.loads((run / depth / "breakdown.json").read_text())["source"] == str(run / depth / "trace.json.gz")
    b = json.loads((run / "breakdown.json").read_text())
    x = b["extrapolated"]
    assert (x["from_layers"], x["to_layers"], b["layers"]) == ([2, 4], 8, 8)
    assert x["step_time_ms_range"][0] <= b["step_time_ms"] <= x["step_time_ms_range"][1]
    # four more layers add about 20 ms of sleep; the line through two noisy depths may bend a little below it
    step4 = json.loads((run / "layers4" / "breakdown.json").read_text())["step_time_ms"]
    assert b["step_time_ms"] > step4 + 0.8 * 4 * 5
    assert len(b["repeats"]) == 2 and {"forward", "backward", "optimizer"} <= set(b["phases"])
    assert "Extrapolated linearly from 2 and 4 layers to 8" in r.stdout
    assert "ms (extrapolated from the depths' median unprofiled steps)" in r.stdout
    # each category's time per step sits on the line through the two measured depths (clipped at 0)
    c2, c4 = ({c["category"]: c["time_us"] / d["n_steps"] for c in d["categories"]}
              for d in (json.loads((run / f"layers{n}" / "breakdown.json").read_text()) for n in (2, 4)))
    line = {c: max(0.0, c2.get(c, 0.0) + (c4.get(c, 0.0) - c2.get(c, 0.0)) * 3) for c in c2.keys() | c4.keys()}
    assert b["kernel_time_per_step_us"] == pytest.approx(sum(line.values()), rel=1e-6)

    full = profile_workload(tiny(adapter, layer_sleep_s=0.005), measurement("cpu", warmup=1, steps=2, repeats=2),
                            tmp_path, adapters=(adapter,))
    v = validate_extrapolation(run, full)
    assert list(v.columns) == ["metric", "extrapolated", "full", "error", "rel_error"]
    m = v.set_index("metric")
    assert {"addressable_fraction", "addressable_fraction_wall", "step_time_ms"} <= set(m.index)
    assert any(i.startswith("share:") for i in m.index)
    # CPU timings of a tiny model on a shared machine are too noisy to bound the error here;
    # the GPU runs are where the error is judged. Check the table is consistent.
    assert (m["error"] == m["extrapolated"] - m["full"]).all() and m["extrapolated"].notna().all()
    assert m.loc["addressable_fraction", "full"] == pytest.approx(full.breakdown.addressable_fraction)
    assert m.loc["addressable_fraction", "extrapolated"] == pytest.approx(b["addressable_fraction"])
    with pytest.raises(AddressableError, match="not an extrapolated run"):
        validate_extrapolation(full, run)


def test_a_deeper_model_measured_faster_is_refused_not_extrapolated_to_a_zero_step(adapter: str,
                                                                                     tmp_path: Path) -> None:
    """Issue 26: the 4-layer step was faster than the 2-layer one, and the run said step_time_ms 0.0. Here
    each layer takes 5 ms less sleep: one line, exit 2, and no run folder."""
    r = cli("profile", "tiny-mlp", "--device", "cpu", "--adapter", adapter, "--layers-subset", "2,4",
            "--warmup", 1, "--steps", 1, "--repeats", 2, "--out", tmp_path, "--option", "sleep_s=0.04",
            "--option", "layer_sleep_s=-0.005")
    assert r.exit_code == 2, r.output
    err = r.stderr.strip().splitlines()[-1]
    assert err.startswith("error: --layers-subset 2,4: ") and "is not slower than at 2" in err, err
    assert "Traceback" not in r.output and not any(tmp_path.iterdir())


def test_depth_fit_refuses_a_step_that_does_not_grow() -> None:
    with pytest.raises(AddressableError, match=r"the median step at 4 layers .* not slower"):
        check_depth_fit(2, 4, 12, [10.0, 11.0], [9.0, 10.5], [1e3, 1e3], [2e3, 2e3])
    with pytest.raises(AddressableError, match=re.escape("repeat 2's step at 4 layers (13.0 ms) is not slower than at 2 "
                                                         "(14.0 ms)")):
        check_depth_fit(2, 4, 12, [10.0, 14.0], [15.0, 13.0], [1e3, 1e3], [2e3, 2e3])
    with pytest.raises(AddressableError, match="not slower"):  # equal is not slower either
        check_depth_fit(2, 4, 12, [10.0], [10.0], [1e3], [2e3])


def test_depth_fit_of_a_clean_line_has_no_warning_and_a_range_around_it() -> None:
    # 2 ms fixed + 4 ms per layer, +-0.1 ms of noise: 2 layers 10 ms, 4 layers 18 ms, 12 layers 50 ms
    fit = check_depth_fit(2, 4, 12, [9.9, 10.1], [17.9, 18.1], [8e3, 8.1e3], [16e3, 16.2e3])
    assert fit["warnings"] == []
    lo, hi = fit["step_time_ms_range"]
    assert lo == pytest.approx(10.1 + (17.9 - 10.1) * 5) and hi == pytest.approx(9.9 + (18.1 - 9.9) * 5)
    assert lo < 50.0 < hi


@pytest.mark.parametrize(("step1", "step2", "work1", "work2", "what"), [
    ([10.0, 16.0], [15.0, 22.0], [8e3, 8e3], [16e3, 16e3], "overlap across repeats"),  # every pair grows
    ([10.0, 10.0], [18.0, 18.0], [8e3, 8e3], [7e3, 7.5e3], "work per step does not grow"),
    ([10.0, 10.2], [30.0, 30.5], [8e3, 8e3], [24e3, 24e3], "time per layer grows with depth"),  # 5.1 vs 7.5 ms
])
def test_depth_fit_warns_where_the_line_is_shaky(step1: list[float], step2: list[float], work1: list[float],
                                                 work2: list[float], what: str) -> None:
    fit = check_depth_fit(2, 4, 12, step1, step2, work1, work2)
    assert len(fit["warnings"]) == 1 and what in fit["warnings"][0], fit["warnings"]


def test_profile_and_sweep_share_the_workload_options() -> None:
    from addressable.cli import profile as profile_cmd
    from addressable.cli import sweep as sweep_cmd

    def opts(cmd: Any) -> dict[str, tuple]:
        return {p.name: (tuple(p.opts), p.help, p.default) for p in cmd.params if isinstance(p, click.Option)}

    shared = {"mode", "dtype", "device", "warmup", "steps", "profile_steps", "repeats", "compile_", "adapters",
              "options", "layers_subset", "out", "force"}
    p, s = opts(profile_cmd), opts(sweep_cmd)
    assert shared <= set(p) & set(s)
    same = shared - {"out", "force"}  # their help says run folder(s)
    assert {k: p[k] for k in same} == {k: s[k] for k in same}


def test_out_of_memory_at_batch_1_advises_what_would_fit() -> None:
    """Issue 26: out of memory at batch 1 said "try --batch 1". It now names what is smaller: the sequence,
    a layer subset, a smaller workload of the family, and the memory asked for against what the GPU has."""
    from addressable.capture.oom import memory_tips, out_of_memory

    cfg = WorkloadConfig("llama3-8b", "train", 1, "bf16", "cuda", seq_len=1024)
    err = torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.91 GiB. GPU 0 has a total capacity "
                                      "of 139.72 GiB of which 1.20 GiB is free. Including non-PyTorch memory, ...")
    msg = out_of_memory(cfg, err)
    assert msg.startswith("out of memory running llama3-8b train at batch 1, seq 1024 on cuda (it asked for 3.91 GiB "
                          "more; the GPU has 139.72 GiB, 1.20 GiB free); try --seq-len 512, --layers-subset 2,4 "
                          "(two depths, extrapolated to 32 layers) or a smaller workload (gpt2, llama3-1b)"), msg
    assert "--batch" not in msg and "\n" not in msg
    assert memory_tips(cfg, (4, 8))[1] == "smaller depths than --layers-subset 4,8"
    assert memory_tips(WorkloadConfig("gpt2", "train", 4, "fp32", "cpu", seq_len=32, options={"layers": 6})) == [
        "--batch 2", "--seq-len 16", "--option layers=3"]  # gpt2 is the family's smallest
    cpu = RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried to allocate 4294967296 bytes. Error code 12")
    with pytest.raises(AddressableError) as e, memory_errors(WorkloadConfig("resnet50", "train", 1, "fp32", "cpu")):
        raise cpu
    assert re.search(r"\(it asked for 4.00 GiB more; this machine has [\d.,]+ GiB, [\d.,]+ GiB available\)", str(e.value))
    assert "it asked for 4.00 GiB more" in str(e.value) and "it needs a device with more memory" in str(e.value)


@pytest.mark.gpu
def test_a_real_cuda_out_of_memory_names_the_memory_asked_for_and_there() -> None:
    """PyTorch's own CUDA message (not a hand-written one) is read for the sizes."""
    cfg = WorkloadConfig("llama3-8b", "infer", 1, "bf16", "cuda", seq_len=1024)
    with pytest.raises(AddressableError) as e, memory_errors(cfg):
        torch.empty(2 * torch.cuda.mem_get_info()[1], dtype=torch.uint8, device="cuda")  # twice the GPU
    msg = str(e.value)
    assert re.search(r"\(it asked for [\d.]+ [GT]iB more; the GPU has [\d.]+ GiB, [\d.]+ [GM]iB free\); try ", msg), msg
    assert "--layers-subset 2,4" in msg and "\n" not in msg


def test_a_model_that_rejects_its_configuration_fails_in_one_line() -> None:
    """BatchNorm training on one value per channel (resnet50 at batch 1 on 32-pixel images) raises a
    ValueError inside the model: the user gets its first line and the configuration, not a traceback."""
    cfg = WorkloadConfig(name="resnet50", mode="train", batch=1, dtype="fp32", device="cpu")
    bn = torch.nn.BatchNorm2d(4).train()
    with pytest.raises(AddressableError) as e, memory_errors(cfg):
        bn(torch.ones(1, 4, 1, 1))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("resnet50 train at batch 1 on cpu failed: Expected more than 1 value")


def test_a_runs_host_time_is_a_run_key_and_printed(tmp_path: Path) -> None:
    """host_time_ms, the median of the host steps (each step timed from an idle GPU to its return), is written
    beside step_time_ms and printed with it; a run without host steps (the CPU, an extrapolated run) has none."""
    from addressable.capture.measure import manifest, run_keys
    from addressable.capture.profile import ProfileResult, format_profile
    from addressable.classify.breakdown import breakdown_from_tables
    from addressable.runs.folder import load_run, write_run

    k = pd.DataFrame({"name": ["aten::mm", "aten::tanh"], "category": ["gemm", "elementwise"],
                      "class": ["library", "replaceable"], "time_us": [600.0, 400.0], "count": [1, 1]})
    b = breakdown_from_tables(k, "cpu_op_time", n_steps=1)
    cfg = WorkloadConfig("gpt2", "train", 1, "fp32", "cpu", seq_len=32)
    m = Measurement(1, 1, 1, 1)
    steps = pd.DataFrame({"repeat": [0], "step": [0], "time_ms": [1.0], "profiled": [False]})
    for host, want in (([0.7, 0.5, 0.6], 0.6), (None, None)):
        keys = run_keys(get_workload("gpt2"), cfg, b, [b], [1.0], 1.0, host)
        assert keys.get("host_time_ms") == want
        folder = tmp_path / f"run-{want}"
        write_run(folder, b, keys, steps, {**manifest(cfg, m), "measurement": vars(m)})
        assert load_run(folder).host_time_ms == want
        printed = format_profile(ProfileResult(b, keys, folder, {"measurement": vars(m), "gpu": None}), "cpu")
        assert ("its CPU returns after 0.60 ms (median, from an idle GPU)" in printed) == (want is not None)


def test_host_times_are_put_at_the_runs_step_speed() -> None:
    """Host steps run right after a chunk of timed steps, at the host speed those ran at: a chunk whose steps took
    2 ms against the run's 1 ms read its host times on a host twice as slow, so they count at half."""
    from addressable.capture.measure import at_step_speed

    got = at_step_speed([[1.8, 2.2], [0.9, 1.1]], [2.0, 1.0], 1.0)
    assert got == pytest.approx([0.9, 1.1, 0.9, 1.1])
    assert at_step_speed([[1.0]], [0.0], 1.0) == []  # a chunk with no step time says nothing
    with pytest.raises(ValueError):
        at_step_speed([[1.0], [1.0]], [1.0], 1.0)  # one median step per chunk of host times


def test_host_steps_are_spread_through_the_timed_steps() -> None:
    """A slow host mode lasts seconds, so host steps bunched after a repeat can all land in one (gpu/
    host_sample_noise.py): each of HOST_STEPS chunks of the timed steps is followed by one host step, read against
    that chunk's median step; fewer timed steps than host steps give one each, and none asked gives none."""
    from addressable.capture.measure import host_chunks, timed_with_hosts

    assert [c.tolist() for c in host_chunks(10, 4)] == [[0, 1, 2], [3, 4, 5], [6, 7], [8, 9]]
    assert [c.tolist() for c in host_chunks(2, 4)] == [[0], [1]] and host_chunks(5, 0) == []
    ran: list[str] = []
    slow = iter([1.0] * 3 + [3.0] * 3 + [1.0] * 4)  # the second chunk's steps on a host 3x as slow

    def step() -> None:
        time.sleep(next(slow) / 1e3)
        ran.append("s")

    def host() -> float:
        ran.append("h")
        return 0.5 * len(ran)
    times, hosts, refs = timed_with_hosts(step, 10, False, host, 4)
    assert "".join(ran) == "sssh" + "sssh" + "ssh" + "ssh"
    assert len(times) == 10 and [len(h) for h in hosts] == [1, 1, 1, 1]
    assert refs[1] > 2 * refs[0] and refs[1] > 2 * refs[2]  # each host step has its own chunk's speed
    assert timed_with_hosts(step, 0, False, host, 4) == ([], [], [])


def test_host_steps_run_between_the_gpus_timed_steps_after_it_drains(monkeypatch: pytest.MonkeyPatch) -> None:
    """On the GPU path (its events and synchronize stood in for here, as this machine has no GPU): each host step
    (`host_times`, which drains the GPU itself) runs right after its chunk's last recorded step, and every timed
    step keeps its two events."""
    from addressable.capture import measure

    log: list[str] = []

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            self.t = 0.0

        def record(self) -> None:
            log.append("r")

        def elapsed_time(self, end: Event) -> float:
            return 2.0
    monkeypatch.setattr(measure.torch.cuda, "Event", Event)
    monkeypatch.setattr(measure.torch.cuda, "synchronize", lambda: log.append("y"))
    times, hosts, refs = measure.timed_with_hosts(lambda: log.append("s"), 4, True, lambda: log.append("h") or 1.0, 2)
    assert (times, hosts, refs) == ([2.0] * 4, [[1.0], [1.0]], [2.0, 2.0])
    # drain, two timed steps (each between its events), a host step, two more, drain, a host step, drain
    assert "".join(log).replace("rsr", "S") == "ySShSSyhy"
