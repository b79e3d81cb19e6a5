"""Pass 5, demotion: accelerated subgraphs under min_block_size. Upstream's
remove_small_acc_subgraphs (`merge_small`), then `merge` again so that demoted blocks join
neighbouring PyTorch subgraphs; with demote_to="next", a small block first moves to the next
backend in priority that takes all its nodes (`demote_to_next`)."""

from __future__ import annotations

from typing import Sequence

from hierviz.partitioner.engine.graph_index import GraphIndex
from hierviz.partitioner.engine.support_verdicts import SupportVerdicts
from hierviz.partitioner.engine.passes.merging import merge
from hierviz.partitioner.engine.plan import EngineResult, Moves, RawSubgraph
from hierviz.partitioner.reasons import FALLBACK


def demote_to_next(index: GraphIndex, dependents: Sequence[Sequence[int]], subgraphs: list[RawSubgraph],
                   min_block_size: int, nxt: SupportVerdicts) -> tuple[list[RawSubgraph], Moves]:
    """Each accelerated subgraph under `min_block_size` moves to the next backend in priority
    that takes all its nodes; then `merge` joins it with subgraphs of that backend wherever no
    cycle results, and the sizes are tested again, until nothing moves. A backend is only ever
    left for a later one, so this ends after at most len(priority) rounds. What is still small
    afterwards is for upstream's rule (`merge_small`)."""
    moves: dict[int, list[tuple[str, str, int]]] = {}
    while True:
        changed = False
        out: list[RawSubgraph] = []
        for sg in subgraphs:
            if sg.is_acc and len(sg.nodes) < min_block_size:
                target = nxt.after(sg.backend, sg.nodes)
                if target is not None:
                    for m in sg.nodes:
                        moves.setdefault(m, []).append((sg.backend, target, len(sg.nodes)))
                    sg = RawSubgraph(True, target, list(sg.nodes))
                    changed = True
            out.append(sg)
        if not changed:
            return out, {i: tuple(m) for i, m in moves.items()}
        subgraphs = merge(index, out, dependents)


def merge_small(subgraphs: list[RawSubgraph], min_block_size: int,
                keep_all: bool = False) -> tuple[list[RawSubgraph], dict[int, tuple[str, int]]]:
    """Upstream's remove_small_acc_subgraphs. Returns the new list and, for each demoted
    node, (the backend it was eligible for, the size of the subgraph it was in)."""
    result: list[RawSubgraph] = []
    demoted: dict[int, tuple[str, int]] = {}
    for sg in subgraphs:
        sg = RawSubgraph(sg.is_acc, sg.backend, list(sg.nodes))
        if sg.is_acc:
            if len(sg.nodes) >= min_block_size or keep_all:
                result.append(sg)
            elif result and (not result[-1].is_acc or result[-1].backend == sg.backend):
                if not result[-1].is_acc:
                    for m in sg.nodes:
                        demoted[m] = (sg.backend, len(sg.nodes))
                result[-1].nodes.extend(sg.nodes)
            else:
                for m in sg.nodes:
                    demoted[m] = (sg.backend, len(sg.nodes))
                result.append(RawSubgraph(False, FALLBACK, sg.nodes))
        elif result and not result[-1].is_acc:
            result[-1].nodes.extend(sg.nodes)
        else:
            result.append(sg)
    return result, demoted


def small_blocks(index: GraphIndex, deps: tuple[list[int], list[Sequence[int]]],
                 raw: list[RawSubgraph], min_block_size: int, keep_all: bool,
                 nxt: SupportVerdicts | None = None) -> tuple[list[RawSubgraph], dict[int, tuple[str, int]], Moves]:
    """Upstream's small-block pass, then `merge`, so that demoted blocks join PyTorch
    subgraphs they can reach without a cycle; with `nxt` (demote_to="next"), small blocks try
    the later backends in priority first (`demote_to_next`). (Traversing again with the
    demoted nodes in PyTorch was tried: on no zoo model and config did it give fewer subgraphs.)"""
    moved: Moves = {}
    if nxt is not None and not keep_all:
        with nxt.checking():  # the supports set up once for every small block
            raw, moved = demote_to_next(index, deps[1], raw, min_block_size, nxt)
    subgraphs, demoted = merge_small(raw, min_block_size, keep_all)
    if demoted:
        subgraphs = merge(index, subgraphs, deps[1])
    return subgraphs, demoted, moved


def at_min_block_size(res: EngineResult, min_block_size: int,
                      keep_all: bool = False) -> tuple[list[RawSubgraph], dict[int, tuple[str, int]]]:
    """The final subgraphs and demoted nodes of `res` at another min_block_size, re-running only
    the small-block pass and the merge after it (assignment and traversal are kept)."""
    if res.deps is None:  # upstream's result: only upstream's pass
        return merge_small(res.raw, min_block_size, keep_all)
    subgraphs, demoted, _ = small_blocks(res.index, res.deps, res.raw, min_block_size, keep_all, res.next_backend)
    return subgraphs, demoted
