"""Recording module scopes, and each module's external inputs and outputs.

`module_scopes(model)` registers global forward pre- and post-hooks that open a
torch.profiler record_function range named `nn.Module: <qualname> (<Class>)` around each
module's forward (the model's own qualified names; the model itself is ""), and removes them on
exit. `addressable profile` wraps only its profiled steps in it, so timed steps run without
hooks. addressable/classify/modules.py reads the ranges back from the trace.

`module_cpu(model)` times each module's forward CPU dispatch with perf_counter alone, outside the
profiler (module_cpu.csv: the CPU time a trace shows inflated by the profiler's per-op cost), and
`module_backward_cpu(model)` the CPU of the autograd nodes each module's forward created.

`module_io(model)` records, for one step outside the profiled ones, the bytes each module call
reads and writes at its boundary (docs/roofline.md, "Fusion headroom"): the traffic a single fused
kernel for the module must still move, named like the scopes so the roofline can join the two.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import torch
from torch.nn.modules import module as nn_module
from torch.utils import _pytree as pytree

from addressable.runs.folder import BACKWARD_CPU_COLUMNS, DTYPE_COLUMNS, MODULE_CPU_COLUMNS

PREFIX = "nn.Module: "
IO_COLUMNS = ["module", "class", "calls", "input_bytes", "output_bytes", "param_bytes", "forward_bytes",
              "backward_bytes", "complete"]
GATHER_MODULES = (torch.nn.Embedding, torch.nn.EmbeddingBag)  # read only the weight rows their indices name


def scope_name(qualname: str, cls: str) -> str:
    """The range name of one module call, e.g. `nn.Module: h.0.mlp (GPT2MLP)`."""
    return f"{PREFIX}{qualname} ({cls})"


class _Names:
    """Qualified names of module calls, the same for scopes and I/O records; one open-call stack per thread.

    Modules of `model` are named by their qualified name in it. Other modules (a loss module
    called outside the model, or every module when no model is given) are named after their
    top-level module's class, e.g. `CrossEntropyLoss`, `Sequential.0.lin`; a module that is no
    registered child of its caller is `<caller>.<Class>`.
    """

    def __init__(self, model: torch.nn.Module | None) -> None:
        self.names: dict[int, str] = {id(m): q for q, m in model.named_modules()} if model is not None else {}
        self.local = threading.local()

    def stack(self) -> list[Any]:
        if not hasattr(self.local, "stack"):
            self.local.stack = []
        return self.local.stack

    def name(self, module: torch.nn.Module) -> str:
        """The qualified name of a module call about to open."""
        open_ = self.stack()
        q = self.names.get(id(module))
        if q is None:
            if open_:
                q = f"{open_[-1][0]}.{type(module).__name__}" if open_[-1][0] else type(module).__name__
            else:
                top = type(module).__name__
                self.names.update({id(m): f"{top}.{n}" if n else top for n, m in module.named_modules()})
                q = top
        return q


@contextmanager
def module_scopes(model: torch.nn.Module | None = None) -> Iterator[None]:
    """Open a profiler range around every nn.Module forward while the block runs (names: see _Names)."""
    names = _Names(model)

    def pre(module: torch.nn.Module, args: Any) -> None:
        q = names.name(module)
        rf = torch.profiler.record_function(scope_name(q, type(module).__name__))
        rf.__enter__()
        names.stack().append((q, rf))

    def post(module: torch.nn.Module, args: Any, output: Any) -> None:
        open_ = names.stack()
        if open_:
            open_.pop()[1].__exit__(None, None, None)

    handles = [nn_module.register_module_forward_pre_hook(pre),
               nn_module.register_module_forward_hook(post, always_call=True)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


# ---------------------------------------------------------------------------------------------
# External inputs and outputs of each module call


def call_tensors(obj: Any, depth: int = 0) -> Iterator[torch.Tensor]:
    """The tensors in a module's arguments or output: through tuples, lists and dicts (Hugging Face
    ModelOutput is a dict); other objects (a KV cache object, a dataclass) are not looked into."""
    if isinstance(obj, torch.Tensor):
        yield obj
    elif depth < 8 and isinstance(obj, tuple | list):
        for x in obj:
            yield from call_tensors(x, depth + 1)
    elif depth < 8 and isinstance(obj, dict):
        for x in obj.values():
            yield from call_tensors(x, depth + 1)


def tensor_bytes(t: torch.Tensor) -> int:
    """Bytes of the distinct elements a tensor view holds: a broadcast (stride-0) dimension counts once; a
    sparse COO tensor is its indices and values. Other layouts raise TypeError."""
    if t.layout == torch.sparse_coo:
        return tensor_bytes(t._indices()) + tensor_bytes(t._values())
    if t.layout != torch.strided:
        raise TypeError(f"no byte count for a {t.layout} tensor")
    n = 1
    for size, stride in zip(t.shape, t.stride(), strict=True):
        n *= size if stride != 0 else min(size, 1)
    return n * t.element_size()


def _key(t: torch.Tensor) -> tuple:
    """One view of one storage: the same tensor passed twice counts once (a tensor without a plain storage,
    e.g. a DTensor or a nested tensor, is its own key)."""
    try:
        storage = t.untyped_storage().data_ptr() if t.layout == torch.strided else id(t)
    except (RuntimeError, NotImplementedError):
        storage = id(t)
    return storage, t.storage_offset() if storage != id(t) else 0, tuple(t.shape), \
        tuple(t.stride()) if storage != id(t) else (), t.dtype


def _versions(obj: Any) -> dict[tuple, int]:
    """Version counters of the tensors in a call's arguments (inference tensors have none)."""
    try:
        return {_key(t): t._version for t in call_tensors(obj) if not t.is_inference()}
    except (RuntimeError, NotImplementedError):  # a tensor subclass without one: in-place writes go unseen
        return {}


