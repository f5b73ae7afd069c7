"""DLRM workloads with MLPerf DLRM-DCNv2 shapes: 26 multi-hot embedding tables of dim 128, 13 dense
features, bottom MLP 512-256-128, top MLP 1024-1024-512-256-1; "dlrm" interacts through a DCNv2
low-rank cross network (3 layers, rank 512), "dlrm-dot" through pairwise dot products (original DLRM).

train: forward + BCE-with-logits loss, backward, optimizer; Adagrad for everything (MLPerf uses it,
row-wise for the tables; torch's sparse Adagrad is element-wise), with sparse updates of the tables:
only the rows a batch looks up get a gradient and are written.
  backend=torchrec  torchrec DLRM_DCN / DLRM over an unsharded EmbeddingBagCollection (one
                    nn.EmbeddingBag per table, not fbgemm's fused TBE) fed KeyedJaggedTensors; each
                    table's sparse gradient is applied inside backward, as fused TBE does
  backend=plain     plain PyTorch (as the facebookresearch/dlrm reference): nn.EmbeddingBag(sparse=True)
                    per table; the sparse Adagrad step runs in the optimizer phase
infer: forward and sigmoid under inference_mode.

Options: backend (torchrec | plain; default torchrec when it imports and runs on the device, else
plain, with a note on stderr), rows (per-table row cap on the MLPerf Criteo 1TB counts; default
1_000_000 on cuda, 10_000 on cpu), dim (embedding dim, default 128), skew (Zipf exponent of the ids;
default 0 = uniform), batches (distinct synthetic batches, cycled; default 4). dtype bf16/fp16 runs the
MLPs under autocast; embedding tables stay fp32. The built step carries ``step.model``,
``step.batches``, ``step.info`` ({"backend", "rows": the cap, "embedding_rows": total}) and, after a
training step, ``step.loss``.
"""

from __future__ import annotations

import itertools
import sys
from contextlib import nullcontext
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from addressable.capture.phases import phase
from addressable.capture.workload import Step, WorkloadConfig, WorkloadSpec, check_options
from addressable.core.errors import AddressableError

# MLPerf DLRM-DCNv2 (Criteo 1TB, ids hashed to at most 40M per feature) and its synthetic multi-hot sizes
ROWS = (40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10, 2209,
        11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36)
HOTS = (3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1)
DENSE_IN, BOTTOM, TOP = 13, (512, 256), (1024, 1024, 512, 256, 1)
DCN_LAYERS, DCN_RANK = 3, 512
LR = 0.004
OPTIONS = ("backend", "rows", "dim", "skew", "batches")
AMP = {"bf16": torch.bfloat16, "fp16": torch.float16}


def _mlp(sizes: list[int], last_relu: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b))
        if last_relu or i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class LowRankCross(nn.Module):
    """DCNv2 low-rank cross network over [dense, sparse...]: x_{l+1} = x_0 * (W_l V_l x_l + b_l) + x_l."""

    def __init__(self, width: int, layers: int, rank: int) -> None:
        super().__init__()
        self.v = nn.ModuleList(nn.Linear(width, rank, bias=False) for _ in range(layers))
        self.w = nn.ModuleList(nn.Linear(rank, width) for _ in range(layers))

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        x0 = x = torch.cat([dense.unsqueeze(1), sparse], dim=1).flatten(1)
        for v, w in zip(self.v, self.w, strict=True):
            x = x0 * w(v(x)) + x
        return x


class DotInteraction(nn.Module):
    """Original DLRM interaction: the dense vector and all pairwise dot products of the F+1 vectors."""

    pairs: torch.Tensor  # a buffer, registered in __init__

    def __init__(self, vectors: int) -> None:
        super().__init__()
        self.register_buffer("pairs", torch.triu_indices(vectors, vectors, offset=1), persistent=False)

    def forward(self, dense: torch.Tensor, sparse: torch.Tensor) -> torch.Tensor:
        x = torch.cat([dense.unsqueeze(1), sparse], dim=1)
        dots = torch.bmm(x, x.transpose(1, 2))[:, self.pairs[0], self.pairs[1]]
        return torch.cat([dense, dots], dim=1)


