"""Bytes and FLOPs of one aten op from its recorded inputs: the per-op cost models of the roofline.

torch.profiler with record_shapes=True writes, on every CPU op, its inputs' shapes ("Input Dims"),
dtypes ("Input type"), strides ("Input Strides") and scalar values ("Concrete Inputs"); outputs are
not recorded, so each model derives its outputs from its inputs. A model returns a Cost: the DRAM
bytes the op must read and write at the least (each input read once, each output written once,
intermediates kept on chip), the FLOPs of GEMM, convolution and attention, and optionally the bytes
of each kernel the op launches (`passes`). An op with no model, or whose record lacks what its
model needs, gets no Cost: it is counted as unmodelled, never guessed. docs/roofline.md lists the
models and their assumptions.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache

import orjson

SECTOR = 32  # bytes: the DRAM access granule of NVIDIA (and AMD) GPUs

# "Input type" spellings (c10 type names) -> bytes per element
DTYPE_BYTES = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4, "short int": 2,
    "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "c10::Float8_e8m0fnu": 1,
    "c10::complex<float>": 8, "c10::complex<double>": 16, "c10::complex<c10::Half>": 4,
    "unsigned short": 2, "unsigned int": 4, "unsigned long": 8,
}
FLOAT_DTYPES = frozenset({"double", "float", "c10::Half", "c10::BFloat16", "c10::Float8_e4m3fn",
                          "c10::Float8_e5m2", "c10::Float8_e4m3fnuz", "c10::Float8_e5m2fnuz"})
# c10::ScalarType codes, as a `dtype=` argument appears in "Concrete Inputs" -> bytes per element
SCALAR_TYPE_BYTES = {0: 1, 1: 1, 2: 2, 3: 4, 4: 8, 5: 2, 6: 4, 7: 8, 11: 1, 15: 2, 23: 1, 24: 1, 25: 1, 26: 1}
# the matmul peak (peaks table key) that an input dtype runs at
PEAK_DTYPE = {"c10::BFloat16": "bf16", "c10::Half": "fp16", "float": "fp32", "double": "fp64",
              "c10::Float8_e4m3fn": "fp8", "c10::Float8_e5m2": "fp8", "c10::Float8_e4m3fnuz": "fp8",
              "c10::Float8_e5m2fnuz": "fp8"}


@dataclass(frozen=True)
class Tensor:
    """One recorded tensor input: shape, bytes per element, strides (None when not recorded)."""

    shape: tuple[int, ...]
    itemsize: int
    strides: tuple[int, ...] | None = None
    dtype: str = ""

    @property
    def numel(self) -> int:
        """Number of elements."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of its elements, stored densely."""
        return self.numel * self.itemsize

    @property
    def touched(self) -> int:
        """DRAM bytes a pass over this (possibly strided) tensor touches.

        Dense tensors: their bytes. Broadcast dimensions (stride 0) are read once. A tensor whose
        fastest-moving dimension is not contiguous touches a 32-byte sector per element (or its
        stride, if smaller), never more than the span between its first and last element.
        """
        if self.strides is None or len(self.strides) != len(self.shape) or not self.shape:
            return self.nbytes
        if self.numel == 0:
            return 0
        dims = [(n, abs(s)) for n, s in zip(self.shape, self.strides, strict=True) if n > 1 and s != 0]
        if not dims:
            return self.itemsize
        span = (sum((n - 1) * s for n, s in dims) + 1) * self.itemsize
        n_inner, s_inner = min(dims, key=lambda d: d[1])
        elements = math.prod(n for n, _ in dims)
        if s_inner == 1:
            runs = elements // n_inner
            touched = runs * math.ceil(n_inner * self.itemsize / SECTOR) * SECTOR
        else:
            touched = elements * min(SECTOR, s_inner * self.itemsize)
        return min(span, max(touched, elements * self.itemsize))


@dataclass(frozen=True)
class OpCall:
    """The recorded inputs of one op call."""

    name: str
    inputs: tuple[Tensor | tuple[Tensor, ...] | None, ...]  # a tensor, a tensor list, or None (not a tensor)
    values: tuple[str, ...] = ()  # "Concrete Inputs": scalar values as text, "" for tensors
    list_itemsize: int = 4  # bytes per element assumed for tensor lists (their dtype is not recorded)

    def t(self, i: int) -> Tensor | None:
        """Input i when it is a tensor, else None."""
        x = self.inputs[i] if i < len(self.inputs) else None
        return x if isinstance(x, Tensor) else None

    def tensors(self, i: int) -> tuple[Tensor, ...]:
        """Input i as a tensor list (a single tensor is a list of one; nothing is an empty list)."""
        x = self.inputs[i] if i < len(self.inputs) else None
        return (x,) if isinstance(x, Tensor) else x if isinstance(x, tuple) else ()

    def value(self, i: int) -> str:
        """Concrete value of input i as text ('' when not recorded)."""
        return self.values[i] if i < len(self.values) else ""

    def ints(self, i: int) -> list[int] | None:
        """Input i as a list of ints ('[1, 2]' or '3'); None when empty or not a number."""
        text = self.value(i).strip()
        if not text or text in ("[]", "None"):
            return None
        try:
            v = orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
        v = v if isinstance(v, list) else [v]
        return [int(x) for x in v] if all(isinstance(x, int) and not isinstance(x, bool) for x in v) else None

    def flag(self, i: int, default: bool = False) -> bool:
        """Input i as a bool ('True'/'False', '1'/'0')."""
        text = self.value(i).strip()
        return default if not text else text in ("True", "true", "1")


@dataclass(frozen=True)
class Cost:
    """Bytes an op must move and FLOPs it must compute; `passes`, when given, split the bytes by kernel."""

    read: float
    write: float
    flops: float = 0.0
    dtype: str = ""  # the matmul peak FLOPs run at (bf16, fp16, fp32, fp8), for GEMM, conv, attention
    passes: tuple[tuple[str, float], ...] = field(default=(), compare=False)  # (kernel-name regex, bytes)
    # (kernel-name regex, bytes): when every kernel the op launched matches, the op moves these bytes
    # instead (an implementation that reads its input more than once, chosen at run time)
    variants: tuple[tuple[str, float], ...] = field(default=(), compare=False)

    @property
    def bytes(self) -> float:
        """Bytes read plus bytes written."""
        return self.read + self.write


