"""Trace: a profiler trace file -> an events table. The one owner of the Kineto trace format.

reader (`load_trace`, streaming and column-pruned, `trace_format.yaml` names what is kept), _kineto.c
(the optional C scanner behind it), kernel_names (a kernel name -> qualified name, template
arguments, parameters).
"""
