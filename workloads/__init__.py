"""Built-in workload adapters: each module defines ``WORKLOADS``, a list of WorkloadSpec.

See addressable/capture/workload.py for the interface; `addressable workloads` lists them all.
"""
