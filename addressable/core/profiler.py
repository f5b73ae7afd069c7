"""torch.profiler options that more than one stage asks for (profile's traces, verify's call traces)."""

from __future__ import annotations

from typing import Any


def sync_event_options(cuda: bool) -> dict[str, Any]:
    """torch.profiler's keyword for recording the GPU's waits (`cuda_sync` rows: which stream waited for which
    event, what a synchronize awaited); none on the CPU or under a torch without it."""
    if not cuda:
        return {}
    import torch  # here, so that importing this module stays cheap

    try:
        return {"experimental_config": torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)}
    except (AttributeError, TypeError):
        return {}
