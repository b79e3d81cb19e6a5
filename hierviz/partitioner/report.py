"""The text report: every field Torch-TensorRT's dryrun prints, for every backend.

Reads only the Partition's public record and methods (`records`, `subgraphs`, `stats`,
`subgraph_counts`), like every other consumer of a partition.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Sequence

from hierviz.partitioner.record import FALLBACK, TORCH_EXECUTED, UNSUPPORTED, VALIDATOR, TensorSpec

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.result import Partition

RULE = "+" * 40


def _specs(specs: Sequence[TensorSpec]) -> str:
    parts = [t.dryrun() for t in specs]
    if len(parts) == 1:
        return parts[0]
    return "List[" + ", ".join(parts) + "]"


def report(p: "Partition") -> str:
    t = p.records
    stats = p.stats
    lines: list[str] = []
    add = lines.append
    add(f"{RULE} Dry-Run Results for Graph ({p.engine} engine) {RULE}")
    add("")
    add(f"The graph consists of {stats['compute_ops']} Total Operators, of which "
        f"{stats['supported_ops']} operators are supported, {stats['coverage'] * 100:.2f}% coverage")
    compute = [i for i in range(len(t)) if t.compute[i]]
    per_backend = Counter(t.eligible_backend[i] for i in compute)
    for b in p.config.priority:
        share = per_backend.get(b, 0) / len(compute) * 100 if compute else 0.0
        add(f"  {b}: {per_backend.get(b, 0)} operators eligible ({share:.2f}%)")
    add(f"  PyTorch (no backend): {per_backend.get(FALLBACK, 0)} operators")
    add("")
    code = t.reason_code  # demotion only ever overrides 'supported'
    unsupported = Counter(t.op[i] for i in compute if code[i] in (UNSUPPORTED, VALIDATOR))
    excluded = Counter(t.op[i] for i in compute if code[i] == TORCH_EXECUTED)
    if unsupported or excluded:
        add("The following ops are currently unsupported or excluded from conversion, "
            "and are listed with their op-count in the graph:")
        for op, c in (unsupported + excluded).most_common():
            why = "excluded (torch_executed_ops)" if op in excluded else "unsupported"
            add(f" {op}: {c}  [{why}]")
        add("")
    in_torch = [i for i in range(len(t)) if t.backend[i] == FALLBACK]
    if in_torch:
        add("The following nodes are currently set to run in Torch:")
        for i in in_torch:
            add(f"Node: {t.op[i]}, with layer location: {t.name[i]}  ({t.short_reason(i)})")
        add("Note: Some of the above nodes may be supported, but were not included in an "
            "accelerated graph by the partitioner")
        add("")
    add(f"Compiled with: {p.config.to_dict()}")
    add("")
    add("  Graph Structure:")
    add("")
    graph_inputs = [t.spec[i] for i in range(len(t)) if t.kind[i] == "placeholder"]
    output = next((i for i in range(len(t)) if t.kind[i] == "output"), None)
    graph_outputs = [t.spec[a] for a in t.inputs[output]] if output is not None else []
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
    return p.subgraph_counts(size).get(backend, 0)
