"""Projection: what end-to-end speedup measured kernel speedups buy.

wins (wins files read, validated and written; targets resolved through the problem maps,
`kernelbench_map.yaml`, `kernelbench_level2.yaml`, and DLRM-Bench's categories), project (runs and wins
-> a Projection, by Amdahl or by replay), replay (the step's timeline replayed with the CPU, launches,
streams and syncs).
"""
