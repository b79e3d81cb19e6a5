"""The smallest part of a failed subgraph that still fails the same way (`Builds.repro`).

Polygraphy's `debug reduce` and torch's fx minifier are the models. A part is a set of the
subgraph's call nodes made into its own GraphModule (`part_of`): a value from outside the part
becomes a placeholder carrying its producer's `meta['val']` (a weight stays a get_attr, copied
in), and a value some node outside the part (or the output) uses becomes an output. The search
(`smallest_failing`) bisects the topological order to the shortest failing block, then removes
nodes between its ends (delta debugging) while the part still fails with the same signature
(docs/repro.md says the rule), in at most 2*log2(N) + 8 builds in all for N nodes
(`max_builds`): the shrink stops there with the smallest failing part it has.
"""

from __future__ import annotations

import math
import operator
import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import torch

from hierviz.foundation.delta_debugging import ddmin
from hierviz.foundation.opnames import CALLABLE_OPS
from hierviz.trt.build_errors import CUT_MARK

FAILING = ("run", "convert", "build")  # a part failing at one of these may be the failure searched for

_HEX = re.compile(r"0x[0-9a-fA-F]+")
_NUMBER = re.compile(r"\d+")


class Signature(NamedTuple):
    """A failure as the search compares it: its stage, exception class and error line masked;
    `cut`: the line was cut short (error_line keeps 200 characters, to its last whole word), so
    `text` is what it kept."""

    stage: str
    exception: str
    text: str
    cut: bool = False


def signature(stage: str, exception: str | None, error: str | None, names: Iterable[str] = (),
              cut: bool = False) -> Signature:
    """The failure's Signature: its error line with every node name of `names` (as a whole word)
    written <node>, every hex address <address>, every run of digits #; `cut`: the line was cut
    to fit (EngineBuild.error_cut). Two failures with one signature are the same failure of
    (possibly) other nodes and sizes (same_failure)."""
    text = error or ""
    if cut:
        text = text[:-len(CUT_MARK)].rstrip()
    for name in sorted(set(names), key=len, reverse=True):
        text = re.sub(rf"(?<![\w.]){re.escape(name)}(?![\w])", "<node>", text)
    return Signature(stage, exception or "", _NUMBER.sub("#", _HEX.sub("<address>", text)), cut)


def same_failure(a: Signature, b: Signature) -> bool:
    """Whether `a` and `b` are one failure: the same stage, exception and masked line, where a
    line cut short need only agree as far as it goes (sizes of other lengths move the cut)."""
    if (a.stage, a.exception) != (b.stage, b.exception):
        return False
    if not (a.cut or b.cut):
        return a.text == b.text
    short, long = sorted((a, b), key=lambda s: len(s.text))
    return short.cut and (long.text == short.text or long.text.startswith(short.text + " "))


def _input_value(node: torch.fx.Node) -> bool:
    """Whether `node`'s value can enter a part as a placeholder: a tensor, or a size that is a
    placeholder of the subgraph (a dynamic dimension)."""
    val = node.meta.get("val")
    return isinstance(val, torch.Tensor) or (node.op == "placeholder" and isinstance(val, torch.SymInt))


def part_of(gm: torch.fx.GraphModule, keep: Iterable[str]) -> torch.fx.GraphModule | None:
    """The call nodes of `gm` named in `keep` as their own GraphModule (node names kept), or None
    when they make no part: none kept, a value from outside that is no tensor, or no output."""
    names = set(keep)
    kept = [n for n in gm.graph.nodes if n.op in CALLABLE_OPS and n.name in names]
    if not kept:
        return None
    inside = set(kept)
    outside: dict[torch.fx.Node, None] = {}
    for n in kept:
        for a in n.all_input_nodes:
            if a not in inside:
                outside.setdefault(a, None)
    graph = torch.fx.Graph()
    env: dict[torch.fx.Node, torch.fx.Node] = {}
    for a in outside:
        if a.op == "get_attr":
            continue
        if not _input_value(a):
            return None
        env[a] = graph.placeholder(a.name)
        env[a].meta = {k: v for k, v in a.meta.items() if k in ("val", "tensor_meta", "stack_trace")}
    for a in outside:
        if a.op == "get_attr":
            env[a] = graph.get_attr(str(a.target))
            env[a].meta = dict(a.meta)
    for n in kept:
        env[n] = graph.node_copy(n, lambda a: env[a])
    results = [env[n] for n in kept if any(u not in inside for u in n.users)]
    if not results:
        return None
    graph.output(results[0] if len(results) == 1 else tuple(results))
    part = torch.fx.GraphModule(gm, graph)  # copies only the weights its get_attrs read
    # of an output that is a tuple (a LayerNorm's), the items the nodes outside take: what an export returns
    part.meta["taken"] = [_taken(n, inside) for n in kept if any(u not in inside for u in n.users)]
    part.graph.lint()
    return part


def _taken(n: torch.fx.Node, inside: set[torch.fx.Node]) -> list[int] | None:
    """Of a tuple-valued output, the items the getitems outside take; None: all of it (a tensor, or
    a tuple the subgraph's own output returns whole)."""
    if not isinstance(n.meta.get("val"), (tuple, list)):
        return None
    outside = [u for u in n.users if u not in inside]
    if any(u.target is not operator.getitem for u in outside):
        return None
    return sorted({u.args[1] for u in outside if isinstance(u.args[1], int)})


def call_nodes(gm: torch.fx.GraphModule) -> list[str]:
    """The names of `gm`'s call nodes, in topological order: what a part is made of."""
    return [n.name for n in gm.graph.nodes if n.op in CALLABLE_OPS]


