"""Which device to run on: one `resolve_device` for profile, sweep, verify, audit and bench."""

from __future__ import annotations

from addressable.core.errors import AddressableError

DEVICES = ("auto", "cuda", "cpu")


def resolve_device(device: str) -> str:
    """"cuda" or "cpu" from "auto", "cuda" or "cpu"; refuses cuda without a CUDA GPU."""
    import torch  # here, so that importing this module stays cheap

    if device not in DEVICES:
        raise AddressableError(f"unknown device '{device}' (use one of {', '.join(DEVICES)})")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise AddressableError("--device cuda was asked for but no CUDA GPU is available (use --device auto or cpu)")
    return device
