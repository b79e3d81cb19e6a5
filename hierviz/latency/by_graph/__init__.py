"""Timing a graph-by-graph partition: the torch.compile backend that hands dynamo each graph's
compiled split module (graph_backend.py), every graph compiled (compiled_graphs.py) and the
whole model measured (measure_by_graph.py)."""
