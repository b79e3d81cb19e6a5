"""How partitioning time grows with graph size: hierviz against upstream, in the same run.

    python benchmarks/partition_scale.py            # upstream up to 16k nodes (chain), 8k (branchy)
    python benchmarks/partition_scale.py --quick    # upstream up to 8k nodes: a couple of minutes

Three kinds of aten graph, every node with meta["val"] and meta["tensor_meta"]:
- chain:   x -> op -> op -> ... of elementwise ops, all with TensorRT converters (the plain
           chain DESIGN.md measured upstream on: one subgraph);
- chain5:  the same, but every 20th op has no TensorRT converter, so it splits into
           TensorRT and PyTorch subgraphs;
- branchy: hv.zoo.synthetic(n): branches, skip connections, views, a few unsupported ops.

Part 1 partitions each graph with hierviz and with upstream's partitioner (Torch-TensorRT's
hierarchical_adjacency_partition, on a copy, since it modifies its input) with the default
Config, and prints both times. "validated" is hv.partition with the default support (each
converter's capability validator run per node, as torch_tensorrt.compile does: the four passes
and the Partition object); "names" the same with hv.support.tensorrt(validate=False) (op names
only, what upstream's hierarchical partitioner checks), timed interleaved with it; "+split"
adds building the split GraphModule (`.module`), which upstream's time always includes. Part 2
runs hierviz alone up to 200k nodes, validated and names only, and reports the peak memory that
validated partitioning allocates (tracemalloc, measured in a second run on a fresh copy of the
graph so the timed run is not slowed down). Part 3 does the same on a captured 24-layer Llama
(transformers LlamaConfig, hidden 256, random weights; `--no-llama` skips its capture).

Targets (DESIGN.md / issues 3 and 29): a 16k-node chain in <= 1 s, 200k nodes in <= 10 s, time
roughly linear in nodes (the us/node column stays flat); validated <= 1.3x names only on the
16k chain and on the Llama, a 200k chain validated <= 1 s.
"""

from __future__ import annotations

import argparse
import gc
import platform
import resource
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Callable

import torch
from torch.fx.passes.shape_prop import _extract_tensor_metadata

import hierviz as hv
from hierviz import trt
from hierviz.partitioner.upstream.hierarchical import copy_graph_module

aten = torch.ops.aten
SHAPE = (2, 8)
CHAIN_OPS = [aten.relu.default, aten.sigmoid.default, aten.tanh.default, aten.neg.default, aten.abs.default]
UNSUPPORTED = aten.frac.default  # no TensorRT converter


def chain(nodes: int, seed: int = 0, unsupported_every: int = 0) -> torch.fx.GraphModule:
    """A chain of `nodes` nodes in all (placeholder and output included); with
    `unsupported_every=k`, every k-th op has no TensorRT converter."""
    meta = _extract_tensor_metadata(torch.empty(SHAPE))
    graph = torch.fx.Graph()
    was = gc.isenabled()
    gc.disable()
    try:
        last = graph.placeholder("x")
        for k in range(nodes - 2):
            last.meta["val"] = torch.empty(SHAPE)
            last.meta["tensor_meta"] = meta
            if unsupported_every and k % unsupported_every == unsupported_every - 1:
                op = UNSUPPORTED
            else:
                op = CHAIN_OPS[(k + seed) % len(CHAIN_OPS)]
            last = graph.call_function(op, (last,))
        last.meta["val"] = torch.empty(SHAPE)
        last.meta["tensor_meta"] = meta
        graph.output(last)
    finally:
        if was:
            gc.enable()
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def branchy(nodes: int, seed: int = 0) -> torch.fx.GraphModule:
    return hv.zoo.synthetic(nodes, seed=seed)


def chain5(nodes: int, seed: int = 0) -> torch.fx.GraphModule:
    return chain(nodes, seed, unsupported_every=20)


KINDS: dict[str, Callable[[int, int], torch.fx.GraphModule]] = {"chain": chain, "chain5": chain5, "branchy": branchy}


NAMES_ONLY = hv.Config(support={"tensorrt": hv.support.tensorrt(validate=False)})


def time_hierviz(build: Callable[[int, int], torch.fx.GraphModule], nodes: int, repeats: int,
                 split: bool = True) -> tuple[float, float, float, int]:
    """Best of `repeats` cold runs (a fresh graph each, so nothing is cached) validated and
    names only, interleaved, the time to build the split module once (when `split`), and the
    number of subgraphs. Each graph is dropped before the next is built, so that memory stays
    at about one graph."""
    best = {True: float("inf"), False: float("inf")}
    split_s, count = float("nan"), 0
    for k in range(repeats):
        for validated in (True, False):
            gm = build(nodes, 0)
            gc.collect()
            start = time.perf_counter()
            part = hv.partition(gm) if validated else hv.partition(gm, config=NAMES_ONLY)
            best[validated] = min(best[validated], time.perf_counter() - start)
            if validated:
                count = part.stats["subgraphs"]
            if split and validated and k == repeats - 1:
                start = time.perf_counter()
                part.module  # noqa: B018 - builds the split GraphModule
                split_s = time.perf_counter() - start
            del part, gm
            gc.collect()
    return best[True], best[False], split_s, count


