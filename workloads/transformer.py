"""Transformer workloads: GPT-2 and Llama 3 decoders from Hugging Face config objects (random weights).

train: forward (causal-LM loss), backward, AdamW step.  infer: prefill of batch x seq_len tokens, then
``decode_tokens`` greedy decode steps on the model's own KV cache.

Options (``--option key=value``):
  layers, hidden, heads, kv_heads, mlp, vocab   override the model shape (``layers`` builds that many
                                                decoder layers, to profile a subset and extrapolate)
  attn           attention implementation: sdpa (default), eager, flash_attention_2, flex_attention
  decode_tokens  infer only: decode steps after the prefill (default 16; 0 = prefill only)
  checkpoint     train only: activation checkpointing (default false)

Weights are in the run's dtype (bf16/fp16/fp32, no autocast); dropout is off (as llm.c/nanoGPT);
GPT-2's position table grows past 1024 only when seq_len + decode_tokens needs it. The built step
carries ``step.model`` and ``step.info`` ({"attn", "layers", "params"}); after a training step
``step.loss``; under torchrun (a process group of several ranks) training wraps GPT-2 in DDP and
shards Llama with FSDP2 (each decoder layer, then the root; foreach AdamW), and inference runs one
replica per rank; each rank draws its own token ids. After an inference step ``step.generated`` (batch x (1 + decode_tokens) greedy
tokens: the prefill's, then one per decode step).
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any

import torch
from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig

from addressable.capture import distributed
from addressable.capture.phases import phase
from addressable.capture.workload import Step, WorkloadConfig, WorkloadSpec, check_options
from addressable.core.errors import AddressableError

if TYPE_CHECKING:
    from transformers import PreTrainedModel

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
ATTN = ("sdpa", "eager", "flash_attention_2", "flex_attention")
SHAPE_KEYS = ("layers", "hidden", "heads", "kv_heads", "mlp", "vocab")
OPTIONS = (*SHAPE_KEYS, "attn", "decode_tokens", "checkpoint")

SHAPES: dict[str, dict[str, Any]] = {
    "gpt2": dict(layers=12, hidden=768, heads=12, kv_heads=12, mlp=3072, vocab=50257),
    "llama3-1b": dict(layers=16, hidden=2048, heads=32, kv_heads=8, mlp=8192, vocab=128256, tied=True),
    "llama3-8b": dict(layers=32, hidden=4096, heads=32, kv_heads=8, mlp=14336, vocab=128256),
    "llama3-70b": dict(layers=80, hidden=8192, heads=64, kv_heads=8, mlp=28672, vocab=128256),
}


def _hf_config(name: str, s: dict[str, Any], max_len: int) -> GPT2Config | LlamaConfig:
    if name == "gpt2":
        return GPT2Config(
            n_layer=s["layers"], n_embd=s["hidden"], n_head=s["heads"], n_inner=s["mlp"],
            vocab_size=s["vocab"], n_positions=max(1024, max_len), bos_token_id=s["vocab"] - 1,
            eos_token_id=s["vocab"] - 1, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
        )
    return LlamaConfig(
        num_hidden_layers=s["layers"], hidden_size=s["hidden"], num_attention_heads=s["heads"],
        num_key_value_heads=s["kv_heads"], intermediate_size=s["mlp"], vocab_size=s["vocab"],
        max_position_embeddings=max(8192, max_len), tie_word_embeddings=s.get("tied", False),
        rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
        bos_token_id=0, eos_token_id=0, pad_token_id=None,
    )


def build_model(config: WorkloadConfig) -> PreTrainedModel:
    """The named model with random weights, on config.device in config.dtype."""
    opts = config.options
    check_options(config.name, opts, OPTIONS)
    attn = opts.get("attn", "sdpa")
    if attn not in ATTN:
        raise AddressableError(f"{config.name}: attn must be one of {', '.join(ATTN)}, not {attn!r}")
    shape = {**SHAPES[config.name], **{k: int(opts[k]) for k in SHAPE_KEYS if k in opts}}
    max_len = (config.seq_len or 1024) + int(opts.get("decode_tokens", 16))
    hf_config = _hf_config(config.name, shape, max_len)
    hf_config.use_cache = config.mode == "infer"
    torch.manual_seed(0)
    try:
        with torch.device(config.device):  # allocate (and initialise) the weights on the device
            model = AutoModelForCausalLM.from_config(
                hf_config, attn_implementation=attn, dtype=DTYPES[config.dtype]
            )
    except (ImportError, ValueError) as e:
        raise AddressableError(f"{config.name}: cannot build with attn={attn}: {e}") from None
    model.loss_type = "ForCausalLM"  # the causal-LM cross entropy, named to silence a warning
    return model


def _train_step(model: torch.nn.Module, ids: torch.Tensor, device: str, fused: bool = True) -> Step:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=fused and device == "cuda")

    def step() -> None:
        with phase("forward"):
            loss = model(input_ids=ids, labels=ids).loss
        with phase("backward"):
            loss.backward()
        with phase("optimizer"):
            opt.step()
            opt.zero_grad(set_to_none=True)
        vars(step)["loss"] = loss.detach()  # a step's attributes (vars: mypy types none on a function)

    return step


def _infer_step(model: torch.nn.Module, ids: torch.Tensor, decode_tokens: int) -> Step:
    # transformers >= 5.2x names the KV cache argument and output "cache"; earlier 5.x "past_key_values"
    params = inspect.signature(model.forward).parameters
    cache_key = "cache" if "cache" in params else "past_key_values"

    @torch.inference_mode()
    def step() -> None:
        with phase("prefill"):
            out = model(input_ids=ids, use_cache=True, logits_to_keep=1)
            token = out.logits[:, -1].argmax(-1, keepdim=True)
        tokens = [token]
        if decode_tokens:
            with phase("decode"):
                for _ in range(decode_tokens):
                    out = model(input_ids=token, use_cache=True, logits_to_keep=1, **{cache_key: out[cache_key]})
                    token = out.logits[:, -1].argmax(-1, keepdim=True)
                    tokens.append(token)
        vars(step)["generated"] = torch.cat(tokens, dim=1)

    return step


def build(config: WorkloadConfig) -> Step:
    model = build_model(config)
    distributed.seed_data()  # under torchrun each rank draws its own batch
    ids = torch.randint(model.config.vocab_size, (config.batch, config.seq_len or 1024), device=config.device)
    if config.mode == "train":
        model.train()
        if str(config.options.get("checkpoint", False)).lower() in ("1", "true", "yes"):
            model.gradient_checkpointing_enable()
        if config.name == "gpt2":  # under torchrun: DDP for GPT-2, FSDP2 (per decoder layer) for Llama
            step = _train_step(distributed.ddp(model), ids, config.device)
        else:
            sharded = distributed.active()
            distributed.fsdp2(model, list(model.model.layers))
            step = _train_step(model, ids, config.device, fused=not sharded)  # foreach AdamW on DTensors
    else:
        model.eval()
        step = _infer_step(model, ids, int(config.options.get("decode_tokens", 16)))
    if config.compile:
        model.compile()
    vars(step).update(model=model, info={"attn": model.config._attn_implementation,
                                         "layers": model.config.num_hidden_layers,
                                         "params": sum(p.numel() for p in model.parameters())})
    return step


_DOC = "options: layers, hidden, heads, kv_heads, mlp, vocab, attn (sdpa|eager|flash_attention_2), decode_tokens (infer, default 16), checkpoint (train)"

WORKLOADS = [
    WorkloadSpec(
        name="gpt2", family="transformer", build=build, options=OPTIONS, default_batch=8, default_seq_len=1024, full_layers=12,
        description=f"GPT-2 124M (12 layers, 768 hidden, 12 heads, vocab 50257); train: AdamW; {_DOC}",
    ),
    WorkloadSpec(
        name="llama3-1b", family="transformer", build=build, options=OPTIONS, default_mode="infer", default_batch=8,
        default_seq_len=1024, full_layers=16,
        description=f"Llama 3.2 1B shape (16 layers, 2048 hidden, 32/8 heads, MLP 8192, tied vocab 128256); {_DOC}",
    ),
    WorkloadSpec(
        name="llama3-8b", family="transformer", build=build, options=OPTIONS, default_mode="infer", default_batch=8,
        default_seq_len=1024, full_layers=32,
        description=f"Llama 3 8B (32 layers, 4096 hidden, 32/8 heads, MLP 14336, vocab 128256); {_DOC}",
    ),
    WorkloadSpec(
        name="llama3-70b", family="transformer", build=build, options=OPTIONS, modes=("infer",), default_mode="infer",
        default_batch=8, default_seq_len=1024, full_layers=80,
        description=f"Llama 3 70B (80 layers, 8192 hidden, 64/8 heads, MLP 28672, vocab 128256); bf16 weights "
        f"alone are 131 GiB, so profile with layers=N and extrapolate; {_DOC}",
    ),
]
