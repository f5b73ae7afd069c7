"""Runs: the run folder, the one module that reads and writes it (breakdown.json, the CSVs, manifest,
module_io.json, ranks.csv, the ncu check's files) and names its files. See docs/CONVENTIONS.md for the layout.
"""
