"""`hv.load_partition`: a saved partition read back, whichever kind it is: one graph
(saved_partition.py's `hierviz-partition` document, a SavedPartition) or graph by graph (saved_graphs.py's
`hierviz-graphs` document, a SavedMultiGraphPartition)."""

from __future__ import annotations

from pathlib import Path
from hierviz.errors import ConfigError, checked_arguments
from hierviz.partitioner.saved.saved_partition import SavedPartition, checked_document, read_document
from hierviz.partitioner.saved.saved_graphs import SavedMultiGraphPartition, is_graphs_document


@checked_arguments
def load_partition(path: str | Path) -> "SavedPartition | SavedMultiGraphPartition":
    """A partition saved with `part.save("x.json")`: report(), render(), hv.check and hv.diff
    work on it; compile() and measuring need the graph and raise SavedPartitionError. A
    graph-by-graph partition (ir="torch_compile") loads as a SavedMultiGraphPartition."""
    if not isinstance(path, (str, Path)):
        raise ConfigError(f"hv.load_partition takes the path of a saved .json partition, not {type(path).__name__}.")
    path = Path(path)
    doc = read_document(path)
    if is_graphs_document(doc):
        return SavedMultiGraphPartition(doc, path)
    return SavedPartition(checked_document(doc, repr(str(path))), path)


__all__ = ["load_partition"]