class PlainDLRM(nn.Module):
    """DLRM in plain PyTorch, laid out like torchrec's (dense_arch, sparse_arch, inter_arch, over_arch)."""

    def __init__(self, rows: list[int], dim: int, dcn: bool) -> None:
        super().__init__()
        n = len(rows) + 1
        self.dense_arch = _mlp([DENSE_IN, *BOTTOM, dim])
        self.sparse_arch = nn.ModuleList(nn.EmbeddingBag(r, dim, mode="sum", sparse=True) for r in rows)
        self.inter_arch = LowRankCross(n * dim, DCN_LAYERS, DCN_RANK) if dcn else DotInteraction(n)
        self.over_arch = _mlp([n * dim if dcn else dim + n * (n - 1) // 2, *TOP], last_relu=False)

    def forward(self, dense: torch.Tensor, bags: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
        pooled = [bag(ids, offsets) for bag, (ids, offsets) in zip(self.sparse_arch, bags, strict=True)]
        sparse = torch.stack(pooled, dim=1)
        return self.over_arch(self.inter_arch(self.dense_arch(dense), sparse))


def _torchrec_model(rows: list[int], dim: int, dcn: bool, device: str) -> nn.Module:
    from torchrec import EmbeddingBagCollection, EmbeddingBagConfig
    from torchrec.models.dlrm import DLRM, DLRM_DCN

    tables = [
        EmbeddingBagConfig(name=f"t{i}", embedding_dim=dim, num_embeddings=r, feature_names=[f"f{i}"])
        for i, r in enumerate(rows)
    ]
    ebc = EmbeddingBagCollection(tables=tables, device=torch.device(device))
    for bag in ebc.embedding_bags.values():
        bag.sparse = True  # row-sparse gradients, as the fused TBE kernels of sharded torchrec
    kw: dict[str, Any] = dict(dense_in_features=DENSE_IN, dense_arch_layer_sizes=[*BOTTOM, dim],
                              over_arch_layer_sizes=list(TOP), dense_device=torch.device(device))
    if dcn:
        return DLRM_DCN(ebc, dcn_num_layers=DCN_LAYERS, dcn_low_rank_dim=DCN_RANK, **kw)
    return DLRM(ebc, **kw)


def _ids(n: int, rows: int, skew: float, device: str) -> torch.Tensor:
    """n ids in [0, rows): uniform, or Zipf-like P(id = k) ~ (k + 1)^-skew (row 0 hottest)."""
    if not skew:
        return torch.randint(rows, (n,), device=device)
    u = torch.rand(n, dtype=torch.float64, device=device)
    a = 1.0 - skew
    x = rows**u if abs(a) < 1e-9 else ((rows**a - 1.0) * u + 1.0) ** (1.0 / a)
    return (x.long() - 1).clamp_(0, rows - 1)


def make_batch(batch: int, rows: list[int], skew: float, device: str) -> dict[str, Any]:
    """One synthetic batch: dense features, labels, and the multi-hot ids both as a flat key-major
    (values, lengths) pair for a KeyedJaggedTensor and as per-table (ids, offsets) for nn.EmbeddingBag."""
    ids = [_ids(batch * h, r, skew, device) for r, h in zip(rows, HOTS, strict=True)]
    return {
        "dense": torch.randn(batch, DENSE_IN, device=device),
        "labels": torch.randint(2, (batch, 1), device=device).float(),
        "values": torch.cat(ids),
        "lengths": torch.cat([torch.full((batch,), h, device=device) for h in HOTS]),
        "bags": [(v, torch.arange(0, batch * h, h, device=device)) for v, h in zip(ids, HOTS, strict=True)],
        "length_per_key": [batch * h for h in HOTS],
    }


def _kjt(b: dict[str, Any]) -> Any:
    from torchrec import KeyedJaggedTensor

    return KeyedJaggedTensor(
        keys=[f"f{i}" for i in range(len(HOTS))], values=b["values"], lengths=b["lengths"],
        stride=b["dense"].shape[0], length_per_key=b["length_per_key"],
        offset_per_key=[0, *itertools.accumulate(b["length_per_key"])],
    )


def _torchrec_error(device: str) -> str | None:
    """Why torchrec cannot run a tiny DLRM forward and backward on device (None when it can)."""
    try:
        model = _torchrec_model([4] * len(HOTS), 4, True, device)
        b = make_batch(2, [4] * len(HOTS), 0.0, device)
        model(b["dense"], _kjt(b)).sum().backward()
        if device == "cuda":
            torch.cuda.synchronize()
    except Exception as e:  # ImportError, or a fbgemm op without a kernel for this device
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return None


def _backend(config: WorkloadConfig) -> str:
    want = config.options.get("backend")
    if want not in (None, "torchrec", "plain"):
        raise AddressableError(f"{config.name}: backend must be torchrec or plain, not {want!r}")
    if want == "plain":
        return "plain"
    error = _torchrec_error(config.device)
    if error is None:
        return "torchrec"
    if want == "torchrec":
        raise AddressableError(f"{config.name}: the torchrec backend does not run on {config.device}: {error}")
    print(f"note: {config.name}: torchrec does not run on {config.device} ({error}); "
          "using the plain PyTorch backend (nn.EmbeddingBag)", file=sys.stderr)
    return "plain"


def build(config: WorkloadConfig) -> Step:
    opts = config.options
    check_options(config.name, opts, OPTIONS)
    backend = _backend(config)
    cap = int(opts.get("rows", 1_000_000 if config.device == "cuda" else 10_000))
    rows, dim, dcn = [min(r, cap) for r in ROWS], int(opts.get("dim", 128)), config.name == "dlrm"
    torch.manual_seed(0)
    if backend == "torchrec":
        model = _torchrec_model(rows, dim, dcn, config.device)
    else:
        with torch.device(config.device):
            model = PlainDLRM(rows, dim, dcn)
    batches = [make_batch(config.batch, rows, float(opts.get("skew", 0)), config.device)
               for _ in range(int(opts.get("batches", 4)))]
    tables = list(model.get_submodule("sparse_arch").parameters())  # either model's (torchrec's layout)
    dense = [p for n, p in model.named_parameters() if not n.startswith("sparse_arch.")]
    if config.compile:
        for arch in ("dense_arch", "inter_arch", "over_arch"):
            model.get_submodule(arch).compile()
    amp = torch.autocast(config.device, AMP[config.dtype]) if config.dtype in AMP else nullcontext()
    feed = itertools.cycle(batches)

    def forward(b: dict[str, Any]) -> torch.Tensor:
        with amp:
            return model(b["dense"], _kjt(b) if backend == "torchrec" else b["bags"])

    if config.mode == "train":
        model.train()
        dense_opt = torch.optim.Adagrad(dense, lr=LR)
        if backend == "torchrec":  # apply each table's sparse gradient as soon as it is accumulated
            sparse_opts: dict[torch.Tensor, torch.optim.Optimizer] = {
                p: torch.optim.Adagrad([p], lr=LR) for p in tables}

            def update(p: torch.Tensor) -> None:
                sparse_opts[p].step()
                sparse_opts[p].zero_grad(set_to_none=True)

            for p in tables:
                p.register_post_accumulate_grad_hook(update)
        else:
            sparse_opt = torch.optim.Adagrad(tables, lr=LR)

        def step() -> None:
            b = next(feed)
            with phase("forward"):
                loss = F.binary_cross_entropy_with_logits(forward(b).float(), b["labels"])
            with phase("backward"):
                loss.backward()
            with phase("optimizer"):
                dense_opt.step()
                dense_opt.zero_grad(set_to_none=True)
                if backend == "plain":
                    sparse_opt.step()
                    sparse_opt.zero_grad(set_to_none=True)
            vars(step)["loss"] = loss.detach()  # a step's attributes (vars: mypy types none on a function)
    else:
        model.eval()

        @torch.inference_mode()
        def step() -> None:
            b = next(feed)
            with phase("forward"):
                torch.sigmoid(forward(b))

    vars(step).update(model=model, batches=batches,
                      info={"backend": backend, "rows": cap, "embedding_rows": sum(rows)})
    return step


_DOC = ("26 tables x dim 128 (MLPerf Criteo 1TB rows, capped), bottom 512-256-128, top 1024-1024-512-256-1; "
        "options: backend (torchrec|plain), rows (per-table cap; default 1e6 cuda, 1e4 cpu), dim, skew, batches")

WORKLOADS = [
    WorkloadSpec(name="dlrm", family="recsys", build=build, options=OPTIONS, default_batch=2048, default_dtype="fp32",
                 description=f"DLRM-DCNv2 (MLPerf; DCN 3 layers, rank 512); {_DOC}"),
    WorkloadSpec(name="dlrm-dot", family="recsys", build=build, options=OPTIONS, default_batch=2048, default_dtype="fp32",
                 description=f"DLRM with dot interaction (original DLRM); {_DOC}"),
]
