"""Partition quality: how many subgraphs hierviz makes, against upstream and against the limit.

    python benchmarks/partition_quality.py           # reduced: a few seconds (tests run this)
    python benchmarks/partition_quality.py --full    # every zoo model, 8 configs, 10 upstream runs

Three tables, every count taken in the same run:

1. zoo models x configs: hierviz's subgraph count beside the min and median of upstream's
   (Torch-TensorRT's hierarchical_adjacency_partition via `engine="torch_tensorrt"`) over
   several runs. Upstream picks "any ready node" from Python sets, so its count changes from
   run to run; each run works on a fresh copy of the graph. Beside the counts: accelerated
   ops of hierviz and of upstream's run(s) at its minimum (fewer subgraphs after demotion
   can come from giving more ops to PyTorch).
2. random DAGs of <= 12 callable nodes with random backend labels: the exhaustive minimum
   number of convex single-backend subgraphs (a search over the graph's down-sets; the limit
   no partitioner can beat), and the share of graphs where hierviz and upstream reach it; on
   the original shape and on broadened shapes, as table 3.
3. random DAGs of 30-60 callable nodes, where exhaustive search is out of reach: hierviz
   against the best of 200 randomized greedy traversals of the same graph; on the
   generator's original shape (two backends and PyTorch drawn alike) and on broadened shapes
   (`random_shape`: 1-4 backends, the share of unsupported ops, branch and merge density and
   view chains each drawn per graph), so that the engine is not tuned to one shape.
4. `demote_to`: table 1's models and configs with `demote_to="torch"` (upstream's rule) and
   `"next"` (a small accelerated subgraph goes to the next backend in priority): accelerated
   ops and subgraphs (accelerated / all) for each (`--part demote` runs only this one).

Tables 2 and 3 use min_block_size=1 (no demotion), so the count is the traversal's.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Sequence

import torch
from torch.fx.passes.shape_prop import _extract_tensor_metadata

import hierviz as hv

aten = torch.ops.aten
SHAPE = (2, 3)
# each label gets ops that only its backend takes (two unary, two binary)
LABEL_OPS = {
    "tensorrt": ([aten.relu.default, aten.neg.default], [aten.add.Tensor, aten.sub.Tensor]),
    "inductor": ([aten.sigmoid.default, aten.tanh.default], [aten.mul.Tensor, aten.maximum.default]),
    "cudagraphs": ([aten.sin.default, aten.cos.default], [aten.minimum.default, aten.fmin.default]),
    "tvm": ([aten.floor.default, aten.erf.default], [aten.fmax.default, aten.atan2.default]),
    "torch": ([aten.frac.default, aten.abs.default], [aten.hypot.default, aten.copysign.Tensor]),
}
ACCELERATED = ("tensorrt", "inductor", "cudagraphs", "tvm")  # in priority order
LABELS = ("tensorrt", "inductor", "torch")
VIEW = aten.view.default


@dataclass(frozen=True)
class DagShape:
    """How `random_dag` draws a graph. `backends`: the accelerated labels (priority order);
    `unsupported`: the share of ops only PyTorch takes (the rest split evenly over `backends`);
    `merge`: the share of binary ops (where branches merge); `far`: the share of inputs drawn
    from anywhere earlier (branches and skips) instead of the three latest values (chains);
    `views`: the chance that an op is followed by a chain of one or two views, which follow
    their producer's backend. The default is the generator's original shape."""

    backends: tuple[str, ...] = ("tensorrt", "inductor")
    unsupported: float | None = None
    merge: float = 0.55
    far: float = 0.4
    views: float = 0.0

    def config(self) -> hv.Config:
        """min_block_size 1, each backend taking its own ops (and views)."""
        return hv.Config(priority=self.backends, min_block_size=1,
                         support={b: hv.support.ops([*LABEL_OPS[b][0], *LABEL_OPS[b][1], VIEW]) for b in self.backends})

    def label(self) -> str:
        share = 1 / (len(self.backends) + 1) if self.unsupported is None else self.unsupported
        return (f"{len(self.backends)} backend(s), unsupported {share:.0%}, merge {self.merge:.0%}, "
                f"far {self.far:.0%}, views {self.views:.0%}")


def random_shape(rng: random.Random) -> DagShape:
    """A shape drawn at random: 1-4 backends, unsupported 5-50%, merge 20-80%, far 10-70%,
    views in half the graphs (10-40%)."""
    return DagShape(backends=ACCELERATED[:rng.randint(1, 4)], unsupported=rng.uniform(0.05, 0.5),
                    merge=rng.uniform(0.2, 0.8), far=rng.uniform(0.1, 0.7),
                    views=rng.uniform(0.1, 0.4) if rng.random() < 0.5 else 0.0)


DAG_CONFIG = DagShape().config()


# ------------------------------------------------------------------------------ random DAGs
def random_dag(nodes: int, seed: int, shape: DagShape = DagShape()) -> torch.fx.GraphModule:
    """An aten GraphModule of `nodes` ops (plus their views) on 1-2 inputs, each a random
    label's op on one or two earlier values, drawn as `shape` says."""
    rng = random.Random(seed)
    graph = torch.fx.Graph()
    gen = torch.Generator().manual_seed(seed)
    values: list[tuple[torch.fx.Node, torch.Tensor]] = []
    for k in range(rng.randint(1, 2)):
        x = torch.randn(SHAPE, generator=gen)
        node = graph.placeholder(f"x{k}")
        node.meta["val"], node.meta["tensor_meta"] = x, _extract_tensor_metadata(x)
        values.append((node, x))
    used: set[torch.fx.Node] = set()

    def pick() -> tuple[torch.fx.Node, torch.Tensor]:
        if rng.random() < 1 - shape.far:
            return values[-rng.randint(1, min(3, len(values)))]
        return values[rng.randrange(len(values))]

    def add(op: Any, inputs: list[tuple[torch.fx.Node, torch.Tensor]],
            *extra: Any) -> tuple[torch.fx.Node, torch.Tensor]:
        val = op(*(v for _, v in inputs), *extra)
        node = graph.call_function(op, (*(n for n, _ in inputs), *extra))
        node.meta["val"], node.meta["tensor_meta"] = val, _extract_tensor_metadata(val)
        used.update(n for n, _ in inputs)
        return node, val

    labels = (*shape.backends, "torch")
    for _ in range(nodes):
        if shape.unsupported is None:  # the original shape: every label alike
            label = rng.choice(labels)
        else:
            label = "torch" if rng.random() < shape.unsupported else rng.choice(shape.backends)
        unary, binary = LABEL_OPS[label]
        args = [pick()] if rng.random() < 1 - shape.merge else [pick(), pick()]
        value = add(rng.choice(unary if len(args) == 1 else binary), args)
        if shape.views and rng.random() < shape.views:  # a view chain, back to SHAPE
            if rng.random() < 0.5:
                value = add(VIEW, [value], [SHAPE[1], SHAPE[0]])
            value = add(VIEW, [value], list(SHAPE))
        values.append(value)
    outs = tuple(n for n, _ in values if n.op == "call_function" and n not in used)
    graph.output(outs)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def dag_inputs(gm: torch.fx.GraphModule) -> tuple[torch.Tensor, ...]:
    return tuple(n.meta["val"] for n in gm.graph.nodes if n.op == "placeholder")


