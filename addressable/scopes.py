"""Recording module scopes: while active, every nn.Module call is a profiler range.

`module_scopes(model)` registers global forward pre- and post-hooks that open a
torch.profiler record_function range named `nn.Module: <qualname> (<Class>)` around each
module's forward (the model's own qualified names; the model itself is ""), and removes them on
exit. `addressable profile` wraps only its profiled steps in it, so timed steps run without
hooks. addressable/modules.py reads the ranges back from the trace.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch.nn.modules import module as nn_module

PREFIX = "nn.Module: "


def scope_name(qualname: str, cls: str) -> str:
    """The range name of one module call, e.g. `nn.Module: h.0.mlp (GPT2MLP)`."""
    return f"{PREFIX}{qualname} ({cls})"


@contextmanager
def module_scopes(model: torch.nn.Module | None = None) -> Iterator[None]:
    """Open a profiler range around every nn.Module forward while the block runs.

    Modules of `model` are named by their qualified name in it. Other modules (a loss module
    called outside the model, or every module when no model is given) are named after their
    top-level module's class, e.g. `CrossEntropyLoss`, `Sequential.0.lin`.
    """
    names: dict[int, str] = {id(m): q for q, m in model.named_modules()} if model is not None else {}
    local = threading.local()

    def stack() -> list[Any]:
        if not hasattr(local, "stack"):
            local.stack = []
        return local.stack

    def pre(module: torch.nn.Module, args: Any) -> None:
        open_ = stack()
        q = names.get(id(module))
        if q is None:
            if open_:  # a module that is no registered child of its caller
                q = f"{open_[-1][0]}.{type(module).__name__}" if open_[-1][0] else type(module).__name__
            else:
                top = type(module).__name__
                names.update({id(m): f"{top}.{n}" if n else top for n, m in module.named_modules()})
                q = top
        rf = torch.profiler.record_function(scope_name(q, type(module).__name__))
        rf.__enter__()
        open_.append((q, rf))

    def post(module: torch.nn.Module, args: Any, output: Any) -> None:
        open_ = stack()
        if open_:
            open_.pop()[1].__exit__(None, None, None)

    handles = [nn_module.register_module_forward_pre_hook(pre),
               nn_module.register_module_forward_hook(post, always_call=True)]
    try:
        yield
    finally:
        for h in handles:
            h.remove()