Model = Callable[[OpCall], Cost | None]


@dataclass(frozen=True)
class OpModel:
    """One op family's model and the aten ops it covers."""

    family: str
    ops: tuple[str, ...]
    fn: Model


MODELS: dict[str, OpModel] = {}


def model(family: str, *ops: str) -> Callable[[Model], Model]:
    """Register fn as the cost model of `ops` (aten names without the 'aten::' prefix)."""
    def register(fn: Model) -> Model:
        m = OpModel(family, tuple(f"aten::{o}" for o in ops), fn)
        for o in m.ops:
            MODELS[o] = m
        return fn
    return register


def families() -> dict[str, tuple[str, ...]]:
    """Family -> the aten ops it models."""
    out: dict[str, tuple[str, ...]] = {}
    for m in MODELS.values():
        out[m.family] = tuple(dict.fromkeys(out.get(m.family, ()) + m.ops))
    return out


# ---------------------------------------------------------------- parsing a record


@cache
def json_list(text: str) -> list:
    """A Kineto JSON-list field (Input Dims, Input type, ...) as a list; [] when empty or unreadable."""
    try:
        v = orjson.loads(text) if text else []
    except orjson.JSONDecodeError:
        return []
    return v if isinstance(v, list) else []


def parse_call(name: str, dims: str, types: str, strides: str = "", concrete: str = "",
               list_itemsize: int = 4, unrecorded: tuple[Tensor, ...] = ()) -> OpCall:
    """An OpCall from the JSON texts of a trace's Input Dims / Input type / Input Strides / Concrete Inputs.

    Kineto records a long tensor list as []: such a list is `unrecorded` when given (the step's
    parameters, for an optimizer's lists), else unknown (None), never empty.
    """
    d, t, s, c = json_list(dims), json_list(types), json_list(strides), json_list(concrete)
    inputs: list[Tensor | tuple[Tensor, ...] | None] = []
    for i, shape in enumerate(d):
        dtype = t[i] if i < len(t) and isinstance(t[i], str) else ""
        st = s[i] if i < len(s) else None
        if dtype in DTYPE_BYTES and isinstance(shape, list):
            strides_i = tuple(st) if isinstance(st, list) and len(st) == len(shape) else None
            inputs.append(Tensor(tuple(shape), DTYPE_BYTES[dtype], strides_i, dtype))
        elif dtype in ("TensorList", "GenericList") and isinstance(shape, list) and shape and \
                all(isinstance(x, list) for x in shape):
            inputs.append(tuple(Tensor(tuple(x), list_itemsize) for x in shape))
        elif dtype == "TensorList" and shape == [] and unrecorded:
            inputs.append(unrecorded)
        else:
            inputs.append(None)
    values = tuple(str(v) for v in c)
    return OpCall(name, tuple(inputs), values, list_itemsize)


def broadcast_shape(*shapes: Sequence[int]) -> tuple[int, ...]:
    """numpy broadcasting of shapes."""
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate(s, start=n - len(s)):
            if d != 1:
                if out[i] not in (1, d):
                    raise ValueError(f"shapes {shapes} do not broadcast")
                out[i] = d
    return tuple(out)


def _read(ts: Sequence[Tensor | None]) -> int:
    return sum(t.touched for t in ts if t is not None)


# ---------------------------------------------------------------- elementwise and data movement

_ELEMENTWISE = (
    "add", "sub", "rsub", "mul", "div", "neg", "abs", "exp", "exp2", "expm1", "log", "log1p", "log2", "sqrt",
    "rsqrt", "pow", "sigmoid", "tanh", "relu", "gelu", "silu", "mish", "hardswish", "hardsigmoid", "hardtanh",
    "leaky_relu", "elu", "softplus", "clamp", "clamp_min", "clamp_max", "where", "masked_fill", "maximum",
    "minimum", "reciprocal", "sin", "cos", "erf", "addcmul", "addcdiv", "lerp", "sign", "floor", "ceil", "round",
    "trunc", "remainder", "fmod", "triu", "tril", "nan_to_num", "cumsum", "logical_not", "bitwise_not",
    "threshold_backward", "gelu_backward", "silu_backward", "sigmoid_backward", "tanh_backward",
    "hardtanh_backward", "leaky_relu_backward", "elu_backward", "mish_backward", "hardswish_backward",
    "native_dropout_backward",
)
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "isnan", "isinf",
            "isfinite", "bitwise_and", "bitwise_or", "bitwise_xor")
_WRITE_ONLY = ("fill_", "zero_", "normal_", "uniform_", "bernoulli_", "random_", "exponential_")


def _out_itemsize(ts: Sequence[Tensor]) -> int:
    """torch's type promotion, by size: the widest float among the tensors with dimensions (a 0-dim
    tensor, such as a wrapped Python scalar, does not widen them), else the widest of all."""
    dimmed = [t for t in ts if t.shape] or list(ts)
    floats = [t.itemsize for t in dimmed if t.dtype in FLOAT_DTYPES]
    return max(floats) if floats else max(t.itemsize for t in dimmed)


@model("elementwise", *_ELEMENTWISE, *(f"{o}_" for o in _ELEMENTWISE), *_COMPARE, *(f"{o}_" for o in _COMPARE))
def elementwise(c: OpCall) -> Cost | None:
    """Reads each tensor input once (a broadcast input once at its own size), writes the broadcast shape.

    In-place ops (name ending in _) write their first input. Comparisons write bools.
    """
    ts = [x for x in c.inputs if isinstance(x, Tensor)]
    if not ts:
        return None
    op = c.name.removeprefix("aten::")
    if op.endswith("_"):
        out = ts[0].touched
    else:
        size = 1 if op.rstrip("_") in _COMPARE else _out_itemsize(ts)
        out = math.prod(broadcast_shape(*(t.shape for t in ts))) * size
    return Cost(_read(ts), out)


@model("elementwise", *_WRITE_ONLY)
def write_only(c: OpCall) -> Cost | None:
    """Fills and random initialisers write their (first) input and read nothing."""
    t = c.t(0)
    return None if t is None else Cost(0, t.touched)


