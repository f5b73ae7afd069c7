"""Workload registry: named adapters that build one runnable training or inference step.

An adapter is a module (or .py file) with a module-level ``WORKLOADS`` list of WorkloadSpec.
The built-in adapters live in the top-level ``workloads`` package; users add their own with
``--adapter path/to/file.py`` or ``--adapter some.module`` (or the ADDRESSABLE_ADAPTERS
environment variable, paths/modules separated by ``:``), without editing this package.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
import textwrap
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from addressable.core.errors import AddressableError

BUILTIN_ADAPTERS = ("workloads.resnet", "workloads.transformer", "workloads.dlrm")
DTYPES = ("bf16", "fp16", "fp32")
MODES = ("train", "infer")


@dataclass(frozen=True)
class WorkloadConfig:
    """What is run: everything needed to build one workload instance (how it is measured is
    addressable.capture.measure.Measurement). Values no workload can take raise AddressableError."""

    name: str
    mode: str
    batch: int
    dtype: str
    device: str  # "cuda" or "cpu" (already resolved from "auto")
    seq_len: int | None = None
    compile: bool = False
    options: dict[str, Any] = field(default_factory=dict)  # adapter-specific, e.g. {"layers": 4}

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise AddressableError(f"mode must be one of {', '.join(MODES)}, got '{self.mode}'")
        if self.dtype not in DTYPES:
            raise AddressableError(f"dtype must be one of {', '.join(DTYPES)}, got '{self.dtype}'")
        if self.dtype == "fp16" and self.device == "cpu":
            raise AddressableError("fp16 is not supported on the CPU; use --dtype bf16 or fp32")
        if self.batch < 1 or (self.seq_len is not None and self.seq_len < 1):
            raise AddressableError("--batch and --seq-len must be positive")


Step = Callable[[], None]
"""One training step (forward, backward, optimizer) or one inference step, phases marked."""


@dataclass(frozen=True)
class WorkloadSpec:
    """A named workload an adapter offers."""

    name: str
    family: str
    description: str
    build: Callable[[WorkloadConfig], Step]
    modes: tuple[str, ...] = MODES
    default_mode: str = "train"
    default_batch: int = 8
    default_seq_len: int | None = None
    default_dtype: str = "bf16"
    dtypes: tuple[str, ...] = DTYPES
    full_layers: int | None = None  # set when the model can be profiled on a subset of layers
    options: tuple[str, ...] = ()  # the --option keys build() reads; any other key is refused up front

    @property
    def known_options(self) -> tuple[str, ...]:
        """The declared options, plus `layers` where the model can be cut to a subset of layers."""
        return self.options + (("layers",) if self.full_layers and "layers" not in self.options else ())

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Refuse (AddressableError) any option key this workload does not declare."""
        check_options(self.name, options, self.known_options)


def check_options(name: str, options: Mapping[str, Any], known: Iterable[str]) -> None:
    """Refuse option keys outside `known`, naming the known ones (or saying there are none)."""
    known = tuple(known)
    unknown = sorted(set(options) - set(known))
    if unknown:
        keys = ", ".join(repr(k) for k in unknown)
        which = f"known: {', '.join(known)}" if known else "it takes no options"
        raise AddressableError(f"{name}: unknown option {keys} ({which})")


_REGISTRY: dict[str, WorkloadSpec] = {}
_LOADED: set[str] = set()
_ADAPTER_SPECS: dict[str, list[WorkloadSpec]] = {}  # adapter ref -> the specs it registered


def register(spec: WorkloadSpec) -> WorkloadSpec:
    _REGISTRY[spec.name] = spec
    return spec


