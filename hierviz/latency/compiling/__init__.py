"""Compiling a partition: one compiler per backend (backend_compilers.py), each subgraph compiled
in graph order (subgraph_compiling.py) through the compile cache (compile_cache.py) by a plan
(compile_plan.py), weights lifted (lift.py) and the compiled split module (compiled_split.py);
latency/deploy.py hands it to the user."""
