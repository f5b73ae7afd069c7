"""core/profiler.py: the torch.profiler options profile and verify share."""

from __future__ import annotations

import torch

from addressable.core.profiler import sync_event_options


def test_sync_events_are_asked_for_on_the_gpu_only() -> None:
    assert sync_event_options(cuda=False) == {}
    opts = sync_event_options(cuda=True)
    assert list(opts) == ["experimental_config"]
    assert isinstance(opts["experimental_config"], torch._C._profiler._ExperimentalConfig)
    # the profiler accepts it (CPU activity only here): the option is a valid keyword of torch.profiler.profile
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], **opts):
        torch.ones(2).add_(1)
