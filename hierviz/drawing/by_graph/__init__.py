"""The picture of a graph-by-graph partition: one frame per dynamo graph with the breaks between
them (frames.py joins them: the view each graph gets, view_plan.py; the frames, break and start
markers chained in order, markers.py, worded by breaks_and_starts.py; one legend, graphs_legend.py,
over the overview's row per graph, overview.py), the frames aligned on one edge (align.py), measured
times per graph (graph_times.py) and its files and HTML (graphs_export.py)."""
