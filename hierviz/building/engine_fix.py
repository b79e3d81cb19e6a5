"""The fix for engines that fail to convert or build: a change shown to make every engine build
that keeps the most in TensorRT.

A fix adds ops to `torch_executed_ops`, conversion settings to `trt_settings`, or both; its
partition keeps a TensorRT engine (moving the whole model to PyTorch "builds" nothing: it is no
fix) and every engine of it builds. Of the fixes shown to build, the one keeping the most
accelerated ops is chosen, then the fewest ops moved (FixSearch.rank). Nothing is guessed: a
change whose engines were not built is never offered.

The search builds at most MAX_TESTS candidates (each: the engines of one partition that were not
built before, up to its first failure) and runs at most MAX_REDUCTIONS smallest-part searches:
  1. it follows the failures: the setting Torch-TensorRT's error names as its remedy
     ("set truncate_double=True") is added; else the op of the node whose converter failed is
     moved; else (a builder failure names no node, or moving that op left the same failure) the
     ops of the failed engine's smallest failing part (reduction) are tried one at a time, the
     one keeping the most first, then together. Each candidate is built and its first failure
     followed, until every engine builds;
  2. the ops found are shrunk by delta debugging to a set from which no op can be dropped;
  3. only when following finds nothing: each op of the failing subgraphs alone, the one keeping
     the most first, then ops added in that order until the set builds, shrunk the same way.
Each fix says what it costs (FixCost): the compute ops it moves out of TensorRT, the
accelerated ops and the subgraphs before and after.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from hierviz.building.fix_cost import FixCost, tensorrt_ops
from hierviz.building.fix_search import FixSearch, Settings, keeps_tensorrt, short_op
from hierviz.building.fix_trials import EngineFailure, FixTrials
from hierviz.building.frozen_random import FrozenRandom, frozen_random
from hierviz.building.named_settings import settings_to_add
from hierviz.building.reduction import Signature, same_failure
from hierviz.building.subgraph_builds import tensorrt_tags
from hierviz.foundation.delta_debugging import ddmin

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.partition_result import Partition
    from hierviz.settings.config import Config

MAX_TRIES = 40  # single ops partitioned at most when following the failures finds nothing
MAX_TESTS = 40  # candidates built at most
MAX_REDUCTIONS = 3  # smallest-part searches at most


@dataclass(frozen=True)
class Fix:
    """`ops`: the whole torch_executed_ops to pass to hv.partition; `added`: the ops it moves;
    `settings`: the conversion settings it adds to trt_settings (none: it sets none);
    `subgraphs`: the subgraphs per backend it gives (every engine built); `tried`: the
    candidates built; `partition`: the partition with the fix applied, whose engines were built
    (None without a fix); `builds`: the builder's calls the search spent, `cached` the builds it
    read from the build cache, `reductions` its smallest-part searches; `cost`: what it costs;
    `frozen_random`: the random ops its engines evaluate once, at build (its text says so).
    The text is the same whatever the cache held: how many builds the search took is in
    `builds` and `cached` (Builds.lines() says it)."""

    ops: frozenset[str] | None
    added: tuple[str, ...]
    subgraphs: dict[str, int]
    tried: int
    text: str
    partition: Partition | None = field(default=None, repr=False, compare=False)
    builds: int = 0
    cached: int = 0  # builds the search read from the build cache
    settings: dict[str, Any] = field(default_factory=dict)
    cost: FixCost | None = None
    reductions: int = 0
    frozen_random: tuple[FrozenRandom, ...] = ()


def change_text(ops: frozenset[str] | None, settings: Mapping[str, Any] | None) -> str:
    """The change a fix makes, as the user writes it: "torch_executed_ops=[...]" (when it moves
    ops), "trt_settings={...}" (when it adds settings), or both."""
    said = [f"torch_executed_ops={sorted(ops)}"] if ops is not None else []
    if settings:
        said.append(f"trt_settings={dict(settings)!r}")
    return " with ".join(said)


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


def _through_smallest_part(search: FixSearch, ops: frozenset[str], settings: dict[str, Any], failure: EngineFailure,
                           seen: Signature) -> frozenset[str] | None:
    """The ops to move next for `failure` (signature `seen`) from its engine's smallest failing
    part: of its ops alone, the one keeping the most whose move builds; else the first whose
    move changes the failure; else its one op (the failure left may be another part's with the
    same words), or all of its ops together; None when there is no part to search or no op to move."""
    if search.trials.reductions >= MAX_REDUCTIONS or not search.can_test():
        return None
    tag = failure[0]
    nodes = search.trials.smallest_part(search.partition(ops), tag, settings)
    found = search.ops_of(ops, tag, nodes)
    tries = sorted((o for o in found if keeps_tensorrt(search.partition(ops | {o}))),
                   key=lambda o: search.rank(ops | {o}, settings))
    changed: frozenset[str] | None = None
    for op in tries:
        if not search.can_test() and not search.known(ops | {op}, settings):
            break
        after = search.failure(ops | {op}, settings)
        if after is None:
            return ops | {op}
        if changed is None and not same_failure(search.signature(after, ops | {op}), seen):
            changed = ops | {op}
    if changed is not None:
        return changed
    if len(tries) == 1:
        return ops | {tries[0]}
    return ops | found if found and keeps_tensorrt(search.partition(ops | found)) else None


def _follow(search: FixSearch) -> tuple[frozenset[str], dict[str, Any]] | None:
    """A candidate that builds, found by following each failure (module docstring, 1.), or None."""
    ops: frozenset[str] = frozenset()
    settings: dict[str, Any] = {}
    failure = search.failure(ops, settings)
    seen: list[Signature] = []
    while failure is not None:
        sig = search.signature(failure, ops)
        made = failure[1]
        named = settings_to_add(made.details or made.error, {**search.trials.settings, **settings})
        op = search.op_of(ops, failure)
        if named:
            search.named.update(named)
            settings = {**settings, **named}
        elif (op is not None and op not in ops and not any(same_failure(sig, s) for s in seen)
              and keeps_tensorrt(search.partition(ops | {op}))):
            ops = ops | {op}
        else:
            more = _through_smallest_part(search, ops, settings, failure, sig)
            if more is None:
                return None
            ops = more
        seen.append(sig)
        if not search.can_test() and not search.known(ops, settings):
            return None
        failure = search.failure(ops, settings)
    return ops, settings


def _shrink(search: FixSearch, ops: frozenset[str], settings: Mapping[str, Any]) -> None:
    """Delta debugging over `ops` (which build with `settings`): every smaller set shown to
    build is kept among the search's working candidates."""
    if len(ops) > 1:
        ddmin(sorted(ops), lambda chunk: search.works(frozenset(chunk), settings), search.can_test)


