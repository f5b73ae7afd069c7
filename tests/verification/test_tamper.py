"""tamper: a snapshot before the candidate loads, compared after: patched functions, swapped code, flags, hooks."""

from __future__ import annotations

import importlib
import json
import signal
import time

import pytest
import torch

from addressable.verification import harness, tamper


def test_an_untouched_process_changes_nothing() -> None:
    before = tamper.snapshot("cpu")
    torch.softmax(torch.ones(3), 0)
    importlib.import_module("torch.fx")  # a lazily loaded submodule only adds names
    assert tamper.changed(before, tamper.snapshot("cpu")) == []


def test_patches_of_every_kind_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    before = tamper.snapshot("cpu")
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    monkeypatch.setattr(json, "dumps", lambda *a, **k: "{}")
    monkeypatch.setattr(torch.Tensor, "clone", lambda self: self)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", not torch.backends.cudnn.benchmark)
    monkeypatch.setattr(harness.one_line, "__code__", (lambda e: "").__code__)  # same function object, new code
    monkeypatch.setattr(harness, "tensors", lambda obj: [])
    handle = torch.nn.modules.module.register_module_forward_hook(lambda m, a, o: o)
    old = signal.signal(signal.SIGUSR2, lambda s, f: None)
    try:
        names = tamper.changed(before, tamper.snapshot("cpu"))
    finally:
        handle.remove()
        signal.signal(signal.SIGUSR2, old)
    for expected in ("time.perf_counter", "json.dumps", "torch.Tensor.clone", "torch.backends.cudnn.benchmark",
                     "addressable.verification.harness.one_line", "addressable.verification.harness.tensors",
                     "nn.Module _global_forward_hooks", "signal handler SIGUSR2"):
        assert expected in names, expected


def test_a_removed_name_counts() -> None:
    before = {"a": "1", "b": "2"}
    assert tamper.changed(before, {"a": "1"}) == ["b"]
    assert tamper.changed(before, {"a": "1", "b": "2", "c": "3"}) == []


def test_torch_modules_that_patch_torch_when_imported_do_not_read_as_tampering() -> None:
    """torch._dynamo wraps torch.manual_seed when first imported (the profiler and torch.compile import it):
    in a fresh process, a snapshot, those imports and a compiled call, then a second snapshot must agree."""
    import subprocess
    import sys

    code = ("from addressable.verification import tamper; a = tamper.snapshot('cpu'); "
            "import torch, torch.profiler, torch._dynamo; "
            "f = torch.compile(lambda x: x * 2, backend='eager'); f(torch.ones(3)); "
            "print(tamper.changed(a, tamper.snapshot('cpu')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().splitlines()[-1] == "[]", out.stderr[-2000:]
