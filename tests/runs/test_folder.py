"""The run folder's one reader and writer (addressable/runs/folder.py): the files other stages used to read or
patch themselves (breakdown.json's roofline.ncu, kernels.csv for DLRM-Bench) go through it, version-checked."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from addressable.classify.breakdown import classify_trace
from addressable.core.errors import AddressableError
from addressable.core.schema import KEY
from addressable.runs.folder import (
    NCU_CHECK_FILE,
    NCU_RAW_FILE,
    load_run,
    read_ncu_raw,
    read_run_keys,
    write_breakdown,
    write_ncu_check,
)

TRACE = Path(__file__).resolve().parents[1] / "data" / "resnet50_train.json.gz"
KERNELS = pd.DataFrame({"name": ["k"], "status": ["within"]})


@pytest.fixture(scope="module")
def breakdown():
    return classify_trace(TRACE)


def test_write_ncu_check_records_the_check_in_the_roofline(tmp_path: Path, breakdown) -> None:
    write_breakdown(breakdown, tmp_path, extra={"roofline": {"ceiling_kernel_roofline": 1.5}})
    before = read_run_keys(tmp_path)
    assert read_ncu_raw(tmp_path) is None
    write_ncu_check(tmp_path, '"ID","Kernel Name"\n', KERNELS, {"top": 10, "within": 3})
    assert read_ncu_raw(tmp_path) == '"ID","Kernel Name"\n'
    assert pd.read_csv(tmp_path / NCU_CHECK_FILE).to_dict(orient="records") == [{"name": "k", "status": "within"}]
    after = read_run_keys(tmp_path)
    assert after["roofline"] == {"ceiling_kernel_roofline": 1.5, "ncu": {"top": 10, "within": 3}}
    assert {k: v for k, v in after.items() if k != "roofline"} == {k: v for k, v in before.items() if k != "roofline"}
    assert load_run(tmp_path).info["roofline"]["ncu"]["top"] == 10


def test_write_ncu_check_leaves_a_breakdown_without_roofline_alone(tmp_path: Path, breakdown) -> None:
    write_breakdown(breakdown, tmp_path)
    text = (tmp_path / "breakdown.json").read_text()
    write_ncu_check(tmp_path, "raw", KERNELS, {"top": 10})
    assert (tmp_path / "breakdown.json").read_text() == text and (tmp_path / NCU_RAW_FILE).is_file()


def test_write_ncu_check_refuses_an_unknown_breakdown_version_and_writes_nothing(tmp_path: Path, breakdown) -> None:
    write_breakdown(breakdown, tmp_path, extra={"roofline": {}})
    doc = json.loads((tmp_path / "breakdown.json").read_text())
    (tmp_path / "breakdown.json").write_text(json.dumps({**doc, KEY: 99}))
    with pytest.raises(AddressableError, match="schema_version 99"):
        write_ncu_check(tmp_path, "raw", KERNELS, {"top": 10})
    assert not (tmp_path / NCU_RAW_FILE).exists() and not (tmp_path / NCU_CHECK_FILE).exists()
    assert "ncu" not in json.loads((tmp_path / "breakdown.json").read_text())["roofline"]


def test_read_run_keys(tmp_path: Path) -> None:
    assert read_run_keys(tmp_path, required=False) == {}
    with pytest.raises(AddressableError, match=r"no breakdown\.json in"):
        read_run_keys(tmp_path)
    (tmp_path / "breakdown.json").write_text("[1, 2]")
    with pytest.raises(AddressableError, match="is not a JSON object"):
        read_run_keys(tmp_path, required=False)
    (tmp_path / "breakdown.json").write_text(json.dumps({KEY: 99}))
    with pytest.raises(AddressableError, match="schema_version 99"):
        read_run_keys(tmp_path, required=False)