@dataclass
class LabelledDag:
    """The callable nodes of a partitioned graph: backend label and callable inputs of each."""

    labels: list[str]
    preds: list[tuple[int, ...]]


def labelled(p: hv.Partition) -> LabelledDag:
    gm = p.graph
    calls = [n for n in gm.graph.nodes if n.op == "call_function"]
    pos = {n: k for k, n in enumerate(calls)}
    return LabelledDag([p.eligible_backend_of(n.name) for n in calls],
                       [tuple(pos[a] for a in n.all_input_nodes if a in pos) for n in calls])


def _phase(dag: LabelledDag, done: int, label: str) -> int:
    """The down-set after one phase of `label` from down-set `done` (bit masks): every node
    of that label whose inputs are done, repeatedly."""
    changed = True
    while changed:
        changed = False
        for k, lab in enumerate(dag.labels):
            if lab == label and not done >> k & 1 and all(done >> a & 1 for a in dag.preds[k]):
                done |= 1 << k
                changed = True
    return done


def exhaustive_minimum(dag: LabelledDag) -> int:
    """The fewest convex single-label subgraphs covering the DAG: a breadth-first search over
    down-sets, one phase per step. (With any fixed order of subgraph labels, taking every
    node a phase can take never leaves fewer options, so phases reach the optimum.)"""
    full = (1 << len(dag.labels)) - 1
    if not full:
        return 0
    labels = sorted(set(dag.labels))
    depth = {0: 0}
    queue = deque([0])
    while queue:
        done = queue.popleft()
        for label in labels:
            nxt = _phase(dag, done, label)
            if nxt != done and nxt not in depth:
                depth[nxt] = depth[done] + 1
                if nxt == full:
                    return depth[nxt]
                queue.append(nxt)
    raise AssertionError("unreachable: the DAG has a cycle")


