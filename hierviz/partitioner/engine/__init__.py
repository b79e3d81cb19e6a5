"""hierviz's own partitioner: the graph index (graph_index.py), the plan it produces (plan.py),
the support verdicts it asks (support_verdicts.py), its passes (passes/) and the engine that
runs them (hierviz_engine.py)."""
