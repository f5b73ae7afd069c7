"""Shared fixtures: the real H200 traces, and a marker that skips GPU tests without a GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED_TRACES = ROOT.parent / "shared" / "traces" / "h200"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def h200_traces() -> dict[str, Path]:
    """The real H200 traces from ../shared/traces/h200 (skips if the folder is absent)."""
    traces = {p.name.removesuffix(".json.gz"): p for p in sorted(SHARED_TRACES.glob("*.json.gz"))}
    if not traces:
        pytest.skip(f"no real traces under {SHARED_TRACES}")
    return traces