def random_greedy(dag: LabelledDag, rng: random.Random) -> int:
    """Subgraphs of one randomized greedy traversal: phases, each of a label drawn at random
    among those of the ready nodes."""
    n = len(dag.labels)
    users: list[list[int]] = [[] for _ in range(n)]
    waiting = [len(p) for p in dag.preds]
    for k, p in enumerate(dag.preds):
        for a in p:
            users[a].append(k)
    ready = [k for k in range(n) if waiting[k] == 0]
    phases = 0
    while ready:
        label = rng.choice(sorted({dag.labels[k] for k in ready}))
        phases += 1
        stack = [k for k in ready if dag.labels[k] == label]
        ready = [k for k in ready if dag.labels[k] != label]
        while stack:
            k = stack.pop()
            for u in users[k]:
                waiting[u] -= 1
                if waiting[u] == 0:
                    (stack if dag.labels[u] == label else ready).append(u)
    return phases


def check_outputs(p: hv.Partition) -> None:
    """The split module computes exactly what the graph does."""
    inputs = dag_inputs(p.graph)
    with torch.no_grad():
        torch.testing.assert_close(p.module(*inputs), p.graph(*inputs), rtol=0, atol=0, equal_nan=True)


# ------------------------------------------------------------------------------ the tables
def small_dags(count: int, seed: int = 0, upstream: bool = True, broad: bool = False) -> dict:
    """Table 2: hierviz and upstream against the exhaustive minimum on DAGs of 4..12 ops, of
    the original shape or (`broad`) each of a shape drawn by `random_shape`."""
    rows = []
    for g in range(count):
        nodes = 4 + (seed + g) % 9
        shape = random_shape(random.Random(f"small shape {seed} {g}")) if broad else DagShape()
        gm = random_dag(nodes, seed * 100_003 + g, shape)
        cfg = shape.config()
        p = hv.partition(gm, config=cfg)
        check_outputs(p)
        best = exhaustive_minimum(labelled(p))
        theirs = hv.partition(gm, config=cfg, engine="torch_tensorrt").stats["subgraphs"] if upstream else None
        rows.append((nodes, p.stats["subgraphs"], theirs, best))
    ours_opt = sum(1 for _, o, _, b in rows if o == b)
    theirs_opt = sum(1 for _, _, t, b in rows if t == b)
    return {"graphs": len(rows), "hierviz_optimal": ours_opt, "upstream_optimal": theirs_opt if upstream else None,
            "hierviz_excess": sum(o - b for _, o, _, b in rows),
            "below_minimum": sum(1 for _, o, _, b in rows if o < b),
            "rows": rows}


