"""Saved partitions: the one-graph document (saved_partition.py), the graph-by-graph one
(saved_graphs.py) and `hv.load_partition`, which reads either (load.py); old_field.py: the fields
a file saved by an older hierviz lacks, inferred or said."""
