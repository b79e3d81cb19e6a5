"""What the split module (`Partition.module`) costs beside the partition, now and the way it was
built before, in the same run.

    python benchmarks/split_module.py [--nodes 16000] [--no-llama]

For a 16k-node branchy graph (hv.zoo.synthetic) and a captured 24-layer Llama (transformers
LlamaConfig, hidden 256, random weights; benchmarks/llm.py) it prints the partition's time,
`.module`'s time (each submodule's code generated once: hierviz.partitioner.split) and the
former build (a compiled copy of the graph that never runs, then torch.fx's split_by_tags with
plain GraphModules, whose recompiles generate every submodule's code again when the parent is
made and when the input check is added), and how many times GraphModule.recompile ran in each.

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

import hierviz as hv
from hierviz.partitioner.result import copy_graph_module

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


def measure(label: str, gm: GraphModule, repeats: int = 2) -> None:
    best = {"partition": float("inf"), "module": float("inf"), "former": float("inf")}
    calls = {}
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        p = hv.partition(gm)
        best["partition"] = min(best["partition"], time.perf_counter() - start)
        with Counted() as c:
            start = time.perf_counter()
            p.module  # noqa: B018 - builds the split module
            best["module"] = min(best["module"], time.perf_counter() - start)
        calls["module"] = c.calls
        with Counted() as c:
            start = time.perf_counter()
            former_module(p)
            best["former"] = min(best["former"], time.perf_counter() - start)
        calls["former"] = c.calls
    part = best["partition"]
    print(f"{label:10} {len(gm.graph.nodes):>7} {p.stats['subgraphs']:>9} {part:>11.3f} "
          f"{best['module']:>9.3f} {best['module'] / part:>6.1f}x {calls['module']:>9} "
          f"{best['former']:>9.3f} {best['former'] / part:>6.1f}x {calls['former']:>9}", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=16000)
    parser.add_argument("--no-llama", action="store_true")
    args = parser.parse_args(argv)
    hv.support.tensorrt().names  # noqa: B018 - the converter registry loaded outside the timings
    print(f"{'graph':10} {'nodes':>7} {'subgraphs':>9} {'partition s':>11} {'.module s':>9} {'ratio':>7} "
          f"{'recompiles':>9} {'former s':>9} {'ratio':>7} {'recompiles':>9}")
    measure("branchy", hv.zoo.synthetic(args.nodes))
    if not args.no_llama:
        import llm

        model, inputs = llm.llama()
        measure("llama24", hv.capture(model, inputs, cache=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