def medium_dags(count: int, runs: int, seed: int = 0, broad: bool = False) -> dict:
    """Table 3: hierviz against the best of `runs` randomized greedy traversals, on graphs of
    the original shape or (`broad`) each of a shape drawn by `random_shape`."""
    rows = []
    for g in range(count):
        rng = random.Random(seed * 7919 + g)
        nodes = rng.randint(30, 60)
        shape = random_shape(random.Random(f"shape {seed} {g}")) if broad else DagShape()
        gm = random_dag(nodes, 10_000 + seed * 100_003 + g, shape)
        p = hv.partition(gm, config=shape.config())
        check_outputs(p)
        dag = labelled(p)
        best = min(random_greedy(dag, rng) for _ in range(runs))
        rows.append((nodes, p.stats["subgraphs"], best, shape))
    at_or_below = sum(1 for _, o, b, _ in rows if o <= b)
    return {"graphs": len(rows), "at_or_below": at_or_below, "worst": max((o - b for _, o, b, _ in rows), default=0),
            "mean_difference": statistics.mean(o - b for _, o, b, _ in rows) if rows else 0.0, "rows": rows}


A = "torch.ops.aten."


def zoo_configs() -> dict[str, hv.Config]:
    """The configurations of table 1: priority orders, inductor op sets, torch_executed_ops,
    min_block_size 1/2/3/5."""
    heavy = [A + o for o in ("convolution.default", "linear.default", "addmm.default", "mm.default",
                             "scaled_dot_product_attention.default")]
    elementwise = [A + o for o in ("relu.default", "add.Tensor", "mul.Tensor", "gelu.default",
                                   "sigmoid.default", "clamp.default", "hardsigmoid.default",
                                   "silu.default", "tanh.default")]
    trt_names = hv.support.tensorrt().names
    missing = {A + o for o in ("mul.Tensor", "relu.default", "permute.default", "mean.dim")}
    return {
        "default mbs5": hv.Config(),
        "ind-heavy>trt mbs2": hv.Config(priority=("inductor", "tensorrt"),
                                        support={"inductor": hv.support.ops(heavy)}, min_block_size=2),
        "ind-all>trt mbs3": hv.Config(priority=("inductor", "tensorrt"),
                                      support={"inductor": hv.support.inductor()}, min_block_size=3),
        "ind-elem>trt mbs1": hv.Config(priority=("inductor", "tensorrt"),
                                       support={"inductor": hv.support.ops(elementwise)}, min_block_size=1),
        "trt, teo mbs3": hv.Config(torch_executed_ops=frozenset(
            A + o for o in ("add.Tensor", "_native_batch_norm_legit_no_training.default",
                            "native_layer_norm.default")), min_block_size=3),
        "trt-missing>ind mbs5": hv.Config(support={"tensorrt": hv.support.ops(trt_names - missing),
                                                   "inductor": hv.support.inductor()},
                                          min_block_size=5, skip_fusion=True),
        "ind(conv,mm,add)>trt teo=mul mbs2": hv.Config(
            priority=("inductor", "tensorrt"),
            support={"inductor": hv.support.ops([A + o for o in ("convolution.default", "mm.default",
                                                                 "addmm.default", "add.Tensor")])},
            torch_executed_ops=frozenset({A + "mul.Tensor"}), min_block_size=2),
        "inductor only mbs1": hv.Config(priority=("inductor",), support={"inductor": hv.support.inductor()},
                                        min_block_size=1),
    }


def zoo_table(models: Sequence[str], config_names: Sequence[str] | None, runs: int,
              progress: bool = False) -> list[dict]:
    """Table 1: per model and config, hierviz's count and upstream's min / median over `runs`."""
    configs = zoo_configs()
    rows = []
    for model in models:
        module, inputs = hv.zoo.load(model)
        gm = hv.capture(module, inputs)
        for name in config_names or list(configs):
            cfg = configs[name]
            ours = hv.partition(gm, config=cfg)
            ballast = []
            stats = []
            for k in range(runs):  # fresh copies at fresh addresses: Python-set order changes
                ballast.append([object() for _ in range(97 * (k + 1))])
                st = hv.partition(gm, config=cfg, engine="torch_tensorrt").stats
                stats.append((st["subgraphs"], st["accelerated_ops"]))
            counts = [n for n, _ in stats]
            rows.append({"model": model, "config": name, "hierviz": ours.stats["subgraphs"],
                         "upstream_min": min(counts), "upstream_median": statistics.median(counts),
                         "hierviz_acc_ops": ours.stats["accelerated_ops"],
                         # accelerated ops of the upstream runs that reached its minimum (the most)
                         "upstream_acc_ops_at_min": max(a for n, a in stats if n == min(counts))})
            if progress:
                print_row(rows[-1])
    return rows


