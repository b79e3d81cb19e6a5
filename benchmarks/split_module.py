"""What the split module (`Partition.module`) costs beside the partition, now and the way it was
built before, in the same run.

    python benchmarks/split_module.py [--nodes 16000] [--no-llama]

For a 16k-node branchy graph (hv.zoo.synthetic) and a captured 24-layer Llama (transformers
LlamaConfig, hidden 256, random weights; benchmarks/llm.py) it prints the partition's time,
`.module`'s time (hierviz.partitioner.splitter: the split made in one pass, each submodule's code
generated when it first runs) and its first call, which generates that code; then the same for
the former build (a compiled copy of the graph that never runs, then torch.fx's split_by_tags
with plain GraphModules, whose recompiles generate every submodule's code again when the parent
is made and when the input check is added); and how many times GraphModule.recompile ran in
`.module` and its first call. What a user waits for before the first answer is the sum.
The partition is timed twice: on a graph hierviz has not seen (its index built: a user's first
partition, with `.module`'s ratio to it) and again (what a changed setting costs); the `.module`
ratios are to the second, the faster one.

The last columns time torch.fx copying the graph's nodes once (`Graph.graph_copy`, the collector
paused as in `.module`): the least any split made of torch.fx nodes costs, since the split makes
every node once more, plus a placeholder per value entering a subgraph and a getitem per value
leaving one.

Target (issue 29): `.module` <= 4x the partition on both (it was 8-17x).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

from torch.fx import GraphModule
from torch.fx.passes.split_utils import split_by_tags

import torch

import hierviz as hv
from hierviz.foundation.gcpause import gc_paused
from hierviz.partitioner.graph_copy import copy_graph_module

sys.path.insert(0, str(Path(__file__).resolve().parent))


class Counted:
    """Counts GraphModule.recompile calls while active."""

    def __enter__(self) -> "Counted":
        self.calls, self._original = 0, GraphModule.recompile
        counter = self

        def counted(module):
            counter.calls += 1
            return counter._original(module)

        GraphModule.recompile = counted
        return self

    def __exit__(self, *exc) -> None:
        GraphModule.recompile = self._original


def former_module(p: hv.Partition) -> GraphModule:
    """The split module as it was built before: a compiled copy, plain split_by_tags, and the
    recompile after the input check (which regenerated every submodule again)."""
    work = copy_graph_module(p.graph)
    copies = {n.name: n for n in work.graph.nodes}
    for sg in p.subgraphs:
        for name in sg.nodes:
            copies[name].tag = sg.tag
    split = split_by_tags(work, [s.tag for s in p.subgraphs])
    split.recompile()
    return split


def timed(build, inputs: tuple, best: dict, calls: dict, key: str) -> None:
    """Time build() and the first call of what it returns, counting recompiles in both."""
    gc.collect()
    with Counted() as c:
        start = time.perf_counter()
        module = build()
        best[key] = min(best.get(key, float("inf")), time.perf_counter() - start)
        start = time.perf_counter()
        module(*inputs)
        best[key + " call"] = min(best.get(key + " call", float("inf")), time.perf_counter() - start)
    calls[key] = c.calls


def copy_once(gm: GraphModule) -> float:
    """Seconds torch.fx takes to make each node of gm once more (a plain graph copy)."""
    gc.collect()
    start = time.perf_counter()
    with gc_paused():
        graph = torch.fx.Graph()
        graph.graph_copy(gm.graph, {})
    return time.perf_counter() - start


def measure(label: str, gm: GraphModule, inputs: tuple, repeats: int = 2) -> None:
    best: dict = {"partition": float("inf"), "cold": float("inf")}
    calls: dict = {}
    for _ in range(repeats):
        fresh = copy_graph_module(gm)  # a graph hierviz has not indexed yet
        gc.collect()
        start = time.perf_counter()
        hv.partition(fresh)
        best["cold"] = min(best["cold"], time.perf_counter() - start)
        gc.collect()
        start = time.perf_counter()
        p = hv.partition(gm)
        best["partition"] = min(best["partition"], time.perf_counter() - start)
        timed(lambda: p.module, inputs, best, calls, "module")
        timed(lambda: former_module(p), inputs, best, calls, "former")
        best["copy"] = min(best.get("copy", float("inf")), copy_once(gm))
    part = best["partition"]
    row = (f"{label:10} {len(gm.graph.nodes):>7} {p.stats['subgraphs']:>9} {best['cold']:>8.3f} {part:>7.3f} "
           f"{best['module'] / best['cold']:>6.1f}x")
    for key in ("module", "former"):
        build, call = best[key], best[key + " call"]
        row += f" | {build:>9.3f} {build / part:>6.1f}x {call:>10.3f} {build + call:>7.3f} {calls[key]:>10}"
    row += f" | {best['copy']:>6.3f} {best['copy'] / part:>6.1f}x"
    print(row, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=16000)
    parser.add_argument("--no-llama", action="store_true")
    args = parser.parse_args(argv)
    hv.support.tensorrt().names  # noqa: B018 - the converter registry loaded outside the timings
    columns = f"{'.module s':>9} {'ratio':>7} {'1st call s':>10} {'sum s':>7} {'recompiles':>10}"
    print(f"{'':28} {'partition s':^16} {'':7} | {'now':^47} | {'former':^47} | {'graph copy':^14}")
    print(f"{'graph':10} {'nodes':>7} {'subgraphs':>9} {'new graph':>8} {'again':>7} {'ratio':>7} | {columns} | "
          f"{columns} | {'s':>6} {'ratio':>7}")
    gm = hv.zoo.synthetic(args.nodes)
    measure("branchy", gm, hv.zoo.synthetic_inputs(gm))
    if not args.no_llama:
        import llm

        model, inputs = llm.llama()
        measure("llama24", hv.capture(model, inputs, cache=False), inputs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
