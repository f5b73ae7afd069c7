"""Transformer and DLRM adapters, built tiny on the CPU: real steps, real updates, phases marked."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from addressable.capture.workload import WorkloadConfig, load_adapter
from addressable.core.errors import AddressableError
from workloads import dlrm, transformer

TINY_LM = {"layers": 2, "hidden": 64, "heads": 4, "kv_heads": 2, "mlp": 128, "vocab": 1000}
HAS_TORCHREC = importlib.util.find_spec("torchrec") is not None
BACKENDS = ["plain", pytest.param("torchrec", marks=pytest.mark.skipif(not HAS_TORCHREC, reason="no torchrec"))]


def lm(name: str, mode: str, **options: object) -> WorkloadConfig:
    return WorkloadConfig(name, mode, batch=2, dtype="fp32", device="cpu", seq_len=16, options={**TINY_LM, **options})


def rec(name: str, mode: str, backend: str, **options: object) -> WorkloadConfig:
    return WorkloadConfig(name, mode, batch=8, dtype="fp32", device="cpu", options={"rows": 50, "backend": backend, **options})


def snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {n: p.detach().clone() for n, p in model.named_parameters()}


def changed(before: dict[str, torch.Tensor], model: torch.nn.Module) -> set[str]:
    return {n for n, p in model.named_parameters() if not torch.equal(before[n], p.detach())}


def phases(step) -> list[str]:
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step()
    return [e.name for e in prof.events() if e.name.startswith("phase:")]


def test_specs_register() -> None:
    specs = {s.name: s for s in load_adapter("workloads.transformer") + load_adapter("workloads.dlrm")}
    assert {"gpt2", "llama3-1b", "llama3-8b", "llama3-70b", "dlrm", "dlrm-dot"} <= set(specs)
    assert specs["llama3-70b"].full_layers == 80 and specs["llama3-8b"].full_layers == 32
    assert specs["llama3-70b"].modes == ("infer",) and "train" in specs["llama3-8b"].modes
    assert specs["dlrm"].default_batch == 2048


@pytest.mark.parametrize("name", ["gpt2", "llama3-8b"])
def test_lm_train_updates_every_parameter(name: str) -> None:
    step = transformer.build(lm(name, "train"))
    before = snapshot(step.model)
    assert phases(step) == ["phase:forward", "phase:backward", "phase:optimizer"]
    assert torch.isfinite(step.loss) and step.loss > 0
    assert changed(before, step.model) == set(before)


@pytest.mark.parametrize("name", ["gpt2", "llama3-8b", "llama3-70b"])
def test_lm_infer_prefills_then_decodes_on_the_kv_cache(name: str) -> None:
    step = transformer.build(lm(name, "infer", decode_tokens=3))
    inputs = []
    step.model.register_forward_pre_hook(lambda m, a, kw: inputs.append(kw["input_ids"].shape), with_kwargs=True)
    before = snapshot(step.model)
    assert phases(step) == ["phase:prefill", "phase:decode"]
    assert inputs == [(2, 16)] + [(2, 1)] * 3  # one token per decode step: the rest comes from the cache
    assert step.generated.shape == (2, 4) and step.generated.dtype == torch.long
    assert not changed(before, step.model)


def test_lm_prefill_only() -> None:
    step = transformer.build(lm("llama3-8b", "infer", decode_tokens=0))
    assert phases(step) == ["phase:prefill"]
    assert step.generated.shape == (2, 1)


def test_lm_shape_options() -> None:
    step = transformer.build(lm("llama3-1b", "infer", layers=3, attn="eager"))
    llama = step.model
    assert step.info["layers"] == 3 and step.info["attn"] == "eager"
    assert step.info["params"] == sum(p.numel() for p in llama.parameters())
    assert len(llama.model.layers) == 3 and llama.config.vocab_size == 1000
    assert llama.config._attn_implementation == "eager"
    assert llama.config.num_key_value_heads == 2 and llama.config.intermediate_size == 128
    gpt2 = transformer.build(lm("gpt2", "train", layers=1)).model
    assert len(gpt2.transformer.h) == 1 and gpt2.config.n_embd == 64
    full = transformer.build_model(WorkloadConfig("llama3-70b", "infer", 1, "bf16", "meta", seq_len=8))
    assert len(full.model.layers) == 80 and full.config.hidden_size == 8192
    assert 70e9 < sum(p.numel() for p in full.parameters()) < 71e9


def test_lm_rejects_bad_options() -> None:
    with pytest.raises(AddressableError, match="unknown option"):
        transformer.build(lm("gpt2", "train", layer=2))
    with pytest.raises(AddressableError, match="attn must be"):
        transformer.build(lm("gpt2", "train", attn="magic"))


def tables(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return list(model.sparse_arch.parameters())


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["dlrm", "dlrm-dot"])
def test_dlrm_train_updates_only_touched_rows(name: str, backend: str) -> None:
    step = dlrm.build(rec(name, "train", backend, rows=1000))
    assert step.info["backend"] == backend
    sparse_grads = []
    for w in tables(step.model):
        w.register_hook(lambda g: sparse_grads.append(g.is_sparse))
    before = snapshot(step.model)
    weights = [w.detach().clone() for w in tables(step.model)]
    assert phases(step) == ["phase:forward", "phase:backward", "phase:optimizer"]
    assert torch.isfinite(step.loss)
    assert sparse_grads == [True] * len(dlrm.HOTS)  # row-sparse gradients, never a dense table gradient
    n_touched = 0
    for i, (w0, w) in enumerate(zip(weights, tables(step.model), strict=True)):
        touched = set(step.batches[0]["bags"][i][0].tolist())
        moved = set((w0 != w.detach()).any(dim=1).nonzero().flatten().tolist())
        assert moved == touched, f"table {i}"
        n_touched += len(touched)
    assert n_touched < step.info["embedding_rows"] / 4  # most rows were left alone
    dense = {n for n in before if not n.startswith("sparse_arch.")}
    assert dense <= changed(before, step.model)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", ["dlrm", "dlrm-dot"])
def test_dlrm_infer(name: str, backend: str) -> None:
    step = dlrm.build(rec(name, "infer", backend))
    before = snapshot(step.model)
    assert phases(step) == ["phase:forward"]
    step()
    assert not changed(before, step.model)


def test_dlrm_bf16_autocast_and_shapes() -> None:
    step = dlrm.build(rec("dlrm", "train", "plain", rows=1000, dim=16, batches=2, skew=1.05))
    step()
    step()
    assert torch.isfinite(step.loss)
    rows = [w.shape for w in tables(step.model)]
    assert rows == [(min(r, 1000), 16) for r in dlrm.ROWS]
    assert step.info["embedding_rows"] == sum(min(r, 1000) for r in dlrm.ROWS)
    assert len(step.batches) == 2 and step.batches[0]["values"].numel() == 8 * sum(dlrm.HOTS)
    bf16 = dlrm.build(WorkloadConfig("dlrm-dot", "train", 8, "bf16", "cpu", options={"rows": 50, "backend": "plain"}))
    bf16()
    assert torch.isfinite(bf16.loss) and tables(bf16.model)[0].dtype == torch.float32


def test_dlrm_skewed_ids_favour_low_rows() -> None:
    ids = dlrm._ids(20_000, 1000, 1.05, "cpu")
    assert ids.min() >= 0 and ids.max() < 1000
    counts = torch.bincount(ids, minlength=1000)
    assert counts[0] > 10 * counts[500:].float().mean()
    assert dlrm._ids(20_000, 1000, 0.0, "cpu").float().mean() == pytest.approx(500, rel=0.05)


def test_dlrm_falls_back_to_plain_when_torchrec_cannot_run(monkeypatch, capsys) -> None:
    monkeypatch.setattr(dlrm, "_torchrec_error", lambda device: "NotImplementedError: no CUDA kernel")
    step = dlrm.build(rec("dlrm", "infer", backend=None))
    assert step.info["backend"] == "plain" and isinstance(step.model, dlrm.PlainDLRM)
    assert "plain PyTorch backend" in capsys.readouterr().err
    with pytest.raises(AddressableError, match="torchrec backend does not run"):
        dlrm.build(rec("dlrm", "infer", backend="torchrec"))
    with pytest.raises(AddressableError, match="unknown option"):
        dlrm.build(rec("dlrm", "infer", backend="plain", row=5))


def test_every_builtin_declares_the_options_it_reads() -> None:
    from addressable.capture.workload import registry

    specs = registry()
    assert specs["resnet50"].known_options == ("image_size", "classes", "channels_last", "lr")
    assert set(specs["gpt2"].known_options) == set(transformer.OPTIONS)
    assert set(specs["dlrm"].known_options) == set(dlrm.OPTIONS)
    from workloads import resnet

    for spec in [*resnet.WORKLOADS, *transformer.WORKLOADS, *dlrm.WORKLOADS]:  # `layers`: --layers-subset's cut
        assert spec.known_options and ("layers" in spec.known_options) == bool(spec.full_layers)
