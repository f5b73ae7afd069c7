"""`addressable coverage PATHS`: the unclassified share per trace, the worst unclassified kernels across traces
with their launching op and a rule that would claim them, and bad input as one line (issue 28)."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from addressable.classify.coverage import coverage, suggest_rule
from addressable.classify.taxonomy import load_taxonomy, parse_taxonomy
from addressable.cli import main

TAX = load_taxonomy()
DATA = Path(__file__).resolve().parents[1] / "data"


def _trace(path: Path, kernels: list[tuple[str, str, float]]) -> Path:
    """A small Kineto trace: each (kernel, launching op, dur) gets a cpu_op, a launch and a kernel."""
    events = []
    for i, (kernel, op, dur) in enumerate(kernels):
        events += [{"ph": "X", "cat": "cpu_op", "name": op, "ts": 100.0 * i, "dur": 50, "pid": 1, "tid": 1,
                    "args": {"External id": i + 1}},
                   {"ph": "X", "cat": "kernel", "name": kernel, "ts": 100.0 * i + 10, "dur": dur, "pid": 0, "tid": 7,
                    "args": {"External id": i + 1, "correlation": 1000 + i, "stream": 7, "device": 0}}]
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    return path


def _run(*args: str):
    return CliRunner().invoke(main, ["coverage", *args])


def test_shares_per_trace_and_the_worst_names_across_them(tmp_path: Path) -> None:
    _trace(tmp_path / "a" / "one.json.gz", [("nvjet_sm90_x", "aten::mm", 90.0),
                                            ("void acme::fx::fused_exchange<8>(int)", "acme::exchange", 10.0)])
    _trace(tmp_path / "a" / "deep" / "two.json.gz", [("nvjet_sm90_x", "aten::mm", 50.0),
                                                    ("mystery_v2_kernel", "aten::add", 50.0),
                                                    ("void acme::fx::fused_exchange<8>(int)", "acme::exchange", 5.0)])
    c = coverage([str(tmp_path / "a")])  # a folder is searched recursively
    shares = {Path(t).name: s for t, s in zip(c.traces["trace"], c.traces["unclassified_share"], strict=True)}
    assert shares == pytest.approx({"one.json.gz": 0.10, "two.json.gz": 55 / 105})
    top = c.unclassified
    assert list(top["name"]) == ["mystery_v2_kernel", "void acme::fx::fused_exchange<8>(int)"]  # worst share first
    acme = top.iloc[1]
    assert (acme["op"], acme["traces"], acme["time_us"]) == ("acme::exchange", 2, 15.0)
    assert acme["max_trace_share"] == pytest.approx(0.10)
    assert len(c.above(0.2)) == 1


def test_suggested_rules_name_the_namespace_or_the_stem_and_claim_the_kernel() -> None:
    rule = suggest_rule("void acme::fx::fused_exchange<8>(int)", "acme::exchange", TAX)
    assert rule.startswith("kernel_rules: - {category: CATEGORY, patterns: ['^acme::fx::']}")
    assert "launch_op_rules: - {category: CATEGORY, patterns: ['^acme::exchange$']}" in rule
    # aten's and generic namespaces give the stem, without digits, and no op rule for an aten op
    assert suggest_rule("void at::native::grid_thing_kernel_2<float>(int)", "aten::grid", TAX) == \
        "kernel_rules: - {category: CATEGORY, patterns: ['grid_thing_kernel']}"
    kernel_rule = yaml.safe_load(rule.split("; or ")[0].removeprefix("kernel_rules: ").replace("CATEGORY", "mine"))[0]
    mine = parse_taxonomy({"categories": {"mine": "replaceable"}, "kernel_rules": [kernel_rule]})
    assert mine.classify(["void acme::fx::other_kernel(int)"]).iloc[0] == "mine"  # the next kernel of that library


def test_cli_prints_the_table_and_json(tmp_path: Path) -> None:
    path = _trace(tmp_path / "t.json.gz", [("nvjet_sm90_x", "aten::mm", 98.0), ("odd_kernel", "aten::odd", 2.0)])
    r = _run(str(path))
    assert r.exit_code == 0, r.output
    assert "1 trace(s) read, 0 not; 1 above 1% unclassified" in r.output
    assert re.search(r"2\.00%\s+0\.0%\s+2\s+.*t\.json\.gz", r.output)
    assert "odd_kernel  [launched by aten::odd]" in r.output and "rule: kernel_rules:" in r.output
    j = json.loads(_run(str(path), "--json").output)
    assert j["traces"][0]["unclassified_share"] == pytest.approx(0.02)
    assert j["unclassified"][0]["name"] == "odd_kernel"


def test_an_unreadable_trace_among_others_is_a_warning_and_a_row(tmp_path: Path) -> None:
    _trace(tmp_path / "good.json.gz", [("nvjet_sm90_x", "aten::mm", 1.0)])
    (tmp_path / "notes.json").write_text(json.dumps({"hello": 1}))
    r = CliRunner().invoke(main, ["coverage", str(tmp_path)])
    assert r.exit_code == 0
    assert "warning:" in r.output and "notes.json" in r.output and "1 trace(s) read, 1 not" in r.output


@pytest.mark.parametrize("setup, message", [
    (lambda p: str(p / "missing.json.gz"), "no such trace file or folder"),
    (lambda p: (p / "x.json").write_text("{\"a\": 1}") and str(p / "x.json"), "not a trace"),
    (lambda p: (p / "empty").mkdir() or str(p / "empty"), "no trace files"),
    (lambda p: [(p / f"{i}.json").write_text("[]") for i in range(2)] and str(p), "none of the 2 traces could be read"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, setup, message: str) -> None:
    r = _run(setup(tmp_path))
    assert r.exit_code == 2, r.output
    lines = r.output.strip().splitlines()
    assert lines[-1].startswith("error:") and message in lines[-1] and "Traceback" not in r.output


def test_the_shipped_h200_traces_are_fully_covered() -> None:
    c = coverage([str(DATA / "resnet50_train.json.gz"), str(DATA / "llama8b4l_infer.json.gz")])
    assert (c.traces["unclassified_share"] == 0).all() and c.unclassified.empty
    resnet = c.traces.iloc[0]
    assert resnet["by_launch_op_share"] == pytest.approx(0.079, abs=0.002)  # the GEMMs cuDNN runs inside convolutions