def _each_op(search: FixSearch, failing: Sequence[str], max_tries: int) -> int:
    """Module docstring, 3.: single ops of the failing subgraphs, then a growing set; returns
    how many ops of them there were."""
    ops = candidates(search.part, failing, list(search.hints))
    settings = dict(search.named)
    singles = [op for op in ops[:max_tries] if keeps_tensorrt(search.partition(frozenset({op})))]
    singles.sort(key=lambda op: search.rank(frozenset({op}), settings))
    for op in singles:
        if not search.can_test():
            return len(ops)
        if search.works(frozenset({op}), settings):
            return len(ops)
    grown: list[str] = []
    for op in singles + [op for op in ops[:max_tries] if op not in singles]:
        grown.append(op)
        if not keeps_tensorrt(search.partition(frozenset(grown))) or not search.can_test():
            break  # moving more only takes more from TensorRT
        if len(grown) > 1 and search.works(frozenset(grown), settings):
            _shrink(search, frozenset(grown), settings)
            break
    return len(ops)


def find_fix(part: Partition, failing: Sequence[str], trials: FixTrials,
             repartition: Callable[[Any, Config], Partition], *, budget: int = MAX_TESTS,
             max_tries: int = MAX_TRIES) -> Fix:
    """The fix for the failing subgraphs `failing` of `part`, built by `trials` (the build's
    SubgraphBuilder, so the engines built already are not built again); `repartition(graph,
    config)` makes a candidate's partition; `budget`: candidates built at most."""
    start, hits = trials.made, trials.cached
    search = FixSearch(part, trials, repartition, budget)
    followed = _follow(search)
    considered = 0
    if followed is not None:
        _shrink(search, *followed)
    else:
        considered = _each_op(search, failing, max_tries)
    spent, cached = trials.made - start, trials.cached - hits
    if not search.working:
        return Fix(None, (), {}, search.tested, _none_found(search, considered), builds=spent, cached=cached,
                   reductions=trials.reductions)
    ops, items = min(search.working, key=lambda k: search.rank(*k))
    return _found(search, ops, items, spent, cached)


def _none_found(search: FixSearch, considered: int) -> str:
    reduced = search.trials.reductions
    return (f"no change makes every engine build while keeping a TensorRT engine: the search built "
            f"{search.tested} candidate(s) (at most {search.budget}), following each failure"
            + (f" through {reduced} smallest failing part(s)" if reduced else "")
            + (f", then moving the {considered} op(s) of the failing subgraphs alone and together"
               if considered else ""))


def _found(search: FixSearch, ops: frozenset[str], items: Settings, spent: int, cached: int) -> Fix:
    best = search.partition(ops)
    added = tuple(sorted(ops))
    whole = frozenset(search.moved | ops)
    settings = dict(items)
    cost = FixCost.between(search.part, best, added)
    change = change_text(whole if added or not settings else None,
                         {**search.trials.settings, **settings} if settings else None)
    frozen = frozen_random(best, tensorrt_tags(best))
    text = f"{change}: every engine builds; {cost.text()}" + "".join(f"; {f.text()}" for f in frozen)
    return Fix(whole, added, cost.by_backend, search.tested, text, best, spent, cached, settings, cost,
               search.trials.reductions, frozen)


__all__ = ["Fix", "MAX_REDUCTIONS", "MAX_TESTS", "MAX_TRIES", "candidates", "change_text", "find_fix",
           "keeps_tensorrt", "tensorrt_ops"]
