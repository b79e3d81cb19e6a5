"""The fix for engines that fail to convert or build: ops moved to PyTorch, shown to build.

For every op of the failing subgraphs, cheapest first (the fewest nodes moved), the partition
is made again with that op added to `torch_executed_ops`, and every TensorRT subgraph of it is
built. A fix is a set under which every engine built and at least one TensorRT engine is left
(moving the whole model to PyTorch "builds" nothing: it is no fix); of those found, the one with
the fewest subgraphs is chosen (then the cheapest). Nothing is guessed: an op whose partition
was not built is never offered. The fix says what it costs: the compute ops TensorRT no longer
runs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from hierviz.capturing.provenance import short_op

MAX_TRIES = 40  # ops tried at most, cheapest first
TENSORRT = "tensorrt"


@dataclass(frozen=True)
class Fix:
    """`ops`: the whole torch_executed_ops to pass to hv.partition; `added`: the ops it moves;
    `subgraphs`: the subgraphs per backend it gives (every engine built); `tried`: ops tried;
    `partition`: the partition with the fix applied, whose engines were built (None without a fix)."""

    ops: frozenset[str] | None
    added: tuple[str, ...]
    subgraphs: dict[str, int]
    tried: int
    text: str
    partition: Any = field(default=None, repr=False, compare=False)


def tensorrt_ops(part: Any) -> int:
    """The compute ops the partition's TensorRT subgraphs run."""
    return sum(sg.compute_ops for sg in part.subgraphs if sg.backend == TENSORRT)


def keeps_tensorrt(part: Any) -> bool:
    """Whether the partition still has a TensorRT engine: a candidate without one is no fix."""
    return any(sg.backend == TENSORRT for sg in part.subgraphs)


def candidates(part: Any, tags: Sequence[str]) -> list[str]:
    """The ops (every call, views and getitem included) of the subgraphs `tags`, cheapest first
    (fewest nodes), not already moved."""
    moved = {short_op(str(op)) for op in part.config.torch_executed_ops}
    count: Counter[str] = Counter()
    for tag in tags:
        for name in part.subgraph(tag).nodes:
            record = part.record(name)
            if record.kind == "call_function":
                op = short_op(str(record.op))
                if op not in moved:
                    count[op] += 1
    return sorted(count, key=lambda op: (count[op], op))


def find_fix(part: Any, failing: Sequence[str], all_built: Callable[[Any], bool],
             repartition: Callable[[Any, Any], Any], max_tries: int = MAX_TRIES) -> Fix:
    """The fix for the failing subgraphs `failing` of `part`: `repartition(graph, config)` makes
    a partition, `all_built(partition)` says whether every engine of it builds; a partition
    with no TensorRT engine left is never a fix."""
    ops = candidates(part, failing)
    found: list[tuple[int, int, str, Any]] = []
    tried = 0
    for rank, op in enumerate(ops[:max_tries]):
        tried += 1
        config = part.config.replace(torch_executed_ops=set(part.config.torch_executed_ops) | {op})
        again = repartition(part.graph, config)
        if keeps_tensorrt(again) and all_built(again):
            found.append((again.stats["subgraphs"], rank, op, again))
    if not found:
        more = f" (the {tried} cheapest of {len(ops)})" if tried < len(ops) else ""
        return Fix(None, (), {}, tried, f"no single op moved to PyTorch makes every engine build while keeping a "
                                        f"TensorRT engine: tried {tried} op(s){more}")
    n, _, op, best = min(found)
    whole = frozenset({short_op(str(o)) for o in part.config.torch_executed_ops} | {op})
    by = {b: c for b, c in best.stats["subgraphs_by_backend"].items() if c}
    extra = n - part.stats["subgraphs"]
    others = [o for _, _, o, _ in sorted(found) if o != op]
    also = f"; also building: {', '.join(others[:4])}" + (" ..." if len(others) > 4 else "") if others else ""
    before, after = tensorrt_ops(part), tensorrt_ops(best)
    cost = (f"TensorRT runs {after} of the {before} compute ops it ran ({before - after} to PyTorch)"
            if after < before else "TensorRT runs every compute op it ran")
    text = (f"torch_executed_ops={sorted(whole)}: every engine builds, {n} subgraphs "
            f"({', '.join(f'{b}={c}' for b, c in by.items())}; {extra:+d}); {cost}{also}")
    return Fix(whole, (op,), by, tried, text, best)


__all__ = ["Fix", "MAX_TRIES", "candidates", "find_fix"]