@model("elementwise", "native_dropout")
def dropout(c: OpCall) -> Cost | None:
    """Reads x, writes the output and a bool mask."""
    x = c.t(0)
    return None if x is None else Cost(x.touched, x.nbytes + x.numel)


@model("copy", "copy_", "clone", "contiguous", "_to_copy", "_copy_from", "_copy_from_and_resize")
def copy(c: OpCall) -> Cost | None:
    """copy_(dst, src): reads src, writes dst, each at the sectors its strides touch.

    clone / contiguous / _to_copy(x, dtype): reads x, writes a dense copy (in the new dtype's size).
    """
    if c.name == "aten::copy_":
        dst, src = c.t(0), c.t(1)
        return None if dst is None or src is None else Cost(src.touched, dst.touched)
    x = c.t(0)
    if x is None:
        return None
    code = c.ints(1) if c.name == "aten::_to_copy" else None
    size = SCALAR_TYPE_BYTES.get(code[0], x.itemsize) if code else x.itemsize
    return Cost(x.touched, x.numel * size)


@model("copy", "cat", "stack")
def cat(c: OpCall) -> Cost | None:
    """Reads every tensor of the list, writes their concatenation."""
    ts = c.tensors(0)
    if not ts:
        return None
    n = sum(t.nbytes for t in ts)
    return Cost(n, n)


@model("copy", "index_select")
def index_select(c: OpCall) -> Cost | None:
    """index_select(x, dim, index): reads the selected slices (and the index), writes them."""
    x, idx, dim = c.t(0), c.t(2), c.ints(1)
    if x is None or idx is None or dim is None:
        return None
    d = dim[0] % max(len(x.shape), 1)
    n = x.numel // max(x.shape[d], 1) * idx.numel * x.itemsize if x.shape else x.itemsize * idx.numel
    return Cost(n + idx.nbytes, n)


@model("copy", "gather")
def gather(c: OpCall) -> Cost | None:
    """gather(x, dim, index): one element of x per index element; writes the index's shape."""
    x, idx = c.t(0), c.t(2)
    if x is None or idx is None:
        return None
    return Cost(idx.numel * x.itemsize + idx.touched, idx.numel * x.itemsize)


@model("copy", "scatter", "scatter_", "scatter_add", "scatter_add_")
def scatter(c: OpCall) -> Cost | None:
    """scatter(x, dim, index, src): reads index and src, writes one element of x per index element.

    The out-of-place forms also copy x first (a separate copy_ op in eager PyTorch).
    """
    x, idx, src = c.t(0), c.t(2), c.t(3)
    if x is None or idx is None:
        return None
    src_bytes = src.nbytes if src is not None else 0
    return Cost(idx.nbytes + src_bytes, idx.numel * x.itemsize)


@model("copy", "index_put_", "_index_put_impl_")
def index_put(c: OpCall) -> Cost | None:
    """index_put_(x, indices, values, accumulate): reads indices and values, writes one x element per value."""
    x, values = c.t(0), c.t(2)
    idx = c.tensors(1)
    if x is None or values is None:
        return None
    n = math.prod(broadcast_shape(*(t.shape for t in idx))) if idx else values.numel
    row = x.numel // max(math.prod(x.shape[:len(idx)]), 1) if idx else 1
    written = n * row * x.itemsize
    return Cost(values.nbytes + sum(t.nbytes for t in idx) + (written if c.flag(3) else 0), written)


# ---------------------------------------------------------------- reductions


def _reduced(x: Tensor, dims: list[int] | None) -> int:
    """Elements left after reducing dims of x (all of them when dims is None)."""
    if dims is None or not x.shape:
        return 1
    keep = set(range(len(x.shape))) - {d % len(x.shape) for d in dims}
    return math.prod(x.shape[d] for d in keep)


_REDUCE_DIM_ARG = {"sum": 1, "mean": 1, "amax": 1, "amin": 1, "prod": 1, "any": 1, "all": 1, "argmax": 1,
                   "argmin": 1, "logsumexp": 1, "std": 1, "var": 1, "var_mean": 1, "std_mean": 1, "max": 1,
                   "min": 1, "norm": 2, "linalg_vector_norm": 2, "nansum": 1}


@model("reduction", *_REDUCE_DIM_ARG)
def reduction(c: OpCall) -> Cost | None:
    """Reads x once, writes one element per kept position (values, and int64 indices for max/min along a dim)."""
    x = c.t(0)
    if x is None:
        return None
    op = c.name.removeprefix("aten::")
    dims = c.ints(_REDUCE_DIM_ARG[op])
    if op in ("max", "min") and dims is None:  # max(x): a full reduction; max(x, dim) also returns indices
        return Cost(x.touched, x.itemsize)
    out = _reduced(x, dims)
    per = x.itemsize + (8 if op in ("max", "min") else 0) + (x.itemsize if op.endswith("_mean") else 0)
    return Cost(x.touched, out * per)


@model("reduction", "_foreach_norm")
def foreach_norm(c: OpCall) -> Cost | None:
    """Reads every tensor of the list, writes one float each."""
    ts = c.tensors(0)
    return Cost(sum(t.nbytes for t in ts), 4 * len(ts)) if ts else None


# ---------------------------------------------------------------- normalization

_STATS = 4  # mean / rstd / invstd are kept in float32 (the accumulation type) for every input dtype


@model("layer_norm", "native_layer_norm")
def layer_norm(c: OpCall) -> Cost | None:
    """native_layer_norm(x, normalized_shape, w, b, eps): reads x, w, b; writes y and float mean and rstd per row."""
    x, shape = c.t(0), c.ints(1)
    if x is None or shape is None:
        return None
    rows = x.numel // max(math.prod(shape), 1)
    return Cost(x.touched + _read([c.t(2), c.t(3)]), x.nbytes + 2 * rows * _STATS)


@model("layer_norm", "native_layer_norm_backward")
def layer_norm_backward(c: OpCall) -> Cost | None:
    """native_layer_norm_backward(dy, x, shape, mean, rstd, w, b, mask).

    Two passes over dy and x: one kernel writes dx, another reduces dw and db (CUDA's
    layer_norm_grad_input and gamma/beta kernels).
    """
    dy, x, mean, rstd, w = c.t(0), c.t(1), c.t(3), c.t(4), c.t(5)
    if dy is None or x is None:
        return None
    stats = _read([mean, rstd])
    dw = 2 * w.nbytes if w is not None else 0
    dx_pass = dy.touched + x.touched + stats + (w.nbytes if w else 0) + x.nbytes
    dw_pass = dy.touched + x.touched + stats + dw
    return Cost(2 * (dy.touched + x.touched + stats) + (w.nbytes if w else 0), x.nbytes + dw,
                passes=(("[Gg]amma|[Bb]eta|compute_gradient|param", dw_pass), (".", dx_pass)))