@dataclass
class _Call:
    """One open module call: its name, its positional inputs' version counters, and the parameters read inside."""

    qualname: str
    versions: dict[tuple, int]
    params: dict[int, int] = field(default_factory=dict)  # id(parameter) -> bytes read (dense: once per call)
    gathered: dict[int, int] = field(default_factory=dict)  # id(weight) -> bytes of the rows gathered
    grads: dict[int, int] = field(default_factory=dict)  # id(parameter) -> gradient bytes written


class ModuleIO:
    """Bytes read and written at each module's boundary, summed over the calls of one step (see module_io)."""

    def __init__(self, model: torch.nn.Module | None) -> None:
        self.names = _Names(model)
        self.rows: dict[tuple[str, str], list[int]] = {}
        self.incomplete: set[tuple[str, str]] = set()  # modules with a tensor of a layout we cannot count

    def table(self) -> pd.DataFrame:
        """IO_COLUMNS, one row per module (qualified name as the scopes name it); `complete` is False for a
        module with a tensor whose bytes cannot be counted (a layout other than strided or sparse COO)."""
        rows = [(q, c, *v, (q, c) not in self.incomplete) for (q, c), v in self.rows.items()]
        df = pd.DataFrame(rows, columns=["module", "class", "calls", "input_bytes", "output_bytes", "param_bytes",
                                         "backward_bytes", "complete"])
        df["forward_bytes"] = df["input_bytes"] + df["output_bytes"] + df["param_bytes"]
        return df[IO_COLUMNS]

    def pre(self, module: torch.nn.Module, args: Any) -> None:
        q = self.names.name(module)
        self.names.stack().append((q, _Call(q, _versions(args))))

    def pre_kwargs(self, module: torch.nn.Module, args: Any, kwargs: Any) -> None:
        """The keyword arguments' version counters (a model's modules only: global hooks see no kwargs)."""
        open_ = self.names.stack()
        if open_:
            open_[-1][1].versions.update(_versions(kwargs))

    def post(self, module: torch.nn.Module, args: Any, kwargs: Any, output: Any) -> None:
        open_ = self.names.stack()
        if not open_:
            return
        call: _Call = open_.pop()[1]
        key = (call.qualname, type(module).__name__)
        row = self.rows.setdefault(key, [0] * 5)
        try:
            counts = self._count(module, call, args, kwargs, output)
        except (TypeError, RuntimeError, NotImplementedError):  # a tensor without a byte count: record incomplete
            self.incomplete.add(key)
            counts = (1, 0, 0, 0, 0)
        for i, v in enumerate(counts):
            row[i] += v
        if open_:  # what a call reads, every call it is inside reads too
            parent: _Call = open_[-1][1]
            for p, b in call.params.items():
                parent.params[p] = max(parent.params.get(p, 0), b)
            for p, b in call.gathered.items():
                parent.gathered[p] = parent.gathered.get(p, 0) + b
            for p, b in call.grads.items():
                parent.grads[p] = parent.grads.get(p, 0) + b if p in call.gathered else max(parent.grads.get(p, 0), b)

    def _count(self, module: torch.nn.Module, call: _Call, args: Any, kwargs: Any, output: Any
               ) -> tuple[int, int, int, int, int]:
        """(1 call, input bytes, output bytes, parameter bytes, backward bytes) of one call."""
        inputs = {_key(t): t for t in call_tensors((args, kwargs))}
        outputs = {_key(t): t for t in call_tensors(output)}
        base = {k[0]: k for k in inputs}  # storage -> an input view of it

        def changed(k: tuple, t: torch.Tensor) -> bool:  # written in place during the call
            if t.is_inference():  # no version counter: an input returned as itself was updated in place
                return k in outputs and inputs.get(k) is t
            before = call.versions.get(k, call.versions.get(base.get(k[0], k)))  # else the input view's
            return before is not None and t._version != before

        # written: new outputs, outputs that share an input's storage only if changed in place (not a
        # view of it), and inputs changed in place
        written = {k: tensor_bytes(t) for k, t in outputs.items() if k[0] not in base or changed(k, t)}
        written.update({k: tensor_bytes(t) for k, t in inputs.items() if changed(k, t)})
        self._params(module, call, inputs)
        read = sum(tensor_bytes(t) for t in inputs.values())
        params = sum(call.params.values())
        backward = 0
        if torch.is_grad_enabled() and any(t.requires_grad for t in outputs.values()):
            # read: grad_output, the saved inputs, the dense parameters; written: grad_input, parameter grads
            backward = sum(tensor_bytes(t) for t in outputs.values() if t.requires_grad) + read + params + \
                sum(tensor_bytes(t) for t in inputs.values() if t.requires_grad) + sum(call.grads.values())
        return 1, read, sum(written.values()), params + sum(call.gathered.values()), backward

    def _params(self, module: torch.nn.Module, call: _Call, inputs: dict[tuple, torch.Tensor]) -> None:
        """Parameters and buffers this call reads (a gather module: the rows its indices name) and the
        gradients it writes (a sparse embedding: the rows; else the whole parameter)."""
        gather_weights = {id(m.weight) for m in module.modules() if isinstance(m, GATHER_MODULES)}
        for p in (*module.parameters(), *module.buffers()):
            if id(p) in gather_weights or p.layout != torch.strided:
                continue
            call.params[id(p)] = tensor_bytes(p)
            if p.requires_grad:
                call.grads[id(p)] = tensor_bytes(p)
        if isinstance(module, GATHER_MODULES):
            w = module.weight
            indices = [t for t in inputs.values() if not t.is_floating_point()]
            rows = max((t.numel() for t in indices), default=0)  # EmbeddingBag: the indices, not the offsets
            row_bytes = w.shape[1] * w.element_size() if w.dim() == 2 else 0
            call.gathered[id(w)] = rows * row_bytes
            if w.requires_grad:
                call.grads[id(w)] = rows * row_bytes if module.sparse else tensor_bytes(w)