def demote_table(models: Sequence[str], config_names: Sequence[str] | None, progress: bool = False) -> list[dict]:
    """Table 4: per model and config, accelerated ops and subgraphs with demote_to torch / next;
    every "next" partition's split module is checked against the graph's outputs."""
    configs = zoo_configs()
    rows = []
    for model in models:
        module, inputs = hv.zoo.load(model)
        gm = hv.capture(module, inputs)
        for name in config_names or list(configs):
            row: dict = {"model": model, "config": name}
            for rule in ("torch", "next"):
                p = hv.partition(gm, config=configs[name].replace(demote_to=rule))
                st = p.stats
                row[f"{rule}_acc_ops"] = st["accelerated_ops"]
                row[f"{rule}_subgraphs"] = st["subgraphs"]
                row[f"{rule}_acc_subgraphs"] = st["subgraphs"] - st["subgraphs_by_backend"].get("torch", 0)
                if rule == "next" and row["next_subgraphs"] != row["torch_subgraphs"]:
                    check_model_outputs(p, gm, inputs)
            rows.append(row)
            if progress:
                print_demote_row(row)
    return rows


def check_model_outputs(p: hv.Partition, gm: torch.fx.GraphModule, inputs: tuple) -> None:
    from torch.utils._pytree import tree_leaves

    with torch.no_grad():
        got, want = tree_leaves(p.module(*inputs)), tree_leaves(gm(*inputs))
    if not all(torch.allclose(a, b, atol=1e-4, rtol=1e-4, equal_nan=True) for a, b in zip(got, want)):
        raise AssertionError(f"the split module's outputs differ from the graph's ({p.config.label()})")


DEMOTE_HEADER = (f"{'model':<20}{'config':<36}{'acc ops torch':>14}{'next':>6}"
                 f"{'subgraphs torch (acc)':>23}{'next (acc)':>12}")


def print_demote_row(r: dict) -> None:
    print(f"{r['model']:<20}{r['config']:<36}{r['torch_acc_ops']:>14}{r['next_acc_ops']:>6}"
          f"{r['torch_subgraphs']:>16} ({r['torch_acc_subgraphs']:>3}){r['next_subgraphs']:>7} "
          f"({r['next_acc_subgraphs']:>3})", flush=True)


def print_demote_summary(rows: list[dict]) -> None:
    more = sum(1 for r in rows if r["next_acc_ops"] > r["torch_acc_ops"])
    fewer = sum(1 for r in rows if r["next_subgraphs"] < r["torch_subgraphs"])
    worse = sum(1 for r in rows if r["next_subgraphs"] > r["torch_subgraphs"])
    print(f"cases: {len(rows)}; more accelerated ops with next: {more}; fewer subgraphs: {fewer}; "
          f"more subgraphs: {worse}; total accelerated ops {sum(r['torch_acc_ops'] for r in rows)} -> "
          f"{sum(r['next_acc_ops'] for r in rows)}, subgraphs {sum(r['torch_subgraphs'] for r in rows)} -> "
          f"{sum(r['next_subgraphs'] for r in rows)}")


HEADER = (f"{'model':<20}{'config':<36}{'hierviz':>8}{'up.min':>8}{'up.med':>8}"
          f"{'acc ops hv':>11}{'up@min':>8}")


def print_row(r: dict) -> None:
    flag = "  <-- above upstream's minimum" if r["hierviz"] > r["upstream_min"] else ""
    print(f"{r['model']:<20}{r['config']:<36}{r['hierviz']:>8}{r['upstream_min']:>8}"
          f"{r['upstream_median']:>8g}{r['hierviz_acc_ops']:>11}{r['upstream_acc_ops_at_min']:>8}{flag}", flush=True)


