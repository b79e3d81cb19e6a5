"""The picture of a graph-by-graph partition: one frame per dynamo graph with the breaks between
them (frames.py), the frames aligned on one edge (align.py), measured times per graph
(graph_times.py) and its files and HTML (graphs_export.py)."""
