"""torch.compile's path: the model captured graph by graph under dynamo (dynamo_capture.py),
kept on disk and read back (cached_graphs.py),
each graph (dynamo_graph.py), the breaks between them (graph_break.py) and the values that
cross (graph_value.py), what a graph says of itself without the graph (graph_source.py, the
base a saved graph shares), held as one sequence (graphs_and_breaks.py)."""