def print_zoo(rows: list[dict], header: bool = True) -> None:
    if header:
        print(HEADER)
        for r in rows:
            print_row(r)
    above = sum(1 for r in rows if r["hierviz"] > r["upstream_min"])
    fewer = sum(1 for r in rows if r["hierviz"] < r["upstream_median"])
    print(f"cases: {len(rows)}; above upstream's minimum: {above}; below upstream's median: {fewer}; "
          f"mean hierviz {statistics.mean(r['hierviz'] for r in rows):.2f}, "
          f"mean upstream median {statistics.mean(r['upstream_median'] for r in rows):.2f}")


def main(argv: Sequence[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--full", action="store_true", help="every zoo model, 8 configs, 10 upstream runs, "
                        "300 small and 2 x 200 medium DAGs")
    parser.add_argument("--part", choices=("all", "zoo", "dags", "demote"), default="all", help="which tables to run")
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    if args.full:
        small_first = ["tiny_conv", "bert", "gpt2", "llama", "resnet18", "mobilenet_v3_small"]
        models = [m for m in small_first if m in hv.zoo.names()] + [m for m in hv.zoo.names() if m not in small_first]
        config_names, runs = None, 10
        n_small, n_medium, n_broad, greedy_runs = 300, 200, 200, 200
    else:
        models, config_names, runs = ["tiny_conv"], ["ind-heavy>trt mbs2", "ind(conv,mm,add)>trt teo=mul mbs2"], 2
        n_small, n_medium, n_broad, greedy_runs = 30, 4, 8, 20
    print(f"torch {torch.__version__}, hierviz {hv.__version__}, mode {'full' if args.full else 'reduced'}", flush=True)
    out: dict = {}
    if args.part in ("all", "zoo"):
        print("\n1. zoo models: subgraphs, hierviz vs upstream min / median over", runs, "runs")
        print(HEADER, flush=True)
        out["zoo"] = zoo = zoo_table(models, config_names, runs, progress=True)
        print_zoo(zoo, header=False)
    if args.part in ("all", "dags"):
        out["small"] = small_dags(n_small)
        out["small_broad"] = small_dags(n_small, broad=True)
        for key, what in (("small", "the original shape"), ("small_broad", "broadened shapes")):
            small = out[key]
            print(f"\n2. random DAGs of 4-12 callable nodes, {what} ({small['graphs']} graphs, min_block_size 1): "
                  f"exhaustive minimum reached by hierviz on {small['hierviz_optimal']} "
                  f"({100 * small['hierviz_optimal'] / small['graphs']:.1f}%), by upstream (one run each) on "
                  f"{small['upstream_optimal']} ({100 * small['upstream_optimal'] / small['graphs']:.1f}%); "
                  f"hierviz's total excess {small['hierviz_excess']} subgraph(s)", flush=True)
        out["medium"] = medium_dags(n_medium, greedy_runs)
        out["broad"] = medium_dags(n_broad, greedy_runs, broad=True)
        for key, what in (("medium", "the original shape"), ("broad", "broadened shapes")):
            medium = out[key]
            print(f"\n3. random DAGs of 30-60 callable nodes, {what} ({medium['graphs']} graphs): hierviz at or "
                  f"below the best of {greedy_runs} randomized greedy traversals on {medium['at_or_below']} "
                  f"({100 * medium['at_or_below'] / medium['graphs']:.1f}%), mean difference "
                  f"{medium['mean_difference']:+.2f} subgraphs, worst {medium['worst']:+d}", flush=True)
    if args.part in ("all", "demote"):
        print("\n4. demote_to: accelerated ops and subgraphs (accelerated ones in brackets), torch vs next")
        print(DEMOTE_HEADER, flush=True)
        out["demote"] = demote = demote_table(models, config_names, progress=True)
        print_demote_summary(demote)
    print(f"\n({time.perf_counter() - t0:.1f} s)")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
