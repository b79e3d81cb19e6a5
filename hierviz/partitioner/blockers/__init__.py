"""What keeps nodes out of the accelerated backends: the causes and their what-if table
(blocker_causes.py, `Partition.blockers()`), that table in words for the reports
(blocker_text.py), and the same summed over the graphs of a graph-by-graph partition
(multi_blockers.py)."""
