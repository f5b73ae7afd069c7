"""Trace: a profiler trace file -> an events table. The one owner of every trace format read.

reader (`load_trace`, streaming and column-pruned, `trace_format.yaml` names what is kept; the Kineto
and Chrome JSON reader, which builds the one events table every format gives), _kineto.c (the
optional C scanner behind it), detect (which format a file is, and the recognised formats that are
refused), rocprof (rocprofv3 JSON), nsys (Nsight Systems SQLite exports), kernel_names (a kernel name
-> qualified name, template arguments, parameters).
"""
