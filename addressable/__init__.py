"""addressable: how much of a GPU workload can a new kernel touch, and what does a speedup buy?

Pipeline: workload -> trace -> events table -> classify -> breakdown -> projection -> plot/report.
"""

from addressable.breakdown import Breakdown, breakdown_of_trace, classify_trace
from addressable.errors import AddressableError
from addressable.taxonomy import Taxonomy, load_taxonomy
from addressable.trace import Trace, load_trace

__all__ = [
    "AddressableError",
    "Breakdown",
    "Taxonomy",
    "Trace",
    "breakdown_of_trace",
    "classify_trace",
    "load_taxonomy",
    "load_trace",
]
