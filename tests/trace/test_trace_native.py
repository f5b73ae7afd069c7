"""The C scanner (addressable/trace/_kineto.c) gives exactly the events table of the Python loader.

Every test loads the same file both ways, load_trace(native=True) and load_trace(native=False),
and compares the tables (or, for bad input, the errors). Where the scanner meets an event it does
not read itself, it hands the rest of the block to the Python path: the tests check both that
it agrees and that plain Kineto traces never need that hand-over.
"""

from __future__ import annotations

import gzip
import importlib.util
import re
import sys
from pathlib import Path

import orjson
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import addressable.trace.reader as trace_module
from addressable.core.errors import AddressableError
from addressable.trace.reader import load_trace

pytestmark = pytest.mark.skipif(trace_module._kineto is None,
                                reason="without the C scanner: setup.py builds it where a C compiler is")

DATA = Path(__file__).resolve().parents[1] / "data"


def _synth():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "synth.py"
    spec = importlib.util.spec_from_file_location("addressable_bench_synth", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _outcome(path: Path, native: bool, chunk_bytes: int = 4 << 10, runtime: bool = True):
    try:
        t = load_trace(path, chunk_bytes, native=native, runtime=runtime)
    except AddressableError as e:
        return "error", re.sub(r"near byte \d+", "near byte N", str(e))
    return "table", t.events, t.metadata


def assert_same_both_ways(path: Path, chunk_bytes: int = 4 << 10, runtime: bool = True) -> None:
    native, python = _outcome(path, True, chunk_bytes, runtime), _outcome(path, False, chunk_bytes, runtime)
    assert native[0] == python[0], (native[1:], python[1:])
    if native[0] == "error":
        assert native[1] == python[1]
    else:
        pd.testing.assert_frame_equal(native[1], python[1])
        assert native[2] == python[2]


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("native")
    synth = _synth()
    pretty = synth.write_trace(d / "k.json", 4000, kernels_per_step=200).path
    doc = orjson.loads(pretty.read_bytes())
    (d / "compact.json.gz").write_bytes(gzip.compress(orjson.dumps(doc)))
    return {"pretty": pretty, "compact": d / "compact.json.gz"}


@pytest.fixture
def no_fallback(monkeypatch: pytest.MonkeyPatch) -> list:
    """Calls of the Python block parser (_cut) while the test runs."""
    calls: list = []
    cut = trace_module._cut
    monkeypatch.setattr(trace_module, "_cut", lambda *a, **k: calls.append(1) or cut(*a, **k))
    return calls


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.json.gz")))
@pytest.mark.parametrize("runtime", [False, True])
def test_real_traces(name: str, runtime: bool, no_fallback: list) -> None:
    assert_same_both_ways(DATA / name, 1 << 20, runtime)
    no_fallback.clear()
    load_trace(DATA / name, native=True)
    assert not no_fallback, "a real Kineto trace went to the Python path"


@pytest.mark.parametrize("chunk_bytes", [100, 4 << 10, 1 << 20])
@pytest.mark.parametrize("name", ["pretty", "compact"])
def test_synthetic_traces_any_block_size(synthetic, name: str, chunk_bytes: int, no_fallback: list) -> None:
    events = load_trace(synthetic[name], chunk_bytes, native=True).events
    assert not no_fallback
    pd.testing.assert_frame_equal(events, load_trace(synthetic[name], chunk_bytes, native=False).events)


def _odd_trace(tmp_path: Path, edit) -> Path:
    """A small synthetic trace with edit(raw JSON text) applied."""
    text = _synth().write_trace(tmp_path / "base.json", 300, kernels_per_step=50).path.read_text()  # Kineto's layout
    path = tmp_path / "odd.json"
    path.write_text(edit(text), encoding="utf-8")
    return path


def _nth(pattern: str, replace: str, n: int = 3):
    """Replace the nth match of pattern (a regex on the raw text)."""
    def edit(text: str) -> str:
        m = list(re.finditer(pattern, text))[n]
        return text[: m.start()] + m.expand(replace) + text[m.end():]
    return edit


ODD = {  # events the scanner hands over, and values it must read exactly as Python does
    "escaped key": _nth(r'"cat": "kernel"', r'"c\\u0061t": "kernel"'),
    "escaped phase": _nth(r'"ph": "X", "cat": "kernel"', r'"ph": "\\u0058", "cat": "kernel"'),
    "escaped category": _nth(r'"cat": "kernel"', r'"cat": "k\\u0065rnel"'),
    "string ts": _nth(r'"ts": ([0-9.]+)', r'"ts": "\1"'),
    "bool pid": _nth(r'"pid": 0', r'"pid": true'),
    "list dur": _nth(r'"dur": ([0-9.]+)', r'"dur": [\1]'),
    "object stream": _nth(r'"stream": 7', r'"stream": {"a": 1}'),
    "duplicate category": _nth(r'"cat": "kernel"', r'"cat": "cpu_op", "cat": "kernel"'),
    "duplicate args": _nth(r'"args": \{', r'"args": {}, "args": {'),
    "duplicate unread key": _nth(r'"args": \{', r'"queued": 1, "queued": 2, "args": {'),
    "surrogate pair in a name": _nth(r'"name": "aten::add', r'"name": "\\ud83d\\ude00 aten::add'),
    "escapes in a name": _nth(r'"name": "aten::add', r'"name": "a\\"b\\\\c\\n\\t\\u00e9\\/ aten::add'),
    "utf-8 in a name": _nth(r'"name": "aten::add', '"name": "é中😀 aten::add'),
    "a list as name": _nth(r'"name": "aten::add"', r'"name": ["aten::add"]'),
    "a number as name": _nth(r'"name": "aten::add"', r'"name": 12'),
    "null name": _nth(r'"name": "aten::add"', r'"name": null'),
    "no name": _nth(r'"name": "aten::add", ', r''),
    "deep nesting": _nth(r'"args": \{', '"deep": ' + "[" * 300 + "]" * 300 + r', "args": {'),
    "1e999 unread": _nth(r'"args": \{', r'"big": 1e999, "args": {'),
    "1e999 in ts": _nth(r'"ts": ([0-9.]+)', r'"ts": 1e999'),
    "a non-object event": _nth(r'\n  \{\n', r'\n  42, [1, {"a": null}], "x", true, null,\n  {\n', 5),
    "args not an object": _nth(r'"args": \{', r'"args": "text", "args2": {'),
    "grid as a number": _nth(r'"grid": \[[^\]]*\]', r'"grid": 5'),
    "grid with floats": _nth(r'"grid": \[[^\]]*\]', r'"grid": [1.5, 2e3, -0.0, 1E+2]'),
    "big ints": _nth(r'"correlation": \d+', r'"correlation": 123456789012345678901234'),
    "ints near 2**53": _nth(r'"correlation": \d+', r'"correlation": 9007199254740993'),
    "int beyond int64": _nth(r'"External id": \d+', r'"External id": -9223372036854775809'),
    "-2**63 in an int column": _nth(r'"External id": \d+', r'"External id": -9223372036854775808'),
    "2**63 - 1 in an int column": _nth(r'"External id": \d+', r'"External id": 9223372036854775807'),
    "16 digits in an int column": _nth(r'"correlation": \d+', r'"correlation": 1234567890123456'),
    "float in an int column": _nth(r'"correlation": \d+', r'"correlation": 3.0'),
    "fraction in an int column": _nth(r'"correlation": \d+', r'"correlation": 3.5'),
    "exponent ts": _nth(r'"ts": ([0-9.]+)', r'"ts": 1.5e3'),
    "negative zero dur": _nth(r'"dur": ([0-9.]+)', r'"dur": -0.0'),
    "long mantissa": _nth(r'"ts": ([0-9.]+)', r'"ts": 123456789012345678901234567890.123456789'),
    "tiny": _nth(r'"dur": ([0-9.]+)', r'"dur": 4.9e-324'),
    "python_function rows": _nth(r'\n  \{\n', '\n  {"ph": "X", "cat": "python_function", "name": "nn.Module: A", "ts": 1, '
                                 '"dur": 1, "pid": 1, "tid": 1}, {"ph": "X", "cat": "python_function", "name": '
                                 '"f.py(1): g", "ts": 1, "dur": 1}, {"ph": "X", "cat": "python_function"},\n  {\n', 5),
    "whitespace everywhere": lambda text: text.replace(": ", " \t:\r\n ").replace(", ", " ,\n\t"),
    # bad JSON, which both must report the same way
    "missing comma": _nth(r'\}\,\n  \{', r'}\n  {', 7),
    "a digit for a comma": _nth(r'\}\,\n  \{', r'}4\n  {', 7),
    "trailing comma": lambda text: re.sub(r"\}\n  \]", "},\n  ]", text),
    "control character": _nth(r'"name": "aten::add', '"name": "\x01aten::add'),
    "bad escape": _nth(r'"name": "aten::add', r'"name": "\\q aten::add'),
    "lone surrogate": _nth(r'"name": "aten::add', r'"name": "\\ud800 aten::add'),
    "bad number": _nth(r'"dur": ([0-9.]+)', r'"dur": 01.5'),
    "NaN": _nth(r'"dur": ([0-9.]+)', r'"dur": NaN'),
    "truncated": lambda text: text[: len(text) // 2],
    "truncated after a comma": lambda text: text[: text.index("},", len(text) // 2) + 2],
}


@pytest.mark.parametrize("chunk_bytes", [1 << 10, 1 << 20])
@pytest.mark.parametrize("case", list(ODD))
def test_odd_values_and_bad_json(tmp_path: Path, case: str, chunk_bytes: int) -> None:
    assert_same_both_ways(_odd_trace(tmp_path, ODD[case]), chunk_bytes)


def _ts_trace(tmp_path: Path, numbers: list[str]) -> Path:
    events = ",".join(f'{{"ph": "X", "cat": "cpu_op", "name": "op{i}", "pid": 1, "tid": {n}, "ts": {n}, '
                      f'"dur": {n}, "args": {{"External id": {n}, "Sequence number": {n}}}}}'
                      for i, n in enumerate(numbers))
    path = tmp_path / "numbers.json"
    path.write_text(f'{{"traceEvents": [{events}]}}')
    return path


_DIGITS = st.text("0123456789", min_size=1, max_size=30).map(lambda s: s.lstrip("0") or "0")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(numbers=st.lists(st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(-(2**70), 2**70).map(str),
    st.tuples(st.booleans(), _DIGITS, _DIGITS, st.integers(-330, 330)).map(
        lambda t: f"{'-' if t[0] else ''}{t[1]}.{t[2]}e{t[3]}")), min_size=1, max_size=40))
def test_numbers_read_exactly(tmp_path: Path, numbers: list[str]) -> None:
    """Floats and ints, in every JSON spelling, to the bit (ts, dur, sequence) and as int columns."""
    assert_same_both_ways(_ts_trace(tmp_path, numbers))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(edits=st.lists(st.tuples(st.integers(0, 10**9), st.sampled_from(["set", "insert", "delete"]),
                                st.sampled_from(list(b'{}[]",:\\ \n0123456789.-eEtrufalsnu\x01\xff\xc3X'))),
                      min_size=1, max_size=3),
       chunk_bytes=st.sampled_from([1 << 10, 1 << 20]))
def test_corrupted_traces(tmp_path: Path, edits: list, chunk_bytes: int) -> None:
    """Random byte edits of a trace: both ways load the same table or fail with the same error."""
    def edit(text: str) -> str:
        data = bytearray(text.encode())
        for at, op, byte in edits:
            at %= len(data)
            if op == "set":
                data[at] = byte
            elif op == "insert":
                data[at:at] = bytes([byte])
            else:
                del data[at]
        return data.decode("latin-1")
    path = _odd_trace(tmp_path, lambda text: text)
    path.write_bytes(edit(path.read_text()).encode("latin-1"))
    assert_same_both_ways(path, chunk_bytes)


def test_scanner_arguments_are_checked() -> None:
    Scanner = trace_module._kineto.Scanner
    with pytest.raises(ValueError, match="column type"):
        Scanner([7], [], [], b"X", [], 0, 0)
    with pytest.raises(ValueError, match="column indices"):
        Scanner([2], [], [], b"X", [], 0, 3)
    with pytest.raises(ValueError, match="slot"):
        Scanner([2, 2], [(b"name", 5)], [], b"X", [], 0, 1)
    with pytest.raises(ValueError, match="parent"):
        Scanner([2, 2], [], [(b"args", -3)], b"X", [], 0, 1)
    s = Scanner([2, 2], [(b"name", 0), (b"cat", 1), (b"ph", -2)], [], b"X", [b"k"], 0, 1)
    with pytest.raises(ValueError, match="outside"):
        s.scan(b"[]", 5, False)
    assert s.scan(b'{"ph": "X", "cat": "k", "name": "a"}, {"cat": "k"}]', 0, False)[1:] == (
        trace_module._kineto.END, True)
    events, rows, (names, cats) = s.take()
    assert (events, rows, names[1], cats[1]) == (2, 1, [b'"a"'], [b'"k"'])
