"""What a partition says in text and tables: the dryrun-style report (every field
Torch-TensorRT's dryrun prints, for every backend), `ops()` and `summary()`.

Reads only the Partition's public record and methods (`records`, `subgraphs`, `stats`,
`subgraph_counts`), like every other consumer of a partition.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Any, Sequence

from hierviz.errors import ConfigError
from hierviz.capturing.provenance import short_op
from hierviz.partitioner.assumed_support import assumed_text
from hierviz.partitioner.counts import count_text
from hierviz.partitioner.blockers.blocker_causes import check_builds
from hierviz.partitioner.blockers.blocker_text import (REPORT_ROWS, change_lines, for_reports, intro_text,
                                                       not_computed_text)
from hierviz.partitioner.reasons import FALLBACK, NOTHING_TO_PARTITION, TORCH_EXECUTED, UNSUPPORTED, VALIDATOR
from hierviz.partitioner.record import TensorSpec

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from hierviz.building.builds import Builds
    from hierviz.partitioner.partition_result import Partition

RULE = "+" * 40


def _specs(specs: Sequence[TensorSpec]) -> str:
    parts = [t.dryrun() for t in specs]
    if len(parts) == 1:
        return parts[0]
    return "List[" + ", ".join(parts) + "]"


def report(p: "Partition", what_to_change: bool = True, *, measurement: Any = None, builds: "Builds | None" = None,
           traced: bool = True) -> str:
    """Torch-TensorRT's dryrun report for every backend: coverage, the ops and nodes left to
    PyTorch, the graph's structure, then per backend its engines and min_block_size advice;
    then (`what_to_change`) the top 5 blockers with what fixing each saves. With
    `measurement` (an hv.Measurement of `p`), the engines that fell back say so and a
    "Measured" section follows the structure. With `builds` (p.build()), a "Built on this
    machine" section follows it, and each engine that failed to build leads "What to change".
    `traced`: say the device the graph was lowered for (a report of several graphs says it once)."""
    fell = measured_fallbacks(p, measurement)
    lines = [f"{RULE} Dry-Run Results for Graph ({p.engine} engine) {RULE}", ""]
    if p.assumed:  # a what-if: say first that Torch-TensorRT would not run it
        lines += [f"{assumed_text(p.assumed)}: Torch-TensorRT would not run this partition as shown.", ""]
    if traced and p.traced_for is not None:
        lines += [p.traced_for[1], ""]
    for note in getattr(p, "notes", ()):
        lines += [f"Note: {note}.", ""]
    if not p.stats["nodes"]:
        lines += [NOTHING_TO_PARTITION[0].upper() + NOTHING_TO_PARTITION[1:] + ".", ""]
    lines += _coverage(p) + _left_to_torch(p) + _structure(p, fell)
    if measurement is not None:
        lines += _measured(measurement, fell)
    if builds is not None:
        lines += built_here(builds)
    for b in p.config.priority:
        lines += _aggregate(p, b)
    if what_to_change:
        lines += _what_to_change(p, builds)
    return "\n".join(lines) + "\n"


def built_here(builds: "Builds") -> list[str]:
    """The "Built on this machine" section: what `part.build()` found, in its words."""
    check_builds(builds)
    return ["Built on this machine:", *(f"  {line}" for line in builds.lines()), ""]


def measured_fallbacks(p: "Partition", measurement: Any) -> dict[str, str]:
    """tag -> why (its backend's error), for the subgraphs of `p` that fell back to eager PyTorch in `measurement`
    (its per_subgraph rows with status "fallback"); ConfigError when it measured another partition."""
    if measurement is None:
        return {}
    per = getattr(measurement, "per_subgraph", None)
    if per is None or not hasattr(per, "columns") or "tag" not in per.columns:
        raise ConfigError("measurement= takes the hv.Measurement that hv.measure(partition, ...) returned, "
                          f"not {type(measurement).__name__}.")
    unknown = sorted(set(per["tag"]) - {sg.tag for sg in p.subgraphs})
    if unknown:
        raise ConfigError(f"measurement= must be a measurement of this partition (hv.measure(p, inputs)); its "
                          f"subgraphs {unknown[:3]} are not in this one.")
    if "status" not in per.columns:
        return {}
    rows = per[per["status"] == "fallback"]
    errors = rows["error"] if "error" in rows.columns else [None] * len(rows)
    return {str(tag): error if isinstance(error, str) and error else "its compile failed"
            for tag, error in zip(rows["tag"], errors)}


def _measured(m: Any, fell: dict[str, str]) -> list[str]:
    """The "Measured" section: the measurement's line, what ran accelerated, the fallbacks."""
    lines = ["", f"  {'-' * 20} Measured {'-' * 20}", "", f"   {m!r}"]
    ran = m.per_subgraph["backend"].value_counts().to_dict() if len(m.per_subgraph) else {}
    lines.append("   What ran: " + (", ".join(f"{n} subgraph(s) in {b}" for b, n in ran.items()) or "nothing"))
    nothing = getattr(m, "nothing_accelerated_text", None)
    if nothing is not None and nothing():
        lines.append(f"   {nothing()[0].upper()}{nothing()[1:]}.")
    if fell:
        lines.append(f"   {len(fell)} subgraph(s) FELL BACK and ran in eager PyTorch, not their backend:")
        lines += [f"     {tag}: {why}" for tag, why in fell.items()]
    return lines


def _what_to_change(p: "Partition", builds: "Builds | None" = None) -> list[str]:
    """The top blockers (Partition.blockers, with `builds`' failures first), each with what fixing it saves."""
    head = f"  {'-' * 20} What to change {'-' * 20}"
    table = for_reports(p, builds)
    if table is None:
        return ["", head, "", f"   {not_computed_text(p)}"]
    causes = int((table.kind != "combined").sum())
    if not causes:
        return ["", head, "", "   Nothing keeps nodes out of the accelerated backends."]
    return ["", head, "", f"   {intro_text(p, table)}", *(f"   {line}" for line in change_lines(table, REPORT_ROWS))]


def _coverage(p: "Partition") -> list[str]:
    t, stats = p.records, p.stats
    lines = [f"The graph consists of {stats['compute_ops']} Total Operators, of which "
             f"{stats['supported_ops']} operators are supported, {stats['coverage'] * 100:.2f}% coverage",
             f"  ({count_text('nodes', stats['nodes'])}: {count_text('compute_ops', stats['compute_ops'])}, of which "
             f"{count_text('supported_ops', stats['supported_ops'])}, and "
             f"{stats['nodes'] - stats['compute_ops']:,} getitem/view nodes that run with their producer)"]
    compute = [i for i in range(len(t)) if t.compute[i]]
    per_backend = Counter(t.eligible_backend[i] for i in compute)
    for b in p.config.priority:
        share = per_backend.get(b, 0) / len(compute) * 100 if compute else 0.0
        lines.append(f"  {b}: {per_backend.get(b, 0)} operators eligible ({share:.2f}%)")
    return lines + [f"  PyTorch (no backend): {per_backend.get(FALLBACK, 0)} operators", ""]


def _left_to_torch(p: "Partition") -> list[str]:
    """The unsupported and excluded ops with their counts, and every node that runs in PyTorch."""
    t = p.records
    lines: list[str] = []
    compute = [i for i in range(len(t)) if t.compute[i]]
    code = t.reason_code  # demotion only ever overrides 'supported'
    unsupported = Counter(t.op[i] for i in compute if code[i] in (UNSUPPORTED, VALIDATOR))
    excluded = Counter(t.op[i] for i in compute if code[i] == TORCH_EXECUTED)
    if unsupported or excluded:
        lines.append("The following ops are currently unsupported or excluded from conversion, "
                     "and are listed with their op-count in the graph:")
        forced = {t.op[i]: t.forced_from[i] for i in compute if code[i] == TORCH_EXECUTED}
        for op, c in (unsupported + excluded).most_common():
            source = forced.get(op)
            why = "unsupported" if op not in excluded else (
                f"excluded (forced from {short_op(source)})" if source else "excluded (torch_executed_ops)")
            lines.append(f" {op}: {c}  [{why}]")
        lines.append("")
    in_torch = [i for i in range(len(t)) if t.backend[i] == FALLBACK]
    if in_torch:
        lines.append("The following nodes are currently set to run in Torch:")
        lines += [f"Node: {t.op[i]}, with layer location: {t.name[i]}  ({t.short_reason(i)})" for i in in_torch]
        lines += ["Note: Some of the above nodes may be supported, but were not included in an "
                  "accelerated graph by the partitioner", ""]
    return lines


def _structure(p: "Partition", fell: dict[str, str] | None = None) -> list[str]:
    """The settings, then inputs -> each subgraph (inputs, op count, outputs) -> outputs; an
    engine in `fell` (tag -> why) says it fell back to eager PyTorch when measured."""
    fell = fell or {}
    t = p.records
    lines = [f"Compiled with: {p.config.to_dict()}", "", "  Graph Structure:", ""]
    graph_inputs = [t.spec[i] for i in range(len(t)) if t.kind[i] == "placeholder"]
    output = next((i for i in range(len(t)) if t.kind[i] == "output"), None)
    graph_outputs = [t.spec[a] for a in t.inputs[output]] if output is not None else []
    lines.append(f"   Inputs: {_specs(graph_inputs)}")
    numbers: Counter = Counter()
    for sg in p.subgraphs:
        numbers[sg.backend] += 1
        kind = f"{sg.backend} engine" if sg.is_acc else "PyTorch segment"
        lines += ["    ...", f"    {kind} #{numbers[sg.backend]} - Submodule name: {sg.tag}",
                  *([f"     FELL BACK when measured: ran in eager PyTorch ({sg.backend} could not compile it: "
                      f"{fell[sg.tag]})"] if sg.tag in fell else []),
                  f"     Engine Inputs: {_specs(sg.inputs)}", f"     Number of Operators in Engine: {sg.compute_ops}",
                  f"     Engine Outputs: {_specs(sg.outputs)}"]
    return lines + ["    ...", f"   Outputs: {_specs(graph_outputs)}"]


def _aggregate(p: "Partition", b: str) -> list[str]:
    """One backend's engines (count, average and largest op count) and min_block_size advice."""
    engines = [sg for sg in p.subgraphs if sg.is_acc and sg.backend == b]
    lines = ["", f"  {'-' * 20} Aggregate Stats: {b} {'-' * 20}", ""]
    if not engines:
        return lines + [f"   Aggregate stats not available since no {b} engines were generated."]
    ops = [sg.compute_ops for sg in engines]
    lines += [f"   Number of {b} engines: {len(engines)}",
              f"   Average Number of Operators per {b} Engine: {round(sum(ops) / len(ops), 2)}",
              f"   Most Operators in a {b} Engine: {max(ops)}", "", f"  {'*' * 10} Recommendations: {b} {'*' * 10}", ""]
    # min_block_size counts every node of a subgraph (getitem included), as upstream's partitioner does,
    # so the recommended sizes are in nodes; the engine counts come from re-partitioning.
    sizes = [len(sg.nodes) for sg in engines]
    most, moderate, least = max(sizes), math.ceil(sum(sizes) / len(sizes)), min(sizes)
    rest = ", the nodes of smaller blocks left to PyTorch"
    lines.append(f"   - For minimal graph segmentation, select min_block_size={most} which would generate "
                 f"{_engines_at(p, b, most, sizes)} {b} engine(s){rest if most > least else ''}")
    if moderate != most:
        lines.append(f"   - For moderate graph segmentation, select min_block_size={moderate} which would "
                     f"generate {_engines_at(p, b, moderate, sizes)} {b} engine(s){rest if moderate > least else ''}")
    lines.append(f"   - The current level of graph segmentation is equivalent to selecting min_block_size="
                 f"{least} which generates {_engines_at(p, b, least, sizes)} {b} engine(s)")
    return lines + ["     (min_block_size counts the nodes of a subgraph, getitem and view included)"]


def _engines_at(p: "Partition", backend: str, size: int, sizes: list[int]) -> int:
    """Engines of `backend` at min_block_size=size: re-partitioned (only the small-block pass
    runs again) for hierviz's engine; for upstream's, whose traversal is not kept, estimated as
    its dryrun does (engines already that large)."""
    if p.engine != "hierviz" or p.graph is None:  # upstream's engines, or a saved partition
        return len([s for s in sizes if s >= size])
    return p.subgraph_counts(size).get(backend, 0)


# ---------------------------------------------------------------------------- tables
def ops_table(p: "Partition") -> "pd.DataFrame":
    """One row per op target: how many, where they run, and why."""
    import pandas as pd

    t = p.records
    rows: dict[str, dict[str, Any]] = {}
    reasons: dict[str, Counter] = {}
    for i in range(len(t)):
        if not t.is_callable(i):
            continue
        op = t.op[i]
        row = rows.setdefault(op, {"op": op, "count": 0, **{b: 0 for b in p.backends}})
        row["count"] += 1
        b = t.backend[i]
        row[b] = row.get(b, 0) + 1
        reasons.setdefault(op, Counter())[t.short_reason(i)] += 1
    table = []
    for op, row in rows.items():
        where = [b for b in p.backends if row.get(b)]
        row["backend"] = ", ".join(where)
        row["reason"] = "; ".join(r for r, _ in reasons[op].most_common(2))
        table.append(row)
    cols = ["op", "count", "backend", *p.backends, "reason"]
    df = pd.DataFrame(table, columns=cols)
    return df.sort_values(["count", "op"], ascending=[False, True], ignore_index=True)



def summary_table(p: "Partition") -> "pd.DataFrame":
    """One row per subgraph: tag, backend, op counts, boundary tensors and their shapes."""
    import pandas as pd

    t = p.records
    rows = []
    for k, sg in enumerate(p.subgraphs):
        ops = Counter(t.op[i].replace("torch.ops.", "") for i in t.subgraph_members[k])
        rows.append({
            "tag": sg.tag,
            "backend": sg.backend,
            "accelerated": sg.is_acc,
            "ops": sg.compute_ops,
            "nodes": len(sg.nodes),
            "inputs": len(sg.inputs),
            "outputs": len(sg.outputs),
            "input_shapes": "; ".join(str(s) for s in sg.inputs),
            "output_shapes": "; ".join(str(s) for s in sg.outputs),
            "top_ops": ", ".join(f"{o} x{c}" for o, c in ops.most_common(3)),
        })
    return pd.DataFrame(rows, columns=["tag", "backend", "accelerated", "ops", "nodes", "inputs",
                                       "outputs", "input_shapes", "output_shapes", "top_ops"])
