"""Capture: run a workload, time it, profile it, and hand the run folder to `runs`.

workload (the adapter registry), profile (`profile_workload`: one run folder), measure (time and profile
one workload instance), sweep, distributed (torchrun: launch, process group, DDP/FSDP2), scopes
(recording module scopes and module I/O), phases (phase markers), quiet (silencing the profiler),
ncu (running one step of a workload under Nsight Compute; the check is addressable.roofline.ncu_check),
oom (what to say when a workload runs out of memory).
"""
