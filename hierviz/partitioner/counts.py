"""The partition's counts, each defined once, and the words every surface uses for them (the
repr, the report, notes, the views' titles, the HTML report, the explorer, the README):

- **nodes** (`stats["nodes"]`): the graph's op nodes (call_function, call_method, call_module),
  the nodes the partitioner places. `Partition.nodes()` lists them and, with backend "graph",
  the graph's inputs, weights and output (`graph_rows`).
- **compute ops** (`stats["compute_ops"]`, `nodes().compute`): the nodes that compute, all but
  getitem and the views that run with their producer; Torch-TensorRT's dryrun calls them
  "Total Operators".
- **supported ops** (`stats["supported_ops"]`): the compute ops that some backend in priority takes.
- **accelerated ops** (`stats["accelerated_ops"]`): the compute ops in an accelerated subgraph.
- **drawn nodes**: what a view draws, the nodes with the graph's inputs and output (weights only
  with weights=True): what `max_nodes` limits.

torch_tensorrt.compile's own count of supported nodes (its rule for leaving a small graph in
PyTorch) includes getitem and views, so it is said in its own words: "supported nodes".
"""

from __future__ import annotations

from typing import Any, Mapping

WORDS = {"nodes": "nodes", "compute_ops": "compute ops", "supported_ops": "supported ops",
         "accelerated_ops": "accelerated ops", "drawn": "drawn nodes"}


def SUPPORTED_NODES(n: int) -> str:  # a phrase, named as the count it says
    """torch_tensorrt.compile's own count, in its own words: '178 supported nodes (torch_tensorrt.compile's
    count, getitem and views included)'."""
    return f"{n:,} supported node{'s' if n != 1 else ''} (torch_tensorrt.compile's count, getitem and views included)"


def count_text(name: str, n: int) -> str:
    """'1,595 nodes', '89 compute ops', '1 supported op'."""
    word = WORDS[name]
    if n == 1 and word.endswith("s"):
        word = word[:-1]
    return f"{n:,} {word}"


def by_backend_text(stats: Mapping[str, Any]) -> str:
    """The subgraphs per backend, those with any, in `stats["subgraphs_by_backend"]`'s order:
    'tensorrt 5, torch 7' ('' when there are none)."""
    return ", ".join(f"{b} {n}" for b, n in stats["subgraphs_by_backend"].items() if n)


def graph_rows(rows: int, stats: Mapping[str, int]) -> int:
    """The rows of `Partition.nodes()` (`rows` of them) that are not nodes: the graph's inputs,
    weights and output."""
    return rows - int(stats["nodes"])


def nodes_text(rows: int, stats: Mapping[str, int]) -> str:
    """'95 nodes (+19 graph inputs/weights/output)': the nodes, and the other rows of nodes()."""
    extra = graph_rows(rows, stats)
    return count_text("nodes", int(stats["nodes"])) + (f" (+{extra:,} graph inputs/weights/output)" if extra else "")


__all__ = ["WORDS", "SUPPORTED_NODES", "by_backend_text", "count_text", "graph_rows", "nodes_text"]
