"""Roofline: how far each kernel is from what the hardware allows, and the ceiling that implies.

model (kernel costs, `roofline_of_path`, fusion headroom; `peaks.yaml`), op_models (bytes and FLOPs of
one aten op), calibrate (this GPU's measured peaks), ncu_check (the estimated bytes against Nsight
Compute's measured ones: reading ncu's CSV, pairing its launches with the trace's, comparing).
"""
