"""The passes of hierviz's engine, one module each, run in this order by hierviz_engine.py: assignment
(each node's eligible backend), fusion (groups that pass non-tensor data), traversal (the
phased topological walk), merging (same-backend subgraphs joined where no cycle results), search
(traversal and merging restarted with other phase choices, the fewest subgraphs kept) and
demotion (small accelerated blocks). Each reads the graph index and builds the plan types."""