def time_captured(gm: torch.fx.GraphModule, repeats: int = 5) -> tuple[float, float, int]:
    """Best of `repeats` partitions of one captured graph, validated and names only, interleaved."""
    best = {True: float("inf"), False: float("inf")}
    count = 0
    for _ in range(repeats):
        for validated in (True, False):
            gc.collect()
            start = time.perf_counter()
            part = hv.partition(gm) if validated else hv.partition(gm, config=NAMES_ONLY)
            best[validated] = min(best[validated], time.perf_counter() - start)
            count = part.stats["subgraphs"] if validated else count
    return best[True], best[False], count


def time_upstream(gm: torch.fx.GraphModule) -> tuple[float, int]:
    work = copy_graph_module(gm)
    gc.collect()
    start = time.perf_counter()
    split, _ = trt.run_upstream_partitioner(work)
    elapsed = time.perf_counter() - start
    return elapsed, sum(1 for _ in split.named_children())


def peak_memory(build: Callable[[int, int], torch.fx.GraphModule], nodes: int) -> float:
    """MiB allocated at the peak of hv.partition(gm), beyond the graph itself."""
    gm = build(nodes, 0)
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    part = hv.partition(gm)
    part.subgraphs  # noqa: B018 - described lazily; count it too
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del part, gm
    gc.collect()
    return (peak - base) / 2**20


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="run upstream only up to 8k nodes (else 16k for chain)")
    parser.add_argument("--sizes", default="1000,2000,4000,8000,16000", help="sizes compared with upstream")
    parser.add_argument("--large", default="16000,32000,64000,128000,200000", help="sizes for hierviz alone")
    parser.add_argument("--no-upstream", action="store_true", help="skip upstream entirely")
    parser.add_argument("--no-llama", action="store_true", help="skip the captured 24-layer Llama")
    args = parser.parse_args(argv)

    sizes = [int(s) for s in args.sizes.split(",") if s]
    large = [int(s) for s in args.large.split(",") if s]
    upstream_cap = {"chain": 8000 if args.quick else 16000, "chain5": 8000, "branchy": 8000}
    use_upstream = not args.no_upstream and trt.available()

    print(f"hierviz {hv.__version__}, torch {torch.__version__}, {trt.info()}")
    print(f"Python {platform.python_version()} on {platform.machine()}, {platform.processor() or ''} "
          f"({__import__('os').cpu_count()} CPUs)")
    hv.support.tensorrt().names  # noqa: B018 - load the converter registry outside the timings
    if use_upstream:
        time_upstream(chain(200))  # warm upstream's imports too

    print("\n== hierviz vs upstream (default Config: tensorrt > inductor, min_block_size 5) ==")
    header = f"{'graph':8} {'nodes':>7} {'subgraphs':>9} {'validated s':>11} {'names s':>8} {'ratio':>6} " \
             f"{'+split s':>9} {'us/node':>8} {'upstream s':>11} {'up. subgr.':>10} {'speed-up':>9}"
    print(header)
    print("-" * len(header))
    for kind, build in KINDS.items():
        for n in sizes:
            t, names, split, count = time_hierviz(build, n, repeats=3)
            row = f"{kind:8} {n:>7} {count:>9} {t:>11.3f} {names:>8.3f} {t / names:>5.2f}x " \
                  f"{t + split:>9.2f} {t / n * 1e6:>8.1f} "
            if use_upstream and n <= upstream_cap[kind]:
                ut, usub = time_upstream(build(n, 0))
                gc.collect()
                row += f"{ut:>11.2f} {usub:>10} {ut / t:>8.0f}x"
            else:
                row += f"{'(skipped)':>11} {'':>10} {'':>9}"
            print(row, flush=True)

    print("\n== hierviz alone ==")
    header = f"{'graph':8} {'nodes':>7} {'subgraphs':>9} {'validated s':>11} {'names s':>8} {'ratio':>6} " \
             f"{'us/node':>8} {'peak MiB':>9}"
    print(header)
    print("-" * len(header))
    for kind, build in KINDS.items():
        for n in large:
            t, names, _, count = time_hierviz(build, n, repeats=2 if n > 16000 else 3, split=False)
            mem = peak_memory(build, n)
            print(f"{kind:8} {n:>7} {count:>9} {t:>11.3f} {names:>8.3f} {t / names:>5.2f}x "
                  f"{t / n * 1e6:>8.1f} {mem:>9.1f}", flush=True)

    if not args.no_llama:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import llm

        print("\n== a captured 24-layer Llama (hidden 256, random weights) ==")
        model, inputs = llm.llama()
        gm = hv.capture(model, inputs, cache=False)
        t, names, count = time_captured(gm)
        row = f"llama24  {len(gm.graph.nodes):>7} {count:>9} {t:>11.4f} {names:>8.4f} {t / names:>5.2f}x"
        if use_upstream:
            ut, usub = time_upstream(gm)
            row += f"   upstream {ut:.3f} s, {usub} subgraphs"
        print(row, flush=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\nprocess peak RSS {rss:.0f} MiB (torch, torch_tensorrt, the largest graph and its partition)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
