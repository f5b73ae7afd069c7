"""classify_paths: the one library function under `addressable classify` (one trace, a job, --explain)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from addressable.classify.breakdown import classify_trace
from addressable.classify.paths import classify_paths
from addressable.core.errors import AddressableError
from addressable.report.text import format_breakdown, format_classified
from addressable.runs.folder import write_classified

DATA = Path(__file__).resolve().parents[1] / "data"
A, B = DATA / "pairs" / "two-stream-gelu.A.json.gz", DATA / "pairs" / "two-stream-gelu.B.json.gz"


def test_one_trace_a_job_and_explain_are_one_call(tmp_path: Path) -> None:
    one = classify_paths([str(A)])
    assert one.job is None and one.explained is None and not one.failed
    assert one.breakdown.to_dict() == classify_trace(A).to_dict()
    assert format_classified(one).startswith(format_breakdown(one.breakdown))
    assert write_classified(one, tmp_path / "one") == tmp_path / "one"
    assert json.loads((tmp_path / "one" / "breakdown.json").read_text())["source"] == str(A)
    job = classify_paths([str(A), str(B)], engine="serial")
    assert job.breakdown is None and [Path(r.file).name for r in job.job.ranks] == [A.name, B.name]
    assert any(m.startswith("warning: none of the 2 traces carries distributedInfo") for m in job.messages())
    assert "Wrote" in format_classified(job, wrote=write_classified(job, tmp_path / "job"))
    assert classify_paths([str(A)], jobs=2).job is not None  # an engine option: the job path
    ex = classify_paths([str(A)], explain_pattern="elementwise")
    assert len(ex.explained) and write_classified(ex, tmp_path / "ex") is None
    with pytest.raises(AddressableError, match="--explain takes one trace file"):
        classify_paths([str(A), str(B)], explain_pattern="elementwise")
    cpu = classify_paths([str(A)], basis="cpu")
    assert cpu.breakdown.basis == "cpu_op_time"
