"""Projection: what end-to-end speedup measured kernel speedups buy.

project (wins.csv and problem maps -> a Projection; `kernelbench_map.yaml`, `kernelbench_level2.yaml`),
replay (the step's timeline replayed with the CPU, launches, streams and syncs).
"""
