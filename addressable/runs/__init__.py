"""Runs: the run folder, the one module that reads and writes it (breakdown.json, the CSVs, manifest,
module_io.json, ranks.csv). See docs/CONVENTIONS.md for the layout.
"""