@contextmanager
def module_io(model: torch.nn.Module | None = None) -> Iterator[ModuleIO]:
    """Record every module call's external I/O while the block runs; read `.table()` after it.

    Per call: input bytes (tensor arguments, keyword ones included, each view once), output bytes
    (returned tensors other than unchanged views of an input, plus inputs changed in place),
    parameter and buffer bytes (the call's and its submodules' parameters, each once per call;
    Embedding/EmbeddingBag weights only at the rows their indices name). When autograd records the
    call (grad enabled, an output requires grad), its backward bytes are modelled from the same
    shapes: grad_output, the saved inputs and the parameters read; grad_input (inputs that require
    grad) and the parameter gradients written.
    """
    rec = ModuleIO(model)
    handles = [nn_module.register_module_forward_pre_hook(rec.pre),
               nn_module.register_module_forward_hook(rec.post, with_kwargs=True, always_call=True)]
    handles += [m.register_forward_pre_hook(rec.pre_kwargs, with_kwargs=True)
                for m in (model.modules() if model is not None else ())]
    try:
        yield rec
    finally:
        for h in handles:
            h.remove()


# ---------------------------------------------------------------------------------------------
# Each module's CPU time, profiler-free

class ModuleCpu:
    """Each module's inclusive CPU time (perf_counter from its forward's start to its end, hooks of the
    modules inside it included) and calls, summed over the steps run under `module_cpu`; and the dtypes its first
    call took and returned (`first_float_dtype`), read after its clock stops, once per module."""

    def __init__(self, model: torch.nn.Module | None) -> None:
        self.names = _Names(model)
        self.rows: dict[tuple[str, str], list[float]] = {}
        self.dtypes: dict[tuple[str, str], tuple[str, str]] = {}

    def pre(self, module: torch.nn.Module, args: Any) -> None:
        q = self.names.name(module)
        self.names.stack().append((q, time.perf_counter()))

    def post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        t = time.perf_counter()
        open_ = self.names.stack()
        if open_:
            q, t0 = open_.pop()
            key = (q, type(module).__name__)
            row = self.rows.setdefault(key, [0, 0.0])
            row[0] += 1
            row[1] += t - t0
            if key not in self.dtypes:
                self.dtypes[key] = (first_float_dtype(args), first_float_dtype(output))

    def table(self, steps: int) -> pd.DataFrame:
        """MODULE_CPU_COLUMNS and DTYPE_COLUMNS, one row per module (qualified name as the scopes name it), per step
        of `steps`."""
        n = max(steps, 1)
        rows = [(q, c, calls / n, seconds / n * 1e6, *self.dtypes.get((q, c), ("", "")))
                for (q, c), (calls, seconds) in self.rows.items()]
        return pd.DataFrame(rows, columns=[*MODULE_CPU_COLUMNS, *DTYPE_COLUMNS])


