"""Torch-TensorRT's own partitioners run on hierviz's graph: its hierarchical adjacency
partitioner (hierarchical.py), torch_tensorrt.compile's fast and global partitioners
(compile_partitioners.py), and the "torch_tensorrt.compile today" line (todays_compile.py)."""
