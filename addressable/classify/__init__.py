"""Classify: events -> categories -> a Breakdown, per trace, per module and per rank.

taxonomy (`taxonomy.yaml`, the ordered rules), breakdown (`classify_trace` -> Breakdown), timeline
(overlap-aware accounting), modules (which nn.Module owns each kernel; `module_scopes.yaml`), ranks
(several traces of one job: classified in parallel, aggregated across ranks, stragglers: all rank
aggregation lives there), paths (`classify_paths`: one trace, a job's traces or --explain, as
`addressable classify PATHS` asks).
"""