@model("rms_norm", "_fused_rms_norm", "rms_norm")
def rms_norm(c: OpCall) -> Cost | None:
    """_fused_rms_norm(x, normalized_shape, w, eps): reads x and w, writes y and a float rstd per row."""
    x, shape = c.t(0), c.ints(1)
    if x is None or shape is None:
        return None
    rows = x.numel // max(math.prod(shape), 1)
    return Cost(x.touched + _read([c.t(2)]), x.nbytes + rows * _STATS)


@model("rms_norm", "_fused_rms_norm_backward")
def rms_norm_backward(c: OpCall) -> Cost | None:
    """_fused_rms_norm_backward(dy, x, shape, rstd, w, mask): like LayerNorm's backward with no mean and no bias."""
    dy, x, rstd, w = c.t(0), c.t(1), c.t(3), c.t(4)
    if dy is None or x is None:
        return None
    stats = _read([rstd])
    dw = w.nbytes if w is not None else 0
    return Cost(2 * (dy.touched + x.touched + stats) + dw, x.nbytes + dw,
                passes=(("[Gg]amma|compute_gradient|param", dy.touched + x.touched + stats + dw),
                        (".", dy.touched + x.touched + stats + dw + x.nbytes)))


def _channels(x: Tensor) -> int:
    return x.shape[1] if len(x.shape) > 1 else 1


# argument positions: (training flag or None when always training / never, position of x)
_BN_FORWARD = {"aten::native_batch_norm": 5, "aten::cudnn_batch_norm": 5, "aten::miopen_batch_norm": 5,
               "aten::_batch_norm_with_update": None, "aten::_native_batch_norm_legit": 5,
               "aten::_batch_norm_no_update": None}


@model("batch_norm", "native_batch_norm", "cudnn_batch_norm", "miopen_batch_norm", "_batch_norm_with_update",
       "_native_batch_norm_legit", "_batch_norm_no_update")
def batch_norm(c: OpCall) -> Cost | None:
    """BatchNorm forward (x, w, b, running_mean, running_var, training, ...).

    Training reads x twice (statistics, then normalisation: CUDA's collect_statistics and
    transform_input kernels) and writes y; per-channel statistics are negligible but counted.
    Inference reads x once and writes y.
    """
    x = c.t(0)
    if x is None:
        return None
    pos = _BN_FORWARD[c.name]
    training = c.name == "aten::_batch_norm_with_update" or (pos is not None and c.flag(pos))
    per_channel = _channels(x) * _STATS
    if not training:  # reads w, b, running mean and var
        return Cost(x.touched + 4 * per_channel, x.nbytes)
    stats = x.touched + 2 * per_channel  # writes save_mean, save_invstd
    transform = x.touched + 4 * per_channel + x.nbytes  # reads w, b, save_mean, save_invstd
    update = 4 * per_channel  # running mean and var, read and written
    return Cost(2 * x.touched + 6 * per_channel, x.nbytes + 4 * per_channel,
                passes=(("collect_statistics|reduce_statistics|welford|stats", stats),
                        ("transform_input|batch_norm_elemt", transform), (".", update)))


@model("batch_norm", "native_batch_norm_backward", "cudnn_batch_norm_backward", "miopen_batch_norm_backward",
       "batch_norm_backward")
def batch_norm_backward(c: OpCall) -> Cost | None:
    """BatchNorm backward: in training, one kernel reads dy and x (per-channel sums, grad_weight and grad_bias),
    a second reads both and writes dx.

    native_batch_norm_backward(dy, x, w, running_mean, running_var, save_mean, save_invstd, train, eps, mask);
    cudnn_batch_norm_backward(x, dy, ...); batch_norm_backward(dy, x, ..., update, eps, mask, reserve).
    Inference-mode backward reads dy once and writes dx.
    """
    first, second = (c.t(1), c.t(0)) if c.name in ("aten::cudnn_batch_norm_backward",
                                                   "aten::miopen_batch_norm_backward") else (c.t(0), c.t(1))
    dy, x = first, second
    if dy is None or x is None:
        return None
    training = c.flag(7, default=True) if c.name in ("aten::native_batch_norm_backward",
                                                     "aten::batch_norm_backward") else True
    per_channel = _channels(x) * _STATS
    if not training:
        return Cost(dy.touched + 3 * per_channel, x.nbytes + 2 * per_channel)
    # the reduce kernel reads the saved mean and invstd and writes two sums, grad_weight and grad_bias
    reduce = dy.touched + x.touched + 6 * per_channel
    elemt = dy.touched + x.touched + 5 * per_channel + x.nbytes  # reads w, mean, invstd and the sums; writes dx
    return Cost(2 * (dy.touched + x.touched) + 7 * per_channel, x.nbytes + 4 * per_channel,
                passes=(("backward_reduce|reduce", reduce), ("backward_elemt|elemt", elemt)))


@model("group_norm", "native_group_norm")
def group_norm(c: OpCall) -> Cost | None:
    """native_group_norm(x, w, b, N, C, HxW, group, eps): statistics pass over x, then x -> y."""
    x = c.t(0)
    if x is None:
        return None
    n, g = c.ints(3), c.ints(6)
    stats = 2 * (n[0] * g[0] if n and g else 0) * _STATS
    params = _read([c.t(1), c.t(2)])
    return Cost(2 * x.touched + params, x.nbytes + stats)


@model("group_norm", "native_group_norm_backward")
def group_norm_backward(c: OpCall) -> Cost | None:
    """native_group_norm_backward(dy, x, mean, rstd, w, N, C, HxW, group, mask): reads dy and x twice, writes dx."""
    dy, x = c.t(0), c.t(1)
    if dy is None or x is None:
        return None
    return Cost(2 * (dy.touched + x.touched) + _read([c.t(2), c.t(3), c.t(4)]), x.nbytes)


