"""The text report: every field Torch-TensorRT's dryrun prints, for every backend."""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Sequence

from hierviz.partitioner import engine as eng
from hierviz.partitioner.result import TensorSpec, short_dtype, tensor_spec

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.result import Partition

RULE = "+" * 40


def _specs(specs: Sequence[TensorSpec]) -> str:
    parts = []
    for t in specs:
        if t.shape is None:
            parts.append(f"{t.dtype or 'value'}")
        else:
            parts.append(f"Tensor: ({', '.join(str(d) for d in t.shape)})@{short_dtype(t.dtype)}")
    if len(parts) == 1:
        return parts[0]
    return "List[" + ", ".join(parts) + "]"


def report(p: "Partition") -> str:
    res = p._result
    index = res.index
    stats = p.stats
    lines: list[str] = []
    add = lines.append
    add(f"{RULE} Dry-Run Results for Graph ({p.engine} engine) {RULE}")
    add("")
    add(f"The graph consists of {stats['compute_ops']} Total Operators, of which "
        f"{stats['supported_ops']} operators are supported, {stats['coverage'] * 100:.2f}% coverage")
    compute = [i for i in index.callable_indices if not index.non_compute[i]]
    per_backend = Counter(res.assignment.backend[i] for i in compute)
    for b in p.config.priority:
        share = per_backend.get(b, 0) / len(compute) * 100 if compute else 0.0
        add(f"  {b}: {per_backend.get(b, 0)} operators eligible ({share:.2f}%)")
    add(f"  PyTorch (no backend): {per_backend.get(None, 0)} operators")
    add("")
    unsupported = Counter(index.ops[i] for i in compute if res.assignment.code[i] in (eng.UNSUPPORTED, eng.VALIDATOR))
    excluded = Counter(index.ops[i] for i in compute if res.assignment.code[i] == eng.TORCH_EXECUTED)
    if unsupported or excluded:
        add("The following ops are currently unsupported or excluded from conversion, "
            "and are listed with their op-count in the graph:")
        for op, c in (unsupported + excluded).most_common():
            why = "excluded (torch_executed_ops)" if op in excluded else "unsupported"
            add(f" {op}: {c}  [{why}]")
        add("")
    in_torch = [i for i in index.callable_indices if res.subgraphs[p._tag_of[i]].backend == eng.FALLBACK]
    if in_torch:
        add("The following nodes are currently set to run in Torch:")
        for i in in_torch:
            add(f"Node: {index.ops[i]}, with layer location: {index.names[i]}  ({p._short_reason(i)})")
        add("Note: Some of the above nodes may be supported, but were not included in an "
            "accelerated graph by the partitioner")
        add("")
    add(f"Compiled with: {p.config.to_dict()}")
    add("")
    add("  Graph Structure:")
    add("")
    graph_inputs = [tensor_spec(n) for n in index.nodes if n.op == "placeholder"]
    output_node = next((n for n in index.nodes if n.op == "output"), None)
    graph_outputs = [tensor_spec(n) for n in output_node.all_input_nodes] if output_node is not None else []
    add(f"   Inputs: {_specs(graph_inputs)}")
    numbers: Counter = Counter()
    for sg in p.subgraphs:
        numbers[sg.backend] += 1
        kind = f"{sg.backend} engine" if sg.is_acc else "PyTorch segment"
        add("    ...")
        add(f"    {kind} #{numbers[sg.backend]} - Submodule name: {sg.tag}")
        add(f"     Engine Inputs: {_specs(sg.inputs)}")
        add(f"     Number of Operators in Engine: {sg.compute_ops}")
        add(f"     Engine Outputs: {_specs(sg.outputs)}")
    add("    ...")
    add(f"   Outputs: {_specs(graph_outputs)}")

    for b in p.config.priority:
        engines = [sg for sg in p.subgraphs if sg.is_acc and sg.backend == b]
        add("")
        add(f"  {'-' * 20} Aggregate Stats: {b} {'-' * 20}")
        add("")
        if not engines:
            add(f"   Aggregate stats not available since no {b} engines were generated.")
            continue
        ops = [sg.compute_ops for sg in engines]
        add(f"   Number of {b} engines: {len(engines)}")
        add(f"   Average Number of Operators per {b} Engine: {round(sum(ops) / len(ops), 2)}")
        add(f"   Most Operators in a {b} Engine: {max(ops)}")
        add("")
        add(f"  {'*' * 10} Recommendations: {b} {'*' * 10}")
        add("")
        # min_block_size counts every node of a subgraph (getitem included), as the seed does,
        # so the recommended sizes are in nodes; the engine counts come from re-partitioning.
        sizes = [len(sg.nodes) for sg in engines]
        most, moderate, least = max(sizes), math.ceil(sum(sizes) / len(sizes)), min(sizes)
        add(f"   - For minimal graph segmentation, select min_block_size={most} which would generate "
            f"{_engines_at(p, b, most, sizes)} {b} engine(s)")
        if moderate != most:
            add(f"   - For moderate graph segmentation, select min_block_size={moderate} which would "
                f"generate {_engines_at(p, b, moderate, sizes)} {b} engine(s)")
        add(f"   - The current level of graph segmentation is equivalent to selecting min_block_size="
            f"{least} which generates {_engines_at(p, b, least, sizes)} {b} engine(s)")
        add("     (min_block_size counts the nodes of a subgraph, getitem and view included)")
    return "\n".join(lines) + "\n"


def _engines_at(p: "Partition", backend: str, size: int, sizes: list[int]) -> int:
    """Engines of `backend` at min_block_size=size: re-partitioned (only the small-block pass
    runs again) for hierviz's engine; for upstream's, whose traversal is not kept, estimated as
    its dryrun does (engines already that large)."""
    if p.engine != "hierviz":
        return len([s for s in sizes if s >= size])
    merged, _ = eng.merge_small(p._result.raw, size, p.config.require_full_compilation)
    return sum(1 for sg in merged if sg.is_acc and sg.backend == backend)