def load_adapter(ref: str, optional: bool = False) -> list[WorkloadSpec]:
    """Import an adapter by module name or .py path and register its WORKLOADS.

    With `optional`, a module that does not exist itself is skipped (a missing dependency
    inside it is still an error).
    """
    if ref in _LOADED:
        return list(_ADAPTER_SPECS.get(ref, []))
    try:
        if ref.endswith(".py") or os.sep in ref:
            path = Path(ref)
            if not path.is_file():
                raise AddressableError(f"no such adapter file: {ref}")
            name = f"addressable_adapter_{path.stem}"
            mod_spec = importlib.util.spec_from_file_location(name, path)
            if mod_spec is None or mod_spec.loader is None:  # a name Python does not import (no .py)
                raise AddressableError(f"cannot import adapter {ref}: not a Python file (name it *.py)")
            module = importlib.util.module_from_spec(mod_spec)
            sys.modules[name] = module  # dataclasses and pickling look adapters up here
            try:
                mod_spec.loader.exec_module(module)
            except BaseException:
                del sys.modules[name]
                raise
        else:
            module = importlib.import_module(ref)
    except AddressableError:
        raise
    except ModuleNotFoundError as e:
        if optional and e.name == ref:
            return []
        raise AddressableError(f"cannot import adapter {ref}: {e}") from None
    except ImportError as e:
        raise AddressableError(f"cannot import adapter {ref}: {e}") from None
    except SyntaxError as e:  # IndentationError too
        where = f"{e.filename}:{e.lineno}" + (f":{e.offset}" if e.offset else "")
        raise AddressableError(f"cannot import adapter {ref}: {where}: {type(e).__name__}: {e.msg}") from None
    except Exception as e:  # what its module-level code raised: the adapter's own line, not a traceback
        line = next((f"{f.filename}:{f.lineno}: " for f in reversed(traceback.extract_tb(e.__traceback__))
                     if f.filename == str(ref) or f.filename.endswith(os.sep + Path(ref).name)), "")
        raise AddressableError(f"cannot import adapter {ref}: {line}{type(e).__name__}: {e}") from None
    specs = getattr(module, "WORKLOADS", None)
    if not isinstance(specs, list | tuple) or not all(isinstance(s, WorkloadSpec) for s in specs):
        raise AddressableError(f"adapter {ref} must define WORKLOADS, a list of WorkloadSpec")
    _LOADED.add(ref)
    _ADAPTER_SPECS[ref] = [register(s) for s in specs]
    return list(_ADAPTER_SPECS[ref])


def registry(adapters: tuple[str, ...] = ()) -> dict[str, WorkloadSpec]:
    """All known workloads: built-ins, ADDRESSABLE_ADAPTERS, and the given adapters."""
    env = tuple(a for a in os.environ.get("ADDRESSABLE_ADAPTERS", "").split(":") if a)
    for ref in BUILTIN_ADAPTERS:
        load_adapter(ref, optional=True)  # a built-in not written yet is skipped
    for ref in (*env, *adapters):
        load_adapter(ref)
    return dict(_REGISTRY)


def get_workload(name: str, adapters: tuple[str, ...] = ()) -> WorkloadSpec:
    known = registry(adapters)
    if name not in known:
        raise AddressableError(f"unknown workload '{name}' (known: {', '.join(sorted(known))})")
    return known[name]


def workload_table(adapters: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per known workload with its defaults and the --option keys it takes: the library form of
    `addressable workloads`."""
    rows = [{"workload": s.name, "family": s.family, "modes": ",".join(s.modes),
             "default_mode": s.default_mode, "batch": s.default_batch,
             "seq_len": s.default_seq_len, "dtype": s.default_dtype, "dtypes": ",".join(s.dtypes),
             "full_layers": s.full_layers, "options": ",".join(s.known_options), "description": s.description}
            for s in sorted(registry(adapters).values(), key=lambda s: (s.family, s.name))]
    cols = ["workload", "family", "modes", "default_mode", "batch", "seq_len", "dtype", "dtypes",
            "full_layers", "options", "description"]
    return pd.DataFrame(rows, columns=cols).astype({"seq_len": "Int64", "full_layers": "Int64"})


def format_workloads(df: pd.DataFrame, width: int = 100) -> str:
    """workload_table() as aligned text ('-' for missing values), then each workload's description in full,
    wrapped to `width`, with the --option keys it takes: those its description's "options: ..." does not
    name are added."""
    df = df.astype(object).fillna("-").astype(str)
    table = df.drop(columns=["options", "description"])
    col = {c: max(len(c), *table[c].str.len()) for c in table.columns}
    lines = ["  ".join(f"{c:<{col[c]}}" for c in table.columns).rstrip()]
    lines += ["  ".join(f"{v:<{col[c]}}" for c, v in zip(table.columns, row, strict=True)).rstrip()
              for row in table.itertuples(index=False)]
    lines += ["", "Descriptions and --option KEY=VALUE keys:"]
    indent = " " * (col["workload"] + 2)
    for name, options, text in zip(df["workload"], df["options"], df["description"], strict=True):
        named = text.partition("options:")[2]
        unnamed = [k for k in options.split(",") if k not in ("", "-") and not re.search(rf"\b{re.escape(k)}\b", named)]
        if unnamed:
            text += f"{'; ' if text else ''}{'also ' if 'options:' in text else ''}options: {', '.join(unnamed)}"
        lines += textwrap.wrap(text or "-", width, initial_indent=f"{name:<{col['workload']}}  ",
                               subsequent_indent=indent, break_on_hyphens=False)
    return "\n".join(lines)
