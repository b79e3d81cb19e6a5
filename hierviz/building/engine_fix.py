"""The fix for engines that fail to convert or build: ops moved to PyTorch, shown to build.

A fix is a set of ops that, added to `torch_executed_ops`, makes every TensorRT engine build
while at least one TensorRT engine is left (moving the whole model to PyTorch "builds" nothing:
it is no fix). Of the fixes, the one with the fewest ops is chosen, then the fewest subgraphs.
Nothing is guessed: a set whose partition was not built is never offered.

The search spends builds, not partitions (partitioning is cheap, building is not):
  1. single ops: each op of the failing subgraphs (the `first` ops, e.g. the smallest failing
     part's, before the rest; then the fewest nodes moved first) is partitioned; the partitions
     are built in order of their subgraph count, so the first that builds is the best single
     op and the search stops there;
  2. sets of ops, when no single op works: ops added in that order until the set builds
     (stopping when TensorRT would be left nothing), then delta debugging over that set (its
     halves, quarters, ... and their complements) down to a set from which no op can be
     dropped, within `budget` tested sets.
The fix says what it costs: the compute ops TensorRT no longer runs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from hierviz.foundation.delta_debugging import ddmin
from hierviz.capturing.provenance import short_op as _short

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition
    from hierviz.settings.config import Config

MAX_TRIES = 40  # single ops partitioned at most, cheapest first
SET_BUDGET = 24  # sets of ops tested at most when no single op works
TENSORRT = "tensorrt"


@dataclass(frozen=True)
class Fix:
    """`ops`: the whole torch_executed_ops to pass to hv.partition; `added`: the ops it moves;
    `subgraphs`: the subgraphs per backend it gives (every engine built); `tried`: partitions
    tested (built); `partition`: the partition with the fix applied, whose engines were built
    (None without a fix); `builds`: the builder's calls the search spent, `cached` the builds it
    read from the build cache. The text is the same whatever the cache held: how many builds the
    search took is in `builds` and `cached` (Builds.lines() says it)."""

    ops: frozenset[str] | None
    added: tuple[str, ...]
    subgraphs: dict[str, int]
    tried: int
    text: str
    partition: Partition | None = field(default=None, repr=False, compare=False)
    builds: int = 0
    cached: int = 0  # builds the search read from the build cache


def short_op(name: str) -> str:
    """An op as a fix names it: an aten op short ('aten.split.Tensor', 'aten.relu'), any other
    op (a custom op's 'torch.ops.mylib.op.default') by its qualified name, which
    torch_executed_ops takes back as it is."""
    return _short(name) if name.startswith(("torch.ops.aten.", "aten.")) else name


def tensorrt_ops(part: Partition) -> int:
    """The compute ops the partition's TensorRT subgraphs run."""
    return sum(sg.compute_ops for sg in part.subgraphs if sg.backend == TENSORRT)


def keeps_tensorrt(part: Partition) -> bool:
    """Whether the partition still has a TensorRT engine: a candidate without one is no fix."""
    return any(sg.backend == TENSORRT for sg in part.subgraphs)


def candidates(part: Partition, tags: Sequence[str], first: Sequence[str] = ()) -> list[str]:
    """The ops (every call, views and getitem included) of the subgraphs `tags`, not already
    moved: those in `first` (short names) first, then the rest, each group cheapest first
    (fewest nodes)."""
    moved = {short_op(str(op)) for op in part.config.torch_executed_ops}
    count: Counter[str] = Counter()
    for tag in tags:
        for name in part.subgraph(tag).nodes:
            record = part.record(name)
            if record.kind == "call_function":
                op = short_op(str(record.op))
                if op not in moved:
                    count[op] += 1
    preferred = {short_op(str(op)) for op in first}
    return sorted(count, key=lambda op: (op not in preferred, count[op], op))


class _Search:
    """The partitions tried, each set of ops once: `works(ops)` says whether moving them builds
    every engine and keeps a TensorRT one."""

    def __init__(self, part: Partition, all_built: Callable[[Partition], bool],
                 repartition: Callable[[Any, Config], Partition]) -> None:
        self.part, self.all_built, self.repartition = part, all_built, repartition
        self.moved = frozenset(short_op(str(o)) for o in part.config.torch_executed_ops)
        self.partitions: dict[frozenset[str], Partition] = {}
        self.verdicts: dict[frozenset[str], bool] = {}
        self.tested = 0

    def partition(self, ops: frozenset[str]) -> Partition:
        if ops not in self.partitions:
            config = self.part.config.replace(torch_executed_ops=set(self.moved | ops))
            self.partitions[ops] = self.repartition(self.part.graph, config)
        return self.partitions[ops]

    def works(self, ops: frozenset[str]) -> bool:
        if ops not in self.verdicts:
            again = self.partition(ops)
            self.tested += 1
            self.verdicts[ops] = keeps_tensorrt(again) and self.all_built(again)
        return self.verdicts[ops]


def _ddmin(ops: list[str], works: Callable[[frozenset[str]], bool], budget: Callable[[], bool]) -> list[str] | None:
    """A set of `ops` that works, from which no op can be dropped (delta debugging), or None
    when the whole set does not work or the budget (`budget()` False) ran out before it did."""
    if not budget() or not works(frozenset(ops)):
        return None
    return ddmin(ops, lambda chunk: works(frozenset(chunk)), budget)


def _grow_then_shrink(order: list[str], search: _Search, budget: Callable[[], bool]) -> list[str] | None:
    """A set of ops that works, found by adding ops in `order` (best single first) until the
    set works, then shrunk by delta debugging to a set from which no op can be dropped; None
    when adding them leaves no TensorRT engine first, or the budget ran out."""
    grown: list[str] = []
    for op in order:
        grown.append(op)
        if not keeps_tensorrt(search.partition(frozenset(grown))):
            return None  # moving more only takes more from TensorRT
        if len(grown) > 1:
            if not budget():
                return None
            if search.works(frozenset(grown)):
                return _ddmin(grown, search.works, budget)
    return None


def find_fix(part: Partition, failing: Sequence[str], all_built: Callable[[Partition], bool],
             repartition: Callable[[Any, Config], Partition], max_tries: int = MAX_TRIES, *, first: Sequence[str] = (),
             budget: int = SET_BUDGET, builds: Callable[[], int] = lambda: 0,
             cached: Callable[[], int] = lambda: 0) -> Fix:
    """The fix for the failing subgraphs `failing` of `part`: `repartition(graph, config)` makes
    a partition, `all_built(partition)` says whether every engine of it builds; `first`: ops to
    try before the rest; `budget`: sets of ops tested at most when no single op works;
    `builds()`: the builder's calls so far, `cached()` the builds read from the build cache (the
    fix says how many of each the search spent)."""
    start, hits = builds(), cached()
    search = _Search(part, all_built, repartition)
    ops = candidates(part, failing, first)
    singles = [(search.partition(frozenset({op})), rank, op) for rank, op in enumerate(ops[:max_tries])]
    singles = [s for s in singles if keeps_tensorrt(s[0])]
    singles.sort(key=lambda s: (s[0].stats["subgraphs"], s[1]))
    for again, _, op in singles:
        if search.works(frozenset({op})):
            return _found(part, (op,), again, search.tested, builds() - start, cached() - hits)
    tested_singles = search.tested
    order = [op for _, _, op in singles] + [op for op in ops[:max_tries] if op not in {o for _, _, o in singles}]
    chosen = _grow_then_shrink(order, search, lambda: search.tested - tested_singles < budget)
    spent = builds() - start
    if chosen is None:
        more = f" (the {min(max_tries, len(ops))} cheapest of {len(ops)})" if len(ops) > max_tries else ""
        return Fix(None, (), {}, search.tested,
                   f"no op moved to PyTorch makes every engine build while keeping a TensorRT engine: tried "
                   f"{min(max_tries, len(ops))} single op(s){more} and {search.tested - tested_singles} set(s) of "
                   f"the {len(ops)} ops of the failing subgraphs (a budget of {budget} sets)",
                   builds=spent, cached=cached() - hits)
    chosen = sorted(chosen)
    return _found(part, tuple(chosen), search.partition(frozenset(chosen)), search.tested, spent, cached() - hits)


def _found(part: Partition, added: tuple[str, ...], best: Partition, tested: int, spent: int, cached: int) -> Fix:
    whole = frozenset({short_op(str(o)) for o in part.config.torch_executed_ops} | set(added))
    n = best.stats["subgraphs"]
    by = {b: c for b, c in best.stats["subgraphs_by_backend"].items() if c}
    extra = n - part.stats["subgraphs"]
    before, after = tensorrt_ops(part), tensorrt_ops(best)
    cost = (f"TensorRT runs {after} of the {before} compute ops it ran ({before - after} to PyTorch)"
            if after < before else "TensorRT runs every compute op it ran")
    text = (f"torch_executed_ops={sorted(whole)}: every engine builds, {n} subgraphs "
            f"({', '.join(f'{b}={c}' for b, c in by.items())}; {extra:+d}); {cost}")
    return Fix(whole, added, by, tested, text, best, spent, cached)


__all__ = ["Fix", "MAX_TRIES", "SET_BUDGET", "candidates", "find_fix", "keeps_tensorrt", "tensorrt_ops"]
