"""Shared fixtures: the real H200 traces (tests/data), and a marker that skips GPU tests without a GPU."""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
REAL_TRACES = Path(__file__).resolve().parent / "data"
FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _has_cuda() -> bool:
    """Whether a CUDA GPU is usable (the torch import here happens before any test imports triton)."""
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


# Without a GPU, Triton kernels can only run in its interpreter, and the interpreter is chosen when
# triton is first imported: set it before any test module imports triton.
if not _has_cuda():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--update-references", action="store_true",
                     help="Rewrite the pinned reference outputs in tests/references/ from the current code "
                          "(on purpose: review the diff before committing it).")


@pytest.fixture
def update_references(request: pytest.FixtureRequest) -> bool:
    """Whether this run rewrites the pinned reference outputs (--update-references)."""
    return bool(request.config.getoption("--update-references"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _gpu_memory_given_back(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a GPU test, this process's cached GPU memory goes back to the driver: the next test's own processes
    (verify's checker and candidate, ncu's measured run) need it. On an H100 (6 Dec 2026) every matmul verify run
    after a test that drives a model out of memory failed; with this fixture, in the same order on an H100, they
    passed."""
    yield
    if "gpu" in request.keywords and "torch" in sys.modules and sys.modules["torch"].cuda.is_initialized():
        gc.collect()
        sys.modules["torch"].cuda.empty_cache()


@pytest.fixture(scope="session")
def h200_traces() -> dict[str, Path]:
    """The real H200 traces committed in tests/data (copied from the project's shared traces)."""
    return {p.name.removesuffix(".json.gz"): p for p in sorted(REAL_TRACES.glob("*.json.gz"))}


@pytest.fixture(scope="session")
def assert_kineto_schema(h200_traces: dict[str, Path]):
    """A check that an events table has the Kineto reader's columns and dtypes (a real H200 trace's), for
    the readers of other formats."""
    import pandas as pd

    from addressable.trace.reader import load_trace

    kineto = load_trace(h200_traces["resnet50_train"]).events

    def check(events: pd.DataFrame) -> None:
        assert list(events.columns) == list(kineto.columns)
        for col in events.columns:
            a, b = events[col].dtype, kineto[col].dtype
            if isinstance(b, pd.CategoricalDtype):
                assert isinstance(a, pd.CategoricalDtype) and a.categories.dtype == b.categories.dtype, col
            else:
                assert a == b, col

    return check


@pytest.fixture(scope="session")
def replay_with_gemm_halved():
    """What `project --model replay` does with a trace of another format, for its reader's test: load it with
    runtime calls, check it is replayable, replay it as profiled and with the kernels named `gemm` 2x faster.
    Returns (graph, base replay, faster replay, the gemm mask)."""
    from addressable.projection.replay import Change, build_graph, replay, replayable
    from addressable.trace.reader import load_trace

    def run(path: Path, gemm: str):
        trace = load_trace(path, runtime=True)
        assert replayable(trace) == ""
        g = build_graph(trace)
        mask = g.gpu_name == gemm
        return g, replay(g), replay(g, [Change(mask=mask, k=2.0)]), mask

    return run


@pytest.fixture(scope="session")
def gpu_script():
    """Import a script of gpu/ by name (`gpu_script("span_accounting")`), gpu/ on sys.path for its own imports."""
    folder = Path(__file__).resolve().parents[1] / "gpu"

    def load(name: str) -> ModuleType:
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
        spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    return load
