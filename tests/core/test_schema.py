"""Format versions (addressable/core/schema.py): every format says its schema_version; readers refuse a
version they do not know with one line, and read files from before versioning."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from addressable.classify.breakdown import classify_trace
from addressable.classify.taxonomy import DEFAULT_TAXONOMY, load_taxonomy
from addressable.cli import main
from addressable.core.errors import AddressableError
from addressable.core.schema import KEY, VERSIONS, check_version
from addressable.runs.folder import load_run
from addressable.trace.reader import trace_format

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "results" / "h200"
OLD_RUN = H200 / "resnet50-train-b64-bf16-cuda"  # written before formats had versions
TRACE = ROOT / "tests" / "data" / "resnet50_train.json.gz"


def test_shipped_formats_carry_their_version() -> None:
    assert yaml.safe_load(DEFAULT_TAXONOMY.read_text())[KEY] == VERSIONS["taxonomy"]
    assert trace_format()[KEY] == VERSIONS["trace_format"]
    assert classify_trace(TRACE).to_dict()[KEY] == VERSIONS["breakdown"]


@pytest.mark.parametrize("doc, version", [({}, 1), ({KEY: 1}, 1), ([], 1)])
def test_known_or_missing_version(doc: object, version: int) -> None:
    assert check_version(doc, "breakdown", "x") == version


@pytest.mark.parametrize("bad", [2, 0, "1", True, None])
def test_unknown_version_is_one_line(bad: object) -> None:
    with pytest.raises(AddressableError, match=r"^x: breakdown schema_version .* is not one this addressable reads"):
        check_version({KEY: bad}, "breakdown", "x")


def test_runs_from_before_versioning_stay_readable() -> None:
    assert KEY not in json.loads((OLD_RUN / "breakdown.json").read_text())
    assert KEY not in json.loads((OLD_RUN / "manifest.json").read_text())
    assert load_run(OLD_RUN).info["workload"] == "resnet50"


@pytest.mark.parametrize("file", ["breakdown.json", "manifest.json"])
def test_a_run_of_a_newer_format_is_refused(tmp_path: Path, file: str) -> None:
    run = tmp_path / "run"
    shutil.copytree(OLD_RUN, run)
    doc = json.loads((run / file).read_text())
    (run / file).write_text(json.dumps({**doc, KEY: 99}))
    with pytest.raises(AddressableError, match=f"{file}: .* schema_version 99"):
        load_run(run)
    res = CliRunner().invoke(main, ["project", "--speedups", str(ROOT / "examples" / "wins.csv"), "--runs", str(run)])
    assert res.exit_code == 2 and res.output.startswith("error: ") and res.output.count("\n") == 1, res.output


def test_a_taxonomy_of_a_newer_format_is_refused(tmp_path: Path) -> None:
    doc = yaml.safe_load(DEFAULT_TAXONOMY.read_text())
    f = tmp_path / "tax.yaml"
    f.write_text(yaml.safe_dump({**doc, KEY: 2}))
    with pytest.raises(AddressableError, match="taxonomy schema_version 2"):
        load_taxonomy(f)
    res = CliRunner().invoke(main, ["taxonomy", str(f)])
    assert res.exit_code == 2 and res.output.count("\n") == 1, res.output
    f.write_text(yaml.safe_dump({k: v for k, v in doc.items() if k != KEY}))  # before versioning
    assert load_taxonomy(f).classes == load_taxonomy().classes
