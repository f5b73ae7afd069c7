"""Core: what every stage shares and nothing of ours below it.

errors (the one AddressableError), atomic (writes that never leave half a file), interrupt (Ctrl-C:
exit 130 within about a second, temporaries removed), jsonutil (plain-JSON copies of results), schema
(format versions), names (a names column as codes into its distinct strings), progress (one redrawn line on stderr), device (`resolve_device`), files (reading
YAML and CSV with one-line errors), amdahl (Amdahl's law, for projection, the roofline and the report
alike).
"""
