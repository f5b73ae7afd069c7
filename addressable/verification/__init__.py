"""Verification: a candidate kernel -> a speedup you can trust, or the reason it cannot be trusted.

runner (`verify`, `verify_batch`), harness (loading problem files, seeding, inputs, timing), checks
(the named checks), invariants (what a problem file declares of its outputs), sandbox (containment of
candidate code), audit (which problems an all-zeros output passes).
"""
