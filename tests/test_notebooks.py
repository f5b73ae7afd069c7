"""The notebooks run top to bottom against the small fixture runs, so they never rot."""

from __future__ import annotations

from pathlib import Path

import pytest

# test dependencies, installed by the README's command; the GPU image lacks them, and there this file skips
nbformat = pytest.importorskip("nbformat", reason="nbformat not installed")
NotebookClient = pytest.importorskip("nbclient", reason="nbclient not installed").NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
PLOT_RUNS = Path(__file__).resolve().parent / "fixtures" / "plot_runs"
WINS = ROOT / "examples" / "wins.csv"


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs_on_fixture_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADDRESSABLE_RUNS", str(PLOT_RUNS))
    monkeypatch.setenv("ADDRESSABLE_FIGURES", str(tmp_path / "figures"))
    if WINS.is_file():
        monkeypatch.setenv("ADDRESSABLE_WINS", str(WINS))
    nb = nbformat.read(path, as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "commit notebooks without outputs"
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    if path.name == "workloads.ipynb":
        images = [o for o in outputs if "image/png" in o.get("data", {})]
        assert len(images) == 4  # breakdown, amdahl, sweep, top-kernels
        tables = [o for o in outputs if "text/html" in o.get("data", {})]
        assert any("addressable (kernel)" in o["data"]["text/html"] for o in tables)
        assert sorted(p.name for p in (tmp_path / "figures").iterdir()) == [
            "amdahl.pdf", "breakdown.pdf", "sweep.pdf", "top-kernels.pdf"]
