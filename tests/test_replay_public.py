"""scripts/replay_public.py: the replay's invariants per trace (the public traces are not in the repository; this
checks the script on a trace the project recorded itself)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("replay_public", ROOT / "scripts" / "replay_public.py")
assert _spec is not None and _spec.loader is not None
rp = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rp)


def test_a_recorded_trace_keeps_every_invariant() -> None:
    row = rp.check(str(ROOT / "tests/data/side_stream_waits_h100_torch211.json.gz"))
    assert row["not_replayable"] == "" and row["sync_records"] == 6  # 3 stream waits, 3 context syncs
    assert row["cross_stream_waits"] == 3 and row["categories"] >= 2
    for name in ("residual", "noop", "cpu_scale", "faster", "much_faster", "slower", "one_kernel"):
        assert row[name] == pytest.approx(0, abs=rp.TOL), name


def test_a_trace_that_cannot_be_replayed_says_why(tmp_path: Path) -> None:
    path = tmp_path / "cpu_only.json"
    path.write_text('{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, '
                    '"ts": 0, "dur": 5}]}')
    row = rp.check(str(path))
    assert row["not_replayable"] == "no GPU work in the trace" and "residual" not in row