@dataclass(frozen=True)
class Reduction:
    """What the search found: `nodes` (names, in order) and their `graph`; `builds`: the parts
    built or read from the build cache (the failed subgraph's own build included), `cached`: how
    many of those the build cache answered; `seconds` the search took."""

    nodes: tuple[str, ...]
    graph: torch.fx.GraphModule
    builds: int
    cached: int
    seconds: float


class _Trials:
    """`fails(names)`: whether that part fails with the wanted signature; each part tried once."""

    def __init__(self, gm: torch.fx.GraphModule, build: Callable[[torch.fx.GraphModule], tuple[Any, bool]],
                 wanted: Signature) -> None:
        self.gm, self.build, self.wanted = gm, build, wanted
        self.names = [n.name for n in gm.graph.nodes]
        self.known: dict[frozenset[str], bool] = {}
        self.builds = self.cached = 0

    def fails(self, names: Sequence[str]) -> bool:
        key = frozenset(names)
        if key not in self.known:
            part = part_of(self.gm, key)
            self.known[key] = part is not None and self._same(part)
        return self.known[key]

    def _same(self, part: torch.fx.GraphModule) -> bool:
        made, cached = self.build(part)
        self.builds += 1
        self.cached += int(cached)
        made_signature = signature(made.stage, made.exception, made.error, self.names, made.error_cut)
        return same_failure(made_signature, self.wanted)


def _starts(gm: torch.fx.GraphModule, nodes: list[str], end: int) -> list[int]:
    """The positions i < end where nodes[i:end] can start a part: none of its nodes reads, from a
    node before i, a value that cannot be a placeholder (the tuple of a native_layer_norm that a
    getitem reads). 0 is one: the whole reads only the subgraph's own inputs."""
    at = {name: i for i, name in enumerate(nodes)}
    named = {n.name: n for n in gm.graph.nodes}
    blocked: set[int] = set()
    for j in range(end):
        for a in named[nodes[j]].all_input_nodes:
            if a.name in at and not _input_value(a):
                blocked.update(range(at[a.name] + 1, j + 1))
    return [i for i in range(end) if i not in blocked]


def _bisect(nodes: list[str], fails: Callable[[Sequence[str]], bool],
            starts: Callable[[int], list[int]]) -> list[str]:
    """The shortest block of `nodes` found by bisection that still fails: the fewest leading
    nodes first, then the fewest of those counted from the end, cut only where a part can start
    (`starts(end)`). `nodes` as a whole fails."""
    lo, hi = 0, len(nodes)  # nodes[:hi] fails, nodes[:lo] does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if fails(nodes[:mid]) else (mid, hi)
    end = hi
    cuts = starts(end)
    lo, hi = 0, len(cuts)  # nodes[cuts[lo]:end] fails, nodes[cuts[hi]:end] does not (none past the last)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fails(nodes[cuts[mid]:end]) else (lo, mid)
    return nodes[cuts[lo]:end]


def max_builds(n: int) -> int:
    """The most builds the search makes on a subgraph of `n` call nodes, its own build included:
    2*log2(n) + 8. Bisection takes at most 2*ceil(log2(n)) of them; the shrink has the rest."""
    return math.floor(2 * math.log2(max(n, 1)) + 8)


def _shrink(block: list[str], fails: Callable[[Sequence[str]], bool], budget: Callable[[], bool]) -> list[str]:
    """`block` (it fails) less the nodes between its ends that the failure does not need, by
    delta debugging (ddmin) while `budget()` allows. Its ends stay: bisection found that the
    block fails and that it does not without its last node, nor from the next node a part can
    start at."""
    if len(block) <= 2:
        return block
    first, inner, last = block[0], block[1:-1], block[-1]
    kept = ddmin(inner, lambda some: fails([first, *some, last]), budget)
    if len(kept) == 1 and budget() and fails([first, last]):  # ddmin never drops the last one
        kept = []
    return [first, *kept, last]


def smallest_failing(gm: torch.fx.GraphModule, build: Callable[[torch.fx.GraphModule], tuple[Any, bool]],
                     ) -> Reduction:
    """The smallest part of `gm` that fails as `gm` does, found in at most max_builds(N) builds
    of its N call nodes, building parts with `build(part) -> (EngineBuild, from the cache)` (a
    SubgraphBuilder's build, so trials are cached on disk; or anything with `.stage`,
    `.exception`, `.error` and `.error_cut`, as a lowering run in PyTorch gives)."""
    start = time.perf_counter()
    made, cached = build(gm)
    names = [n.name for n in gm.graph.nodes]
    trials = _Trials(gm, build, signature(made.stage, made.exception, made.error, names, made.error_cut))
    trials.builds, trials.cached = 1, int(cached)
    everything = call_nodes(gm)
    trials.known[frozenset(everything)] = made.stage in FAILING
    limit = max_builds(len(everything))
    block = _bisect(everything, trials.fails, lambda end: _starts(gm, everything, end))
    nodes = _shrink(block, trials.fails, lambda: trials.builds < limit)
    graph = part_of(gm, nodes)
    if graph is None or not trials.fails(nodes):  # never: the whole fails, so some part of it does
        nodes, graph = everything, gm
    return Reduction(tuple(nodes), graph, trials.builds, trials.cached, time.perf_counter() - start)


__all__ = ["FAILING", "Reduction", "call_nodes", "max_builds", "part_of", "signature", "smallest_failing"]
