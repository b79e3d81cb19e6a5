"""From a model and its inputs to the aten graph hierviz partitions: torch.export and
Torch-TensorRT's lowering (aten_capture.py), the disk cache (its key, capture_key.py; its store,
disk_cache.py; the model's weights by reference, model_references.py) and the check of a
cached graph (cached_capture_check.py, with the model's computation traced on fake tensors,
computation_trace.py), what a graph accepts (input_spec.py, arg_spec.py) and the check of
call inputs against it (inputs.py, input_structure.py), example inputs made from a graph
(example_inputs.py), model copies, export failures explained (export_failure.py), where each
node came from (provenance.py) and the graph codec (graph_codec.py). by_graph/ holds torch.compile's path:
dynamo's graphs and breaks."""
