"""A trace streamed in small pieces gives exactly the events table and breakdown of one read whole."""

from __future__ import annotations

import gzip
import importlib.util
import sys
from pathlib import Path

import orjson
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from addressable.classify.breakdown import Breakdown, breakdown_of_trace
from addressable.classify.taxonomy import load_taxonomy
from addressable.trace.reader import iter_event_chunks, load_trace

WHOLE = 1 << 30  # one block holds the whole file


def _synth():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "synth.py"
    spec = importlib.util.spec_from_file_location("addressable_bench_synth", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Kineto-layout synthetic traces (plain and gzipped), a one-line (compact) one, and a compact
    gzipped one whose kernel names hold '}, {' so that some candidate boundaries fall inside strings."""
    d = tmp_path_factory.mktemp("streaming")
    synth = _synth()
    out = {"kineto": synth.write_trace(d / "k.json", 6000, kernels_per_step=300).path,
           "kineto_gz": synth.write_trace(d / "k.json.gz", 6000, kernels_per_step=300).path,
           "small": synth.write_trace(d / "s.json", 1500, kernels_per_step=100).path}
    doc = orjson.loads(out["small"].read_bytes())
    (d / "compact.json").write_bytes(orjson.dumps(doc))
    out["compact"] = d / "compact.json"
    for e in doc["traceEvents"][::7]:
        if e.get("cat") == "kernel":
            e["name"] = e["name"] + '}, {"ph": "X"}, {'
    (d / "tricky.json.gz").write_bytes(gzip.compress(orjson.dumps(doc)))
    out["tricky"] = d / "tricky.json.gz"
    return out


@pytest.fixture(scope="module")
def whole(traces: dict[str, Path]) -> dict[str, tuple[pd.DataFrame, Breakdown]]:
    tax = load_taxonomy()
    return {k: _load(p, WHOLE, tax) for k, p in traces.items()}


def _load(path: Path, chunk_bytes: int, tax=None, schema: bool = True,
          native: bool = True) -> tuple[pd.DataFrame, Breakdown]:
    t = load_trace(path, chunk_bytes=chunk_bytes, schema=schema, native=native)
    return t.events, breakdown_of_trace(t, tax or load_taxonomy())


def _assert_same(a: tuple[pd.DataFrame, Breakdown], b: tuple[pd.DataFrame, Breakdown]) -> None:
    pd.testing.assert_frame_equal(a[0], b[0])
    pd.testing.assert_frame_equal(a[1].categories, b[1].categories)
    pd.testing.assert_frame_equal(a[1].kernels, b[1].kernels)
    assert (a[1].total_time_us, a[1].n_steps, a[1].basis) == (b[1].total_time_us, b[1].n_steps, b[1].basis)


def test_whole_loads_are_sane(whole) -> None:
    events, b = whole["kineto"]
    assert b.n_steps and b.n_steps >= 2 and 0 < b.addressable_fraction < 1
    assert (events["kind"] == "gpu").sum() > 500 and events["op"].notna().sum() > 500
    # the same events, however they are laid out
    _assert_same(whole["small"], whole["compact"])
    assert len(whole["tricky"][0]) == len(whole["small"][0])


@pytest.mark.parametrize("chunk_bytes", [1 << 10, 4 << 10, 64 << 10])
@pytest.mark.parametrize("name", ["kineto", "kineto_gz", "compact", "tricky"])
def test_streamed_equals_whole(traces, whole, name: str, chunk_bytes: int) -> None:
    _assert_same(_load(traces[name], chunk_bytes), whole[name])


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunk_bytes=st.integers(1, 1 << 17), name=st.sampled_from(["small", "compact", "tricky"]))
def test_any_chunk_size(traces, whole, chunk_bytes: int, name: str) -> None:
    _assert_same(_load(traces[name], chunk_bytes), whole[name])


@pytest.mark.parametrize("chunk_bytes", [100, 4 << 10])
def test_iter_event_chunks_in_pieces(traces, chunk_bytes: int) -> None:
    *pieces, meta = iter_event_chunks(traces["small"], chunk_bytes)
    doc = orjson.loads(traces["small"].read_bytes())
    assert len(pieces) > 10
    assert [e for p in pieces for e in p] == doc["traceEvents"]
    assert meta == {k: v for k, v in doc.items() if k != "traceEvents"}


@pytest.mark.parametrize("name", ["kineto_gz", "tricky"])
def test_schema_decoding_equals_orjson(traces, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Blocks decoded against the trace_format schema (msgspec) give the table that orjson's give."""
    calls = []
    loads = orjson.loads
    monkeypatch.setattr(orjson, "loads", lambda doc: calls.append(len(doc)) or loads(doc))
    typed = _load(traces[name], 4 << 10, native=False)
    n_typed = len(calls)
    _assert_same(typed, _load(traces[name], 4 << 10, schema=False, native=False))
    if name == "kineto_gz":  # newline boundaries: every block but the head and tail skips orjson
        assert n_typed <= 3 < len(calls) - n_typed


def test_schema_decoding_odd_values(tmp_path: Path) -> None:
    """Odd but valid values (a list as category or name, a string as args, a non-object event) in
    Kineto's layout: the schema path and the orjson path agree."""
    synth = _synth()
    doc = orjson.loads(synth.write_trace(tmp_path / "s.json", 1500, kernels_per_step=100).path.read_bytes())
    ev = doc["traceEvents"]
    ev[3] = {**ev[3], "args": "not an object"}
    ev[5] = {**ev[5], "cat": ["kernel"]}
    ev[7] = {**ev[7], "name": ["a", "list"], "dur": "12"}
    ev[600] = 42  # a block that does not fit the schema: orjson parses it
    for i, name in enumerate(["nn.Module: Linear_0", "torch/nn/modules/module.py(1750): _call_impl"] * 50):
        ev.insert(20 + 7 * i, {"ph": "X", "cat": "python_function", "name": name, "pid": 1, "tid": 1,
                               "ts": ev[20]["ts"], "dur": 1.0, "args": {"Python id": i}})  # name_filters
    path = tmp_path / "odd.json"
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    _assert_same(_load(path, 4 << 10, native=False), _load(path, 4 << 10, schema=False, native=False))
    typed, plain = (load_trace(path, 4 << 10, schema=s, runtime=True, native=False).events for s in (True, False))
    pd.testing.assert_frame_equal(typed, plain)
    names = typed["name"].astype(str)
    assert (names == "nn.Module: Linear_0").sum() == 50 and not names.str.contains("_call_impl").any()