# ---------------------------------------------------------------- softmax


# CUDA's softmax kernels for rows too long for one warp's registers or a block's shared memory
# (cunn_SoftMaxForward / cunn_SoftMaxBackward, not their Smem forms) stream each row from memory once
# per pass: forward max, sum of exponentials, then the output; backward the sum of gradients, then the output
SOFTMAX_MULTIPASS_FORWARD = r"(^|::)cunn_SoftMaxForward$"
SOFTMAX_MULTIPASS_BACKWARD = r"(^|::)cunn_SoftMaxBackward$"


@model("softmax", "_softmax", "_log_softmax")
def softmax(c: OpCall) -> Cost | None:
    """_softmax(x, dim, half_to_float): reads x, writes y (float32 when half_to_float).

    Rows read once (softmax_warp_forward, cunn_SoftMaxForwardSmem); three times by the multi-pass
    cunn_SoftMaxForward (max, sum of exponentials, output).
    """
    x = c.t(0)
    if x is None:
        return None
    out = x.numel * (4 if c.flag(2) else x.itemsize)
    return Cost(x.touched, out, variants=((SOFTMAX_MULTIPASS_FORWARD, 3 * x.touched + out),))


@model("softmax", "_softmax_backward_data", "_log_softmax_backward_data")
def softmax_backward(c: OpCall) -> Cost | None:
    """_softmax_backward_data(grad_out, out, dim, input_dtype): reads both, writes grad_in in input_dtype.

    The multi-pass cunn_SoftMaxBackward reads grad_out twice (its row sum, then the output).
    """
    g, y = c.t(0), c.t(1)
    if g is None or y is None:
        return None
    code = c.ints(3)
    size = SCALAR_TYPE_BYTES.get(code[0], g.itemsize) if code else g.itemsize
    out = g.numel * size
    return Cost(g.touched + y.touched, out, variants=((SOFTMAX_MULTIPASS_BACKWARD, 2 * g.touched + y.touched + out),))


# ---------------------------------------------------------------- embedding


@model("embedding", "embedding")
def embedding(c: OpCall) -> Cost | None:
    """embedding(weight, indices): reads the rows the indices touch (one per index) and the indices, writes them."""
    w, idx = c.t(0), c.t(1)
    if w is None or idx is None or len(w.shape) != 2:
        return None
    rows = idx.numel * w.shape[1] * w.itemsize
    return Cost(rows + idx.nbytes, rows)


EMBEDDING_FEATURE_MAX_INDICES = 3072  # CUDA embedding backward: up to this many indices, one feature kernel


def distinct_rows(n: int, rows: int) -> float:
    """Expected distinct rows among n indices drawn uniformly from `rows`: rows · (1 − (1 − 1/rows)^n)."""
    return rows * -math.expm1(n * math.log1p(-1.0 / rows)) if rows > 1 else float(min(n, rows))


@model("embedding", "embedding_dense_backward")
def embedding_backward(c: OpCall) -> Cost | None:
    """embedding_dense_backward(grad, indices, num_weights, padding_idx, scale_grad_by_freq).

    Up to EMBEDDING_FEATURE_MAX_INDICES indices (and no scale_grad_by_freq), PyTorch's CUDA backward
    is one kernel (embedding_backward_feature_kernel): it reads grad and the indices and writes a
    row per index. With more, it sorts the indices, and `compute_grad_weight` sums the grad rows of
    each segment of equal indices into fp32 partial sums (one row of the accumulate type per
    segment; a segment is split every 10 repeats, ignored here), which `sum_and_scatter` reads back
    and writes into the weight gradient's rows. The segments are the distinct indices: their count
    is not recorded, so it is the expectation for indices drawn uniformly from the num_weights rows
    (distinct_rows; repeated real text has fewer). The sort and segment kernels move the indices
    and the segment offsets. The zero fill of the full weight gradient is a separate fill_ op.
    """
    g, idx = c.t(0), c.t(1)
    if g is None or idx is None:
        return None
    simple = Cost(g.touched + idx.nbytes, g.nbytes)
    weights = c.ints(2)
    n = idx.numel
    if not weights or n == 0 or (n <= EMBEDDING_FEATURE_MAX_INDICES and not c.flag(4)):
        return simple
    dim = g.numel // n
    seg = distinct_rows(n, weights[0])
    acc = 8 if g.itemsize == 8 else 4  # at::acc_type: fp32 for bf16, fp16 and fp32
    grad = (g.touched + n * 8 + 2 * seg * 8, seg * dim * acc)  # (read, write)
    scatter = (seg * dim * acc + 2 * seg * 8, seg * dim * g.itemsize)
    sort = (idx.nbytes + 2 * n * 8, 2 * n * 8 + 2 * seg * 8)  # sorted indices and positions; segment offsets
    return Cost(grad[0] + scatter[0] + sort[0], grad[1] + scatter[1] + sort[1],
                passes=(("compute_grad_weight", sum(grad)), ("sum_and_scatter", sum(scatter)), (".", sum(sort))))


def _bags(c: OpCall, offsets: Tensor) -> int:
    return max(offsets.numel - (1 if c.flag(7) else 0), 0)


@model("embedding_bag", "_embedding_bag", "_embedding_bag_forward_only", "embedding_bag")
def embedding_bag(c: OpCall) -> Cost | None:
    """_embedding_bag(weight, indices, offsets, scale_grad, mode, sparse, per_sample_weights, include_last_offset, ...).

    Reads one weight row per index (rows actually touched, counting repeats), the indices, the offsets
    and the per-sample weights; writes one row per bag.
    """
    w, idx, off = c.t(0), c.t(1), c.t(2)
    if w is None or idx is None or off is None or len(w.shape) != 2:
        return None
    row = w.shape[1] * w.itemsize
    return Cost(idx.numel * row + idx.nbytes + off.nbytes + _read([c.t(6)]), _bags(c, off) * row)


@model("embedding_bag", "_embedding_bag_backward", "_embedding_bag_dense_backward")
def embedding_bag_backward(c: OpCall) -> Cost | None:
    """_embedding_bag_dense_backward(grad, indices, offset2bag, bag_size, ...): reads a grad row per index, writes it."""
    g, idx = c.t(0), c.t(1)
    if g is None or idx is None or len(g.shape) != 2:
        return None
    row = g.shape[1] * g.itemsize
    return Cost(idx.numel * row + idx.nbytes + _read([c.t(2), c.t(3)]), idx.numel * row)


