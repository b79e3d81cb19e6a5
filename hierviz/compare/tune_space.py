"""The space `hv.tune` searches when none is given, derived from the graph, and the helpers
that turn a space's values into Configs (see `default_space`)."""

from __future__ import annotations

import itertools
from typing import Any, Mapping

from hierviz.support import sources as support
from hierviz.settings.config import Config, derive
from hierviz.settings.engine_table import DEFAULT_ENGINE
from hierviz.settings.setting_values import BUILTIN_BACKENDS
from hierviz.support.support_map import SupportMap
from hierviz.errors import HiervizError, MeasureError
from hierviz.compare.partition_cache import cached_partition
from hierviz.compare.tensorrt_kept import STATUS, KeptTensorRT
from hierviz.foundation.opnames import qualname
from hierviz.capturing.by_graph.dynamo_capture import DynamoCapture
from hierviz.partitioner import MultiGraphPartition, Partition, graph_of, make_config
from hierviz.partitioner.by_graph.per_graph import partitions_of

MAX_OPS = 4                            # torch_executed_ops candidates in the default space
MAX_SIZES = 6                          # min_block_size candidates in the default space


def fingerprint(part: Partition | MultiGraphPartition) -> tuple:
    """Identity of a partition: per graph in order, each subgraph's tag, backend and nodes (=
    per-node backend and tag)."""
    return tuple(tuple((sg.tag, sg.backend, sg.nodes) for sg in p.subgraphs) for p in partitions_of(part))


def why_unmeasurable(backend: str, device: Any, compilers: Mapping[str, Any] | None = None) -> str | None:
    """None when `backend` subgraphs can be compiled and timed on `device` (with hv.measure's
    `compilers=` overrides), else why not."""
    from hierviz.latency.compiling.backend_compilers import get_compiler

    compiler = get_compiler(backend, dict(compilers) if compilers else None)
    if compiler is None:
        return f"no compiler is registered for {backend!r}"
    if compiler.needs_cuda and getattr(device, "type", str(device)) != "cuda":
        return f"{'TensorRT' if backend == 'tensorrt' else backend} needs an NVIDIA GPU (CUDA), measuring on {device}"
    try:
        return compiler.available(device)
    except TypeError:  # compilers whose check takes no device
        no_device: Any = compiler  # (not the Compiler protocol's check)
        return no_device.available()


def tune_base(base: Config, device: Any, compilers: Mapping[str, Any] | None = None,
              kept: KeptTensorRT | None = None) -> tuple[Config, list[str]]:
    """The Config trials start from: `base`, with TorchInductor allowed every op when `base`
    gives inductor no support of its own (Torch-TensorRT's default, no ops, would make it a no-op)
    and its priority restricted to the backends measurable here; but TensorRT `kept` (in `base`,
    not timeable here) stays, and inductor's support is widened only where TensorRT's engines
    stay as they are (see compare/tensorrt_kept.py)."""
    notes = []
    if base.engine != DEFAULT_ENGINE:
        notes.append(f"tune searches hierviz's partitioner, not engine {base.engine!r} (what torch_tensorrt.compile "
                     "runs is the compile_ms baseline)")
        base = derive(base, {"engine": DEFAULT_ENGINE})
    if "inductor" not in (base.support or {}):
        sup = dict(base.support or {})
        sup["inductor"] = support.inductor()
        wider = derive(base, {"support": SupportMap(sup)})
        if kept is None or kept.keeps(wider):
            base = wider
            notes.append("inductor may take every op TorchInductor compiles (hv.support.inductor())")
        else:
            notes.append("inductor keeps the support given: with every op TorchInductor compiles it would take ops "
                         "from TensorRT's engines, which cannot be timed here")
    if kept is not None:
        notes.append(f"tensorrt kept in every setting searched, though it cannot be timed ({kept.why}): a setting "
                     f"that changes TensorRT's engines is not measured (status {STATUS!r})")
    keep = tuple(b for b in base.priority
                 if why_unmeasurable(b, device, compilers) is None or (kept is not None and b == "tensorrt"))
    dropped = [b for b in base.priority if b not in keep]
    for b in dropped:
        notes.append(f"{b} left out: {why_unmeasurable(b, device, compilers)}")
    if not keep:
        keep = tuple(b for b in ("inductor",) if why_unmeasurable(b, device) is None)
    if keep and keep != base.priority:
        base = apply_changes(base, {"priority": keep})
    return base, notes