def first_float_dtype(value: Any) -> str:
    """The dtype of the first floating-point tensor in a forward's arguments or output, as torch names it without
    `torch.` (`bfloat16`); "" where there is none."""
    for leaf in pytree.tree_leaves(value):
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point():
            return str(leaf.dtype).removeprefix("torch.")
    return ""


@contextmanager
def module_cpu(model: torch.nn.Module | None = None) -> Iterator[ModuleCpu]:
    """Time every nn.Module forward's CPU dispatch while the block runs (global forward hooks and
    perf_counter, no profiler); read `.table(steps)` after it. Run it outside the profiler: what it
    measures is the CPU time the profiler's own per-op cost inflates in a trace."""
    rec = ModuleCpu(model)
    handles = [nn_module.register_module_forward_pre_hook(rec.pre),
               nn_module.register_module_forward_hook(rec.post, always_call=True)]
    try:
        yield rec
    finally:
        for h in handles:
            h.remove()


class ModuleBackwardCpu:
    """Each module's backward CPU time, profiler-free: per forward call, the span from the first of its autograd
    nodes starting (those its forward created, inner modules' included, AccumulateGrad not) to the last ending,
    by perf_counter in node hooks on the call's first and last nodes only; summed over the steps run under
    `module_backward_cpu`, with the calls whose span completed.

    A call's nodes are those reachable from its outputs whose sequence numbers were drawn during the call
    (autograd's thread-local counter, read before and after it), as the trace joins a backward node to
    the forward op that carries its sequence number (classify.modules.backward_spans)."""

    def __init__(self, model: torch.nn.Module | None) -> None:
        self.names = _Names(model)
        self.rows: dict[tuple[str, str], list[float]] = {}

    def pre(self, module: torch.nn.Module, args: Any) -> None:
        self.names.stack().append((self.names.name(module), _next_sequence_nr()))

    def post(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        open_ = self.names.stack()
        if not open_:
            return
        q, first = open_.pop()
        end = _next_sequence_nr()
        if end <= first:
            return
        roots = [t.grad_fn for t in pytree.tree_leaves(output) if isinstance(t, torch.Tensor) and t.grad_fn is not None]
        nodes = _nodes_between(roots, first, end)
        if nodes:
            self._hook((q, type(module).__name__), nodes, first, end)

    def _hook(self, key: tuple[str, str], nodes: list[tuple[Any, int]], first: int, end: int) -> None:
        """Pre-hooks on the call's nodes that take its outputs' gradients, hooks on those with no node of
        the call after them (the last to run is one of them): the span ends when all of those have run."""
        inner = [[m for m, _ in n.next_functions if m is not None and first <= int(m._sequence_nr()) < end]
                 for n, _ in nodes]
        fed = {int(m._sequence_nr()) for ms in inner for m in ms}
        starts = [n for n, seq in nodes if seq not in fed]
        ends = [n for (n, _), ms in zip(nodes, inner, strict=True) if not ms]
        span = [float("inf"), float("-inf"), len(ends)]

        def started(grad_outputs: Any) -> None:
            span[0] = min(span[0], time.perf_counter())

        def ended(grad_inputs: Any, grad_outputs: Any) -> None:
            span[1] = time.perf_counter()
            span[2] -= 1
            if span[2] == 0:
                row = self.rows.setdefault(key, [0, 0.0])
                row[0] += 1
                row[1] += span[1] - span[0]

        for n in starts:
            n.register_prehook(started)
        for n in ends:
            n.register_hook(ended)

    def table(self, steps: int) -> pd.DataFrame:
        """module, class, backward_calls_per_step, backward_cpu_us_per_step, per step of `steps`."""
        n = max(steps, 1)
        rows = [(q, c, calls / n, seconds / n * 1e6) for (q, c), (calls, seconds) in self.rows.items()]
        return pd.DataFrame(rows, columns=["module", "class", *BACKWARD_CPU_COLUMNS])


def _next_sequence_nr() -> int:
    """The sequence number autograd gives the next node created on this thread."""
    return int(torch._C._autograd._get_sequence_nr())


def _nodes_between(roots: list[Any], first: int, end: int) -> list[tuple[Any, int]]:
    """The autograd nodes reachable from `roots` with a sequence number in [first, end): those created since
    `first` was read (a node's inputs are older than it, so the walk stops at the first older one)."""
    out, seen, todo = [], set(), list(roots)
    while todo:
        node = todo.pop()
        if node is None:
            continue
        seq = int(node._sequence_nr())
        if not first <= seq < end or seq in seen:
            continue
        seen.add(seq)
        out.append((node, seq))
        todo += [n for n, _ in node.next_functions]
    return out


@contextmanager
def module_backward_cpu(model: torch.nn.Module | None = None,
                        only: Iterable[torch.nn.Module] | None = None) -> Iterator[ModuleBackwardCpu]:
    """Time every nn.Module's backward CPU (the autograd nodes its forward calls create, `ModuleBackwardCpu`)
    while the block runs, or with `only` those modules' alone (the others' hooks cost nothing then); read
    `.table(steps)` after it. Its hooks cost CPU in the forward too, so run it apart from `module_cpu`, and
    outside the profiler."""
    rec = ModuleBackwardCpu(model)
    if only is None:
        handles = [nn_module.register_module_forward_pre_hook(rec.pre),
                   nn_module.register_module_forward_hook(rec.post, always_call=True)]
    else:
        handles = [h for m in only for h in (m.register_forward_pre_hook(rec.pre),
                                              m.register_forward_hook(rec.post, always_call=True))]
    try:
        yield rec
    finally:
        for h in handles:
            h.remove()


@contextmanager
def _timed_calls(modules: list[torch.nn.Module]) -> Iterator[list[float]]:
    """Hooks on `modules` alone adding each call's CPU time (perf_counter, its start to its end, s) and one call to
    the yielded [seconds, calls], which the caller resets between steps."""
    opened: list[float] = []
    spent = [0.0, 0.0]

    def pre(module: torch.nn.Module, args: Any) -> None:
        opened.append(time.perf_counter())

    def post(module: torch.nn.Module, args: Any, output: Any) -> None:
        t = time.perf_counter()
        if opened:
            spent[0] += t - opened.pop()
            spent[1] += 1.0

    handles = [h for m in modules for h in (m.register_forward_pre_hook(pre),
                                             m.register_forward_hook(post, always_call=True))]
    try:
        yield spent
    finally:
        for h in handles:
            h.remove()


def _synchronize() -> None:
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        torch.cuda.synchronize()


def _forward_step(step: Callable[[], object], spent: list[float]) -> tuple[float, float]:
    """One step's (µs, calls) of the modules `spent` times (`_timed_calls`)."""
    spent[:] = [0.0, 0.0]
    step()
    _synchronize()
    return spent[0] * 1e6, spent[1]


def _backward_step(step: Callable[[], object], modules: list[torch.nn.Module]) -> tuple[float, float]:
    """One step's (µs, calls) of `modules`' backward, `module_backward_cpu` on them alone."""
    with module_backward_cpu(None, only=modules) as rec:
        step()
    _synchronize()
    t = rec.table(1)
    return float(t["backward_cpu_us_per_step"].sum()), float(t["backward_calls_per_step"].sum())


def _per_call(rows: list[tuple[float, float]]) -> float:
    """The median step's µs over its median calls; NaN where none ran."""
    us, n = pd.Series([r[0] for r in rows]).median(), pd.Series([r[1] for r in rows]).median()
    return float(us / n) if n else float("nan")


def in_step_cpu_us(step: Callable[[], object], modules: Iterable[torch.nn.Module],
                   steps: int = 5) -> tuple[float, float]:
    """The CPU time one call of `modules` takes inside the workload's step, forward and backward (µs per call,
    profiler-free; NaN where none ran): `steps` steps (after one untimed) with hooks on these modules alone,
    perf_counter from each call's start to its end (as the validation corpus times the replacement it scores), then
    `steps` more under `module_backward_cpu` on them alone; each pass's median step over its median calls. It is what
    wins.csv's cpu_us_after and backward_cpu_us_after want: put the replacement into the model and pass the step that
    runs it.
    Timed alone (`forward_cpu_us`), replacements read a median 0.50 of their CPU in the step on the validation corpus,
    and their projections came out over-predicted; hooks on every module (module_cpu) slowed a compiled replacement
    (docs/replay.md). A few steps carry one moment's host speed: `paired_cpu` reads the replacement against the
    original in alternating steps."""
    mods = list(modules)
    if not mods or steps < 1:
        raise ValueError("in_step_cpu_us: give at least one module and one step")
    with _timed_calls(mods) as spent:
        # a first step untimed: hooks added can make a compiled caller recompile once
        per_step = [_forward_step(step, spent) for _ in range(1 + steps)][1:]
    return _per_call(per_step), _per_call([_backward_step(step, mods) for _ in range(steps)])


@dataclass(frozen=True)
class PairedCpu:
    """The original's and the replacement's CPU per call (µs, forward and backward; NaN where none ran), read in
    alternating steps, and the replacement's over the original's: the median over step pairs of B's per call over
    A's beside it."""

    forward_us: tuple[float, float]  # (original, replacement)
    backward_us: tuple[float, float]
    forward_ratio: float
    backward_ratio: float


def paired_cpu(step_a: Callable[[], object], modules_a: Iterable[torch.nn.Module], step_b: Callable[[], object],
               modules_b: Iterable[torch.nn.Module], steps: int = 5) -> PairedCpu:
    """The original modules (`modules_a`, in `step_a`) and their replacement (`modules_b`, in `step_b`) read as
    `in_step_cpu_us` reads one side, in alternating steps (A B, B A, ...; one untimed step each first), so that each
    step pair is read at one host speed. Their ratio carries onto the original's reading in the run: give
    forward_ratio and backward_ratio as wins.csv's cpu_ratio_after and backward_cpu_ratio_after, and `project`
    multiplies the module's module_cpu.csv CPU per call by them (docs/replay.md)."""
    mods = list(modules_a), list(modules_b)
    if not mods[0] or not mods[1] or steps < 1:
        raise ValueError("paired_cpu: give at least one module on each side and one step")
    sides = (step_a, step_b)
    orders = [(0, 1) if i % 2 else (1, 0) for i in range(1, steps + 1)]
    with _timed_calls(mods[0]) as spent_a, _timed_calls(mods[1]) as spent_b:
        spent = (spent_a, spent_b)
        for side in (0, 1):
            _forward_step(sides[side], spent[side])
        forward = [_paired([_forward_step(sides[s], spent[s]) for s in order], order) for order in orders]
    backward = [_paired([_backward_step(sides[s], mods[s]) for s in order], order) for order in orders]
    return PairedCpu(_sides(forward), _sides(backward), _ratio(forward), _ratio(backward))


def _paired(rows: list[tuple[float, float]], order: tuple[int, int]) -> tuple[tuple[float, float], ...]:
    """One step pair's readings, A's first."""
    return tuple(rows[order.index(side)] for side in (0, 1))


def _sides(pairs: list[tuple[tuple[float, float], ...]]) -> tuple[float, float]:
    return _per_call([p[0] for p in pairs]), _per_call([p[1] for p in pairs])


def _ratio(pairs: list[tuple[tuple[float, float], ...]]) -> float:
    """The median over step pairs of B's CPU per call over A's; NaN where a side ran none."""
    ratios = [(b[0] / b[1]) / (a[0] / a[1]) for a, b in pairs if a[1] and b[1] and a[0] > 0]
    return float(pd.Series(ratios).median()) if ratios and len(ratios) == len(pairs) else float("nan")


def backward_cpu_us(module: torch.nn.Module, *args: Any, calls: int = 50, warmup: int = 5, q: float = 0.25) -> float:
    """The CPU time the backward of one call of `module` takes (µs, profiler-free): its autograd nodes as
    `ModuleBackwardCpu` times them, the q-quantile of `calls` calls after `warmup`, each backward run from
    ones on an idle GPU, as wins.csv's `backward_cpu_us_after` wants it for a replacement module. Floating
    tensor arguments require grad (copies), as a module inside a network being trained sees them."""
    args = tuple(a.detach().requires_grad_(True) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                 for a in args)
    cuda = torch.cuda.is_available() and any(t.is_cuda for t in call_tensors(args))
    times = []
    for i in range(warmup + calls):
        with torch.enable_grad(), module_backward_cpu(module) as rec:
            out = [t for t in pytree.tree_leaves(module(*args))
                   if isinstance(t, torch.Tensor) and t.requires_grad]
        if not out:
            raise ValueError("backward_cpu_us: the module's outputs do not require grad (nothing to run backward on)")
        if cuda:
            torch.cuda.synchronize()
        torch.autograd.backward(out, [torch.ones_like(t) for t in out])
        if i >= warmup:
            times.append(rec.rows.get(("", type(module).__name__), [0, 0.0])[1] * 1e6)
    if cuda:
        torch.cuda.synchronize()
    return float(pd.Series(times).quantile(q)) if times else float("nan")


def forward_cpu_us(module: torch.nn.Module, *args: Any, calls: int = 50, warmup: int = 5, q: float = 0.25) -> float:
    """The CPU time one forward call of `module` takes to dispatch (µs, profiler-free): the q-quantile of
    `calls` timed calls after `warmup` (the GPU synchronised before each, so no launch queue waits), as
    wins.csv's `cpu_us_after` wants it for a replacement module. Grad mode is the caller's: time it the
    way the workload runs it (inside torch.no_grad() for inference). Timed so, a replacement reads about half what it
    costs inside the step (docs/replay.md); `in_step_cpu_us` reads that."""
    cuda = torch.cuda.is_available() and any(t.is_cuda for t in call_tensors(args))
    times = []
    for i in range(warmup + calls):
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        module(*args)
        if i >= warmup:
            times.append((time.perf_counter() - t0) * 1e6)
    if cuda:
        torch.cuda.synchronize()
    return float(pd.Series(times).quantile(q)) if times else float("nan")