# ---------------------------------------------------------------- optimizer


@model("optimizer", "_fused_adam_", "_fused_adamw_")
def fused_adam(c: OpCall) -> Cost | None:
    """_fused_adam_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2,
    weight_decay, eps, amsgrad, ...): reads p, g, m, v (and max_v with amsgrad), writes p, m, v (and
    max_v). The one-element step counters are not counted."""
    p, g, m, v = (c.tensors(i) for i in range(4))
    mx = c.tensors(4) if c.flag(11) else ()
    if not p:
        return None
    n = lambda ts: sum(t.nbytes for t in ts)  # noqa: E731
    return Cost(n(p) + n(g) + n(m) + n(v) + n(mx), n(p) + n(m) + n(v) + n(mx))


@model("optimizer", "_fused_sgd_")
def fused_sgd(c: OpCall) -> Cost | None:
    """_fused_sgd_(params, grads, momentum_buffers, weight_decay, momentum, ...): reads p, g (and, with a
    momentum, its buffers), writes p (and them)."""
    p, g = c.tensors(0), c.tensors(1)
    m = () if c.value(4).strip() in ("0", "0.0") else c.tensors(2)
    if not p:
        return None
    n = lambda ts: sum(t.nbytes for t in ts)  # noqa: E731
    return Cost(n(p) + n(g) + n(m), n(p) + n(m))


_FOREACH = re.compile(r"^aten::_foreach_\w+$")


def foreach(c: OpCall) -> Cost | None:
    """_foreach_OP(list, [list | tensor | scalar] ...): reads every tensor input, writes the first list
    (in place, OP_) or a new list of its shapes."""
    lists = [x for x in c.inputs if isinstance(x, tuple)]
    if not lists:
        return None
    first = lists[0]
    read = sum(t.nbytes for ts in lists for t in ts) + _read([x for x in c.inputs if isinstance(x, Tensor)])
    return Cost(read, sum(t.nbytes for t in first))


# ---------------------------------------------------------------- losses


@model("loss", "nll_loss_forward", "nll_loss2d_forward")
def nll_loss(c: OpCall) -> Cost | None:
    """nll_loss_forward(log_probs, target, ...): reads the targets and one element (a 32-byte sector) per target."""
    x, target = c.t(0), c.t(1)
    if x is None or target is None:
        return None
    return Cost(target.nbytes + min(target.numel * SECTOR, x.nbytes), 2 * x.itemsize)


@model("loss", "nll_loss_backward", "nll_loss2d_backward")
def nll_loss_backward(c: OpCall) -> Cost | None:
    """nll_loss_backward(grad, log_probs, target, ...): writes one element per target (the zero fill of
    grad_input is a separate fill_ op), reads the targets."""
    x, target = c.t(1), c.t(2)
    if x is None or target is None:
        return None
    return Cost(target.nbytes + x.itemsize, min(target.numel * SECTOR, x.nbytes))


@model("loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
       "binary_cross_entropy_with_logits")
def pointwise_loss(c: OpCall) -> Cost | None:
    """loss(x, y, [weight, ...], reduction): reads the tensor inputs, writes x's size (reduction none) or a scalar."""
    ts = [x for x in c.inputs if isinstance(x, Tensor)]
    if len(ts) < 2:
        return None
    reduction = c.ints(len(c.inputs) - 1)
    none = reduction == [0]
    return Cost(_read(ts), ts[0].nbytes if none else ts[0].itemsize)


@model("loss", "mse_loss_backward", "l1_loss_backward", "smooth_l1_loss_backward", "huber_loss_backward",
       "binary_cross_entropy_backward")
def pointwise_loss_backward(c: OpCall) -> Cost | None:
    """loss_backward(grad, x, y, ...): reads the tensor inputs, writes x's size."""
    ts = [x for x in c.inputs if isinstance(x, Tensor)]
    x = c.t(1)
    return None if x is None else Cost(_read(ts), x.nbytes)


# ---------------------------------------------------------------- pooling


