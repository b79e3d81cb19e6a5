"""torch.compile's path partitioned: one Partition per dynamo graph (multi_graph.py,
`MultiGraphPartition`) and their nodes joined into one table (joined_graphs.py)."""