def apply_changes(base: Config, changes: Mapping[str, Any]) -> Config:
    """`base` with `changes` (values the settings table has read: a space checked by
    check_grid, or made here), leaving out of `support` the backends of our own that the new
    priority no longer names (they would be ignored); only the rules between settings run."""
    changes = dict(changes)
    if "priority" in changes and "support" not in changes and base.support is not None:
        kept = {b: s for b, s in base.support.items() if b in changes["priority"] or b in BUILTIN_BACKENDS}
        changes["support"] = SupportMap(kept) if kept else None
    return derive(base, changes)


def _orders(backends: list[str]) -> list[tuple[str, ...]]:
    return [p for r in range(len(backends), 0, -1) for p in itertools.permutations(backends, r)]


def _sizes_changing(part: Partition) -> list[int]:
    """min_block_size values that give different partitions, one per outcome: the partition's
    own size for its outcome, the smallest size for the others (from Partition.recommend(),
    which re-partitions at each size)."""
    rec = part.recommend()
    own = part.config.min_block_size
    seen: dict[tuple, int] = {}
    for _, row in rec.sort_values("min_block_size").iterrows():
        key = tuple(row.drop("min_block_size").tolist())
        size = int(row["min_block_size"])
        if key not in seen or size == own:
            seen[key] = size
    return sorted(seen.values())


def _boundary_ops(part: Partition) -> list[str]:
    """Ops of accelerated compute nodes at subgraph boundaries (producing a subgraph's output
    or consuming its input), most frequent first."""
    nodes = {n.name: n for n in part.graph.graph.nodes}
    counts: dict[str, int] = {}
    for sg in part.subgraphs:
        if not sg.is_acc:
            continue
        members = set(sg.nodes)
        edge = {t.name for t in sg.outputs if t.name in members}
        inputs = {t.name for t in sg.inputs}
        for name in sg.nodes:
            if any(a.name in inputs for a in nodes[name].all_input_nodes):
                edge.add(name)
        for name in edge:
            node = nodes[name]
            if node.op == "call_function" and "getitem" not in str(node.target):
                op = qualname(node.target)
                counts[op] = counts.get(op, 0) + 1
    return sorted(counts, key=lambda op: (-counts[op], op))


def _ops_changing(gm: Any, cfg: Config, part: Partition, trt: KeptTensorRT | None = None) -> list[str]:
    """Candidate torch_executed_ops: boundary ops first, then the other accelerated ops,
    keeping those whose forcing changes the partition into one no other op gives (and, with
    TensorRT kept, `trt`, keeps TensorRT's engines)."""
    nodes = {n.name: n for n in part.graph.graph.nodes}
    acc_ops: list[str] = []
    for sg in part.subgraphs:
        if sg.is_acc:
            for name in sg.nodes:
                n = nodes[name]
                if n.op == "call_function" and "getitem" not in str(n.target):
                    op = qualname(n.target)
                    if op not in acc_ops:
                        acc_ops.append(op)
    ranked = _boundary_ops(part) + sorted(op for op in acc_ops if op not in _boundary_ops(part))
    base_fp = fingerprint(part)
    kept: list[str] = []
    seen = {base_fp}
    for op in ranked:
        changed = derive(cfg, {"torch_executed_ops": cfg.torch_executed_ops | {op}})
        try:
            forced = cached_partition(gm, changed)
        except HiervizError:
            continue
        if trt is not None and not trt.keeps(changed):
            continue
        fp = fingerprint(forced)
        if fp not in seen:
            seen.add(fp)
            kept.append(op)
        if len(kept) >= MAX_OPS:
            break
    return kept