def _pool_out(size: int, k: int, s: int, p: int, d: int = 1, ceil: bool = False) -> int:
    num = size + 2 * p - d * (k - 1) - 1
    out = (-(-num // s) if ceil else num // s) + 1
    if ceil and (out - 1) * s >= size + p:
        out -= 1
    return out


def _pool_spatial(c: OpCall, x: Tensor, k_i: int, s_i: int, p_i: int, d_i: int | None, ceil_i: int) -> list[int]:
    nd = len(c.ints(k_i) or [])
    k = c.ints(k_i) or []
    s = c.ints(s_i) or k
    p = c.ints(p_i) or [0]
    d = (c.ints(d_i) if d_i is not None else None) or [1]
    def at(v: list[int], i: int) -> int:
        return v[i] if len(v) > i else v[0]
    spatial = x.shape[-nd:]
    return [_pool_out(spatial[i], at(k, i), at(s, i), at(p, i), at(d, i), c.flag(ceil_i)) for i in range(nd)]


@model("pooling", "max_pool2d_with_indices", "max_pool3d_with_indices", "avg_pool2d", "avg_pool3d")
def pooling(c: OpCall) -> Cost | None:
    """max_pool2d_with_indices(x, kernel, stride, padding, dilation, ceil_mode): reads x, writes y and int64 indices.

    avg_pool2d(x, kernel, stride, padding, ceil_mode, ...): reads x, writes y.
    """
    x = c.t(0)
    if x is None:
        return None
    is_max = "max_pool" in c.name
    out_sp = _pool_spatial(c, x, 1, 2, 3, 4 if is_max else None, 5 if is_max else 4)
    out = math.prod(x.shape[: len(x.shape) - len(out_sp)]) * math.prod(out_sp)
    return Cost(x.touched, out * (x.itemsize + (8 if is_max else 0)))


@model("pooling", "max_pool2d_with_indices_backward", "max_pool3d_with_indices_backward")
def max_pool_backward(c: OpCall) -> Cost | None:
    """max_pool2d_with_indices_backward(grad, x, ..., indices): reads grad and indices, writes grad_input (x's size)."""
    g, x, idx = c.t(0), c.t(1), c.t(7)
    if g is None or x is None:
        return None
    return Cost(g.touched + (idx.nbytes if idx else 0), x.nbytes)


@model("pooling", "avg_pool2d_backward", "avg_pool3d_backward", "_adaptive_avg_pool2d_backward",
       "_adaptive_avg_pool3d_backward")
def avg_pool_backward(c: OpCall) -> Cost | None:
    """avg_pool2d_backward(grad, x, ...) / _adaptive_avg_pool2d_backward(grad, x): reads grad, writes x's size."""
    g, x = c.t(0), c.t(1)
    return None if g is None or x is None else Cost(g.touched, x.nbytes)


@model("pooling", "_adaptive_avg_pool2d", "_adaptive_avg_pool3d", "adaptive_max_pool2d")
def adaptive_pool(c: OpCall) -> Cost | None:
    """_adaptive_avg_pool2d(x, output_size): reads x, writes N x C x output_size."""
    x, size = c.t(0), c.ints(1)
    if x is None or size is None:
        return None
    out = math.prod(x.shape[: len(x.shape) - len(size)]) * math.prod(size)
    return Cost(x.touched, out * (x.itemsize + (8 if "max" in c.name else 0)))


# ---------------------------------------------------------------- GEMM


def _gemm(a: Tensor, b: Tensor, extra_read: int = 0, out_itemsize: int | None = None) -> Cost:
    *batch_a, m, k = a.shape
    n = b.shape[-1]
    if b.shape[-2] != k:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    batch = math.prod(broadcast_shape(batch_a, b.shape[:-2]))
    out = batch * m * n * (out_itemsize or a.itemsize)
    return Cost(a.touched + b.touched + extra_read, out, 2.0 * batch * m * n * k, PEAK_DTYPE.get(a.dtype, ""))


@model("gemm", "mm", "bmm", "matmul")
def mm(c: OpCall) -> Cost | None:
    """mm(a [M, K], b [K, N]) and bmm(a [B, M, K], b [B, K, N]): 2·B·M·N·K FLOPs; reads a and b, writes c."""
    a, b = c.t(0), c.t(1)
    if a is None or b is None or len(a.shape) < 2 or len(b.shape) < 2:
        return None
    return _gemm(a, b)


@model("gemm", "addmm", "baddbmm", "addbmm")
def addmm(c: OpCall) -> Cost | None:
    """addmm(bias, a, b, beta, alpha): a GEMM that also reads the bias."""
    bias, a, b = c.t(0), c.t(1), c.t(2)
    if a is None or b is None:
        return None
    return _gemm(a, b, bias.touched if bias is not None else 0)


@model("gemm", "linear")
def linear(c: OpCall) -> Cost | None:
    """linear(x [..., K], w [N, K], b): 2·M·N·K FLOPs with M the product of x's leading dimensions."""
    x, w = c.t(0), c.t(1)
    if x is None or w is None or len(w.shape) != 2:
        return None
    m = x.numel // max(x.shape[-1], 1)
    a = Tensor((m, x.shape[-1]), x.itemsize, None, x.dtype)
    wt = Tensor((w.shape[1], w.shape[0]), w.itemsize, None, w.dtype)
    return _gemm(a, wt, _read([c.t(2)]))


@model("gemm", "_scaled_mm")
def scaled_mm(c: OpCall) -> Cost | None:
    """_scaled_mm(a, b, scale_a, scale_b, bias, scale_result, out_dtype, ...): an fp8 GEMM written in out_dtype."""
    a, b = c.t(0), c.t(1)
    if a is None or b is None:
        return None
    code = c.ints(6)
    out = SCALAR_TYPE_BYTES.get(code[0], 2) if code else 2
    return _gemm(a, b, _read([c.t(2), c.t(3), c.t(4)]), out)


# ---------------------------------------------------------------- convolution

# op -> positions of (stride, padding, dilation, transposed, groups); None: not an argument of that op
_CONV_ARGS = {
    "aten::convolution": (3, 4, 5, 6, 8), "aten::_convolution": (3, 4, 5, 6, 8),
    "aten::cudnn_convolution": (3, 2, 4, None, 5), "aten::miopen_convolution": (4, 3, 5, None, 6),
    "aten::mkldnn_convolution": (4, 3, 5, None, 6), "aten::cudnn_convolution_transpose": (4, 2, 5, True, 6),
    "aten::miopen_convolution_transpose": (5, 3, 6, True, 7),
    "aten::conv1d": (3, 4, 5, None, 6), "aten::conv2d": (3, 4, 5, None, 6), "aten::conv3d": (3, 4, 5, None, 6),
}


def _conv_flops(out_numel: int, w: Tensor) -> float:
    """2 · output elements · (input channels per group) · kernel volume; w is [C_out, C_in/g, k...]."""
    return 2.0 * out_numel * math.prod(w.shape[1:])


@model("conv", *(o.removeprefix("aten::") for o in _CONV_ARGS))
def convolution(c: OpCall) -> Cost | None:
    """Convolution forward: 2·N·C_out·prod(out spatial)·(C_in/groups)·prod(kernel) FLOPs; reads x and w, writes y.

    Transposed convolutions count the same products from the input side: 2·numel(x)·(C_out/groups)·prod(kernel).
    """
    x, w = c.t(0), c.t(1)
    if x is None or w is None or len(x.shape) < 3:
        return None
    si, pi, di, ti, gi = _CONV_ARGS[c.name]
    nd = len(x.shape) - 2
    transposed = ti is True or (isinstance(ti, int) and c.flag(ti))
    groups = (c.ints(gi) or [1])[0]
    stride, pad, dil = (c.ints(si) or [1]), (c.ints(pi) or [0]), (c.ints(di) or [1])
    at = lambda v, i: v[i] if len(v) > i else v[0]  # noqa: E731
    bias = c.t(2) if c.name not in ("aten::cudnn_convolution", "aten::cudnn_convolution_transpose") else None
    dt = PEAK_DTYPE.get(x.dtype, "")
    if transposed:
        c_out = w.shape[1] * groups
        out_sp = [(x.shape[2 + i] - 1) * at(stride, i) - 2 * at(pad, i) + at(dil, i) * (w.shape[2 + i] - 1) + 1
                  for i in range(nd)]
        out = x.shape[0] * c_out * math.prod(out_sp)
        return Cost(x.touched + w.touched + _read([bias]), out * x.itemsize,
                    2.0 * x.numel * w.shape[1] * math.prod(w.shape[2:]), dt)
    out_sp = [_pool_out(x.shape[2 + i], w.shape[2 + i], at(stride, i), at(pad, i), at(dil, i)) for i in range(nd)]
    out = x.shape[0] * w.shape[0] * math.prod(out_sp)
    return Cost(x.touched + w.touched + _read([bias]), out * x.itemsize, _conv_flops(out, w), dt)


@model("conv", "convolution_backward")
def convolution_backward(c: OpCall) -> Cost | None:
    """convolution_backward(dy, x, w, bias_sizes, stride, padding, dilation, transposed, output_padding, groups,
    output_mask): the forward's FLOPs (from dy's size) once for dx and once for dw, as output_mask asks.

    Reads dy, x and w; writes dx, dw (and db) as asked.
    """
    dy, x, w = c.t(0), c.t(1), c.t(2)
    if dy is None or x is None or w is None:
        return None
    mask = [v.strip() == "True" for v in c.value(10).strip("[]").split(",")] if c.value(10) else [True, True, True]
    mask += [False] * (3 - len(mask))
    # transposed: the forward multiplies every input element by C_out/g · kernel volume
    fwd = 2.0 * x.numel * math.prod(w.shape[1:]) if c.flag(7) else _conv_flops(dy.numel, w)
    flops = fwd * (mask[0] + mask[1])
    db = mask[2] * (dy.shape[1] if len(dy.shape) > 1 else 0) * dy.itemsize
    write = mask[0] * x.nbytes + mask[1] * w.nbytes + db
    read = dy.touched + (x.touched if mask[1] else 0) + (w.touched if mask[0] else 0)
    return Cost(read, write, flops, PEAK_DTYPE.get(dy.dtype, ""))


# ---------------------------------------------------------------- attention

# op -> (index of q, layout "bhsd" or "bshd", index of is_causal or of custom_mask_type, backward)
_ATTENTION = {
    "aten::_scaled_dot_product_flash_attention": (0, "bhsd", 4, False),
    "aten::_scaled_dot_product_efficient_attention": (0, "bhsd", 6, False),
    "aten::_scaled_dot_product_cudnn_attention": (0, "bhsd", 6, False),
    "aten::_scaled_dot_product_flash_attention_for_cpu": (0, "bhsd", 4, False),
    "aten::_flash_attention_forward": (0, "bshd", 8, False),
    "aten::_efficient_attention_forward": (0, "bshd", 9, False),
    "aten::_scaled_dot_product_flash_attention_backward": (1, "bhsd", 11, True),
    "aten::_scaled_dot_product_efficient_attention_backward": (1, "bhsd", 11, True),
    "aten::_scaled_dot_product_cudnn_attention_backward": (1, "bhsd", 14, True),
    "aten::_scaled_dot_product_flash_attention_for_cpu_backward": (1, "bhsd", 6, True),
    "aten::_flash_attention_backward": (1, "bshd", 11, True),
    "aten::_efficient_attention_backward": (1, "bshd", 14, True),
}
_MASK_TYPE = {"aten::_efficient_attention_forward", "aten::_efficient_attention_backward"}  # custom_mask_type
BACKWARD_FLOPS_FACTOR = 2.5  # backward = 5 matmuls of the forward's 2 (S recomputed, dP, dV, dQ, dK)


def causal_pairs(sq: int, sk: int) -> int:
    """(query, key) pairs a causal mask keeps, top-left aligned as torch's is_causal: row i sees keys 0..i."""
    if sq <= sk:
        return sq * (sq + 1) // 2
    return sk * (sk + 1) // 2 + (sq - sk) * sk


@model("attention", *(o.removeprefix("aten::") for o in _ATTENTION))
def attention(c: OpCall) -> Cost | None:
    """Fused attention: 2·B·H·(kept query-key pairs)·(D_qk + D_v) FLOPs forward, 2.5× that backward.

    Forward reads q, k, v (and a bias) and writes the output and a float log-sum-exp per query row;
    backward reads dO, q, k, v, O and the log-sum-exp and writes dq, dk, dv. H is the number of query
    heads (grouped-query attention shares K and V heads, reading them once).
    """
    qi, layout, ci, backward = _ATTENTION[c.name]
    q, k, v = c.t(qi), c.t(qi + 1), c.t(qi + 2)
    if q is None or k is None or v is None or len(q.shape) != 4:
        return None
    if layout == "bhsd":
        b, h, sq, d = q.shape
        sk, dv = k.shape[2], v.shape[3]
    else:
        b, sq, h, d = q.shape
        sk, dv = k.shape[1], v.shape[3]
    causal = (c.ints(ci) or [0])[0] != 0 if c.name in _MASK_TYPE else c.flag(ci)
    pairs = causal_pairs(sq, sk) if causal else sq * sk
    fwd = 2.0 * b * h * pairs * (d + dv)
    out = b * h * sq * dv * q.itemsize
    lse = b * h * sq * _STATS
    dt = PEAK_DTYPE.get(q.dtype, "")
    if not backward:
        bias = c.t(3) if "efficient" in c.name or "cudnn" in c.name else None
        return Cost(q.touched + k.touched + v.touched + _read([bias]), out + lse, fwd, dt)
    read = 2 * out + q.touched + k.touched + v.touched + lse  # dO and O, q, k, v, lse
    return Cost(read, q.nbytes + k.nbytes + v.nbytes, BACKWARD_FLOPS_FACTOR * fwd, dt)


def model_of(op: str) -> OpModel | None:
    """The model covering an op name, including the _foreach_ family."""
    m = MODELS.get(op)
    if m is None and _FOREACH.match(op):
        m = OpModel("optimizer", (op,), foreach)
    return m


def cost(call: OpCall) -> Cost | None:
    """The op's Cost, or None when it has no model (foreach ops included) or its record lacks what the model needs."""
    m = model_of(call.name)
    if m is None:
        return None
    try:
        return m.fn(call)
    except (IndexError, ValueError, TypeError, ZeroDivisionError, AttributeError):
        return None
