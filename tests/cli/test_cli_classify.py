"""CliRunner tests for `addressable classify` and `addressable taxonomy`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from addressable.cli import main


def run(*args: str):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_classify_prints_table(h200_traces) -> None:
    r = run("classify", h200_traces["resnet50_train"])
    assert r.exit_code == 0, r.output
    assert "Addressable fraction" in r.output and "normalization" in r.output and "conv" in r.output


def test_classify_json_keys(h200_traces) -> None:
    r = run("classify", h200_traces["llama8b4l_infer"], "--json")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert 0 < doc["addressable_fraction"] < 1
    assert 0 <= doc["unclassified_fraction"] < 0.005
    assert doc["total_kernel_time_us"] > 0
    cats = {c["category"]: c for c in doc["categories"]}
    assert {"category", "class", "time_us", "share"} <= set(cats["gemm"])
    assert cats["gemm"]["class"] == "library"
    assert sum(c["share"] for c in doc["categories"]) == pytest.approx(1.0)
    replaceable = sum(c["time_us"] for c in doc["categories"] if c["class"] == "replaceable")
    assert doc["addressable_fraction"] == pytest.approx(replaceable / doc["total_kernel_time_us"])


def test_classify_class_override_and_out(h200_traces, tmp_path) -> None:
    base = json.loads(run("classify", h200_traces["resnet50_train"], "--json").output)
    r = run("classify", h200_traces["resnet50_train"], "--json", "--class", "normalization=library",
            "--out", tmp_path / "out")
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    norm = next(c["share"] for c in base["categories"] if c["category"] == "normalization")
    assert doc["addressable_fraction"] == pytest.approx(base["addressable_fraction"] - norm)
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"breakdown.json", "categories.csv", "kernels.csv"}


@pytest.mark.parametrize("args, message", [
    (["--class", "nope=library"], "unknown category 'nope'"),
    (["--class", "gemm"], "CATEGORY=library|replaceable"),
    (["--class", "gemm=fast"], "library or replaceable"),
])
def test_classify_bad_options(h200_traces, args, message) -> None:
    r = run("classify", h200_traces["resnet50_train"], *args)
    assert r.exit_code == 2
    assert message in r.output and "Traceback" not in r.output
    assert len(r.output.strip().splitlines()) == 1


def test_classify_bad_taxonomy(h200_traces, tmp_path) -> None:
    bad = tmp_path / "t.yaml"
    bad.write_text("categories: {a: {class: library}}\nkernel_rules:\n  - {category: a, patterns: ['[x']}\n")
    r = run("classify", h200_traces["resnet50_train"], "--taxonomy", bad)
    assert r.exit_code == 2 and "invalid regex" in r.output


def test_classify_missing_file(tmp_path) -> None:
    r = run("classify", tmp_path / "nope.json")
    assert r.exit_code == 2 and "no such trace file" in r.output


def test_taxonomy_command_lists_categories() -> None:
    r = run("taxonomy")
    assert r.exit_code == 0 and "gemm" in r.output and "replaceable" in r.output


def _cpu_trace(path):
    """A CPU-only trace: two CPU ops, no GPU kernels."""
    ev = [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": 10, "args": {}}
          for name, ts in (("aten::mm", 0), ("aten::softmax", 20))]
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


def test_basis_wording_says_why_the_basis_is_cpu(h200_traces, tmp_path) -> None:
    """issue 26: `classify GPU_TRACE --basis cpu` said "(no GPU work in trace)"."""
    gpu = run("classify", h200_traces["resnet50_train"], "--basis", "cpu")
    assert gpu.exit_code == 0, gpu.output
    assert "of CPU-op self time (--basis cpu)" in gpu.output and "no GPU work" not in gpu.output
    cpu = run("classify", _cpu_trace(tmp_path / "cpu.json"))
    assert "of CPU-op self time (no GPU work in trace)" in cpu.output


def test_exposed_basis_on_a_cpu_trace_says_it_changes_nothing(tmp_path) -> None:
    """issue 26: `--basis exposed` on a CPU trace changed nothing and said nothing."""
    trace = _cpu_trace(tmp_path / "cpu.json")
    plain, exposed = run("classify", trace), run("classify", trace, "--basis", "exposed")
    assert exposed.exit_code == 0
    assert exposed.stdout == plain.stdout
    assert exposed.stderr.startswith("warning: --basis exposed splits the time of kernels that overlap")
    assert "no GPU kernels" in exposed.stderr and plain.stderr == ""
