"""Passes 3 and 4 as a search: the traversal in switch-height order, merged, and then, on a
graph small enough for the search budget where some phase had a choice of backend and the
plan is above the lower bound (1 + the most backend changes on a path), restarts whose phase
choices are drawn at random (fixed seeds, so every process gets the same plan), each merged
too. The plan with the fewest subgraphs wins; ties go to the earliest, so the search only
ever removes subgraphs."""

from __future__ import annotations

import random
from typing import Sequence

from hierviz.partitioner.engine.graph_index import GraphIndex
from hierviz.partitioner.engine.passes.merging import merge
from hierviz.partitioner.engine.passes.traversal import Ready, switch_heights, traverse
from hierviz.partitioner.engine.plan import RawSubgraph

SEARCH_BUDGET = 10_000  # callable nodes all restarts together may visit (a 16k-node graph gets none)
RESTARTS = 32  # at most, on graphs of up to SEARCH_BUDGET / RESTARTS callable nodes
KEEP_HEIGHT_ORDER = 0.5  # a restart's chance, at each phase, of the switch-height order's choice


def fewest_subgraphs(index: GraphIndex, backend: Sequence[str | None], groups: dict[int, frozenset[int]],
                     deps: tuple[list[int], list[Sequence[int]]]) -> list[RawSubgraph]:
    """The merged traversal with the fewest subgraphs: the switch-height order's, or a
    restart's (at most RESTARTS, and SEARCH_BUDGET node visits in all)."""
    height = switch_heights(index, backend, *deps)
    choices = 0

    def first(live: Ready) -> tuple[int, int]:
        nonlocal choices
        choices += len(live) > 1
        return live[0][0]

    best = merge(index, traverse(index, backend, groups, deps, first, height), deps[1])
    # a path with h backend changes needs h + 1 subgraphs: at that bound nothing can do better
    bound = 1 + max((height[i] for i in index.callable_indices), default=-1)
    restarts = min(RESTARTS, SEARCH_BUDGET // max(1, len(index.callable_indices)))
    if not choices or len(best) <= bound:
        restarts = 0
    for seed in range(restarts):
        rng = random.Random(seed)

        def drawn(live: Ready, rng: random.Random = rng) -> tuple[int, int]:
            return (live[0] if rng.random() < KEEP_HEIGHT_ORDER else rng.choice(live))[0]

        candidate = merge(index, traverse(index, backend, groups, deps, drawn, height), deps[1])
        if len(candidate) < len(best):
            best = candidate
            if len(best) <= bound:
                break
    return best