def default_space(model: Any, example_inputs: Any = None, *, base: Config | Mapping | None = None,
                  device: Any = None, compilers: Mapping[str, Any] | None = None) -> dict[str, list]:
    """The space `hv.tune` searches when none is given, derived from the graph:

    - `priority`: every order of the backends that can be measured on `device` (TensorRT
      only with a CUDA GPU), from the base priority and inductor; where the base has TensorRT
      and it cannot be timed here, the orders that keep TensorRT's engines (and every other
      value below keeps them too: compare/tensorrt_kept.py);
    - `min_block_size`: the sizes that change the partition (from `Partition.recommend()`),
      for each of those priorities, and the base size;
    - `torch_executed_ops`: none, or one more op forced to PyTorch, among the ops at subgraph
      boundaries and the other accelerated ops whose forcing changes the partition.

    `model` a DynamoCapture (hv.tune with ir="torch_compile"): the same, from every graph dynamo
    made (a graph Torch-TensorRT's backend runs eagerly has nothing to tune).
    """
    from hierviz.latency.compiling.compile_plan import resolve_device

    dev = resolve_device(device)
    if isinstance(model, DynamoCapture):
        graphs = [g.graph for g in model.graphs if not g.fell_back and g.has_compute]
    else:
        graphs = [graph_of(model, example_inputs)]
    kept = KeptTensorRT.of(make_config(base), dev, compilers, lambda cfg: [cached_partition(gm, cfg) for gm in graphs])
    base_cfg, _ = tune_base(make_config(base), dev, compilers, kept)
    backends = list(dict.fromkeys([*base_cfg.priority, "inductor", "tensorrt"]))
    backends = [b for b in backends
                if why_unmeasurable(b, dev, compilers) is None or (kept is not None and b == "tensorrt")]
    if not backends:
        raise MeasureError(f"no backend can be measured on {dev}: tensorrt needs a CUDA GPU and inductor "
                           "is not usable here; give space= with backends that are.")
    priorities = _orders(backends)
    if kept is not None:  # only orders that keep TensorRT's engines, the base's own first
        priorities = [base_cfg.priority] + [p for p in priorities if p != base_cfg.priority
                                            and kept.keeps(apply_changes(base_cfg, {"priority": p}))]
    first = apply_changes(base_cfg, {"priority": priorities[0]})
    ops: list[str] = []
    for gm in graphs:
        ops += [op for op in _ops_changing(gm, first, cached_partition(gm, first), kept) if op not in ops]
    ops = ops[:MAX_OPS]
    forced = [base_cfg.torch_executed_ops] + [base_cfg.torch_executed_ops | {op} for op in ops]
    sizes = {base_cfg.min_block_size}
    for p in priorities:  # sizes that change the partition for some priority and forced op
        for f in forced:
            for gm in graphs:
                sizes.update(_sizes_changing(cached_partition(gm, apply_changes(base_cfg, {"priority": p,
                                                                                    "torch_executed_ops": f}))))
    if kept is not None:  # a size is kept when some priority keeps TensorRT's engines with it
        sizes = {n for n in sizes if n == base_cfg.min_block_size or any(
            kept.keeps(apply_changes(base_cfg, {"priority": p, "min_block_size": n})) for p in priorities)}
    sizes_list = sorted(sizes)
    if len(sizes_list) > MAX_SIZES:  # keep the base size, the smallest and an even spread
        step = (len(sizes_list) - 1) / (MAX_SIZES - 1)
        picked = {sizes_list[round(i * step)] for i in range(MAX_SIZES)} | {base_cfg.min_block_size}
        sizes_list = sorted(picked)
    space: dict[str, list] = {"priority": priorities, "min_block_size": sizes_list}
    if ops:
        space["torch_executed_ops"] = forced
    return space


__all__ = ["default_space", "fingerprint", "why_unmeasurable", "tune_base", "apply_changes"]
