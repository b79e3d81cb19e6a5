"""Partition and Subgraph: what a partitioner run produced, and questions about it."""

from __future__ import annotations

import copy
import functools
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

import torch
from torch.fx import GraphModule

from hierviz.config import Config
from hierviz.errors import ConfigError
from hierviz.partitioner import engine as eng

if TYPE_CHECKING:  # pragma: no cover
    import graphviz
    import pandas as pd


@dataclass(frozen=True)
class TensorSpec:
    """A tensor crossing a subgraph boundary: producer name, shape and dtype (from meta['val'])."""

    name: str
    shape: tuple | None
    dtype: str | None

    def __str__(self) -> str:
        if self.shape is None:
            return f"{self.name}: {self.dtype or '?'}"
        dims = ", ".join(str(d) for d in self.shape)
        return f"{self.name}: {short_dtype(self.dtype)}[{dims}]"


@dataclass(frozen=True)
class Subgraph:
    """One subgraph of a partition; `nodes` are node names in graph order."""

    tag: str
    backend: str
    is_acc: bool
    nodes: tuple[str, ...]
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    compute_ops: int = 0

    def __len__(self) -> int:
        return len(self.nodes)


def short_dtype(dtype: str | None) -> str:
    return (dtype or "?").replace("torch.", "")


def tensor_spec(node: torch.fx.Node) -> TensorSpec:
    val = node.meta.get("val")
    if isinstance(val, torch.Tensor):
        shape = tuple(int(d) if isinstance(d, int) or str(d).isdigit() else str(d) for d in val.shape)
        return TensorSpec(node.name, shape, str(val.dtype))
    tm = node.meta.get("tensor_meta")
    if tm is not None and hasattr(tm, "shape"):
        return TensorSpec(node.name, tuple(tm.shape), str(tm.dtype))
    if val is not None:
        return TensorSpec(node.name, None, type(val).__name__)
    return TensorSpec(node.name, None, None)


class Partition:
    """The result of partitioning a graph with a Config.

    `.graph` is the input graph (never modified); `.module` is the split GraphModule, built
    on first use; `.subgraphs` lists each subgraph with its boundary tensors.
    """

    def __init__(self, graph: GraphModule, config: Config, result: eng.EngineResult,
                 engine: str = "hierviz", module: GraphModule | None = None) -> None:
        self.graph = graph
        self.config = config
        self.engine = engine
        self._result = result
        self._module = module
        self._tag_of: dict[int, int] = {}
        for k, sg in enumerate(result.subgraphs):
            for i in sg.nodes:
                self._tag_of[i] = k

    @functools.cached_property
    def subgraphs(self) -> list[Subgraph]:
        """Every subgraph in order, with its boundary tensors (described on first use)."""
        with eng.gc_paused():
            return [self._describe(k) for k in range(len(self._result.subgraphs))]

    @functools.cached_property
    def _by_tag(self) -> dict[str, Subgraph]:
        return {sg.tag: sg for sg in self.subgraphs}

    # ------------------------------------------------------------------ structure
    def _describe(self, k: int) -> Subgraph:
        res = self._result
        index = res.index
        raw = res.subgraphs[k]
        members = sorted(raw.nodes)
        inside = set(members)
        inputs: dict[int, None] = {}
        outputs: dict[int, None] = {}
        for i in members:
            for a in index.inputs[i]:
                if a not in inside and index.nodes[a].op != "get_attr":
                    inputs[a] = None
            for u in index.users[i]:
                if u not in inside:
                    outputs[i] = None
        compute = sum(1 for i in members if not index.non_compute[i])
        return Subgraph(
            tag=res.tags[k], backend=raw.backend, is_acc=raw.is_acc,
            nodes=tuple(index.names[i] for i in members),
            inputs=tuple(tensor_spec(index.nodes[a]) for a in sorted(inputs)),
            outputs=tuple(tensor_spec(index.nodes[o]) for o in sorted(outputs)),
            compute_ops=compute,
        )

    def _pos(self, node_name: str) -> int:
        pos = self._result.index.position.get(node_name)
        if pos is None:
            raise ConfigError(f"no node named {node_name!r} in this graph; node names are listed in "
                              "Partition.subgraphs[i].nodes and Partition.ops().")
        return pos

    @property
    def backends(self) -> tuple[str, ...]:
        """Backends in priority order, then the PyTorch fallback."""
        return (*self.config.priority, eng.FALLBACK)

    def subgraph(self, tag: str) -> Subgraph:
        try:
            return self._by_tag[tag]
        except KeyError:
            raise ConfigError(f"no subgraph {tag!r}; tags are {list(self._by_tag)[:10]}") from None

    def backend_of(self, node_name: str) -> str:
        """The backend the node runs in ('torch' for PyTorch), or 'graph' for inputs/weights."""
        i = self._pos(node_name)
        k = self._tag_of.get(i)
        return "graph" if k is None else self._result.subgraphs[k].backend

    def tag_of(self, node_name: str) -> str | None:
        """The node's subgraph tag (None for placeholders, weights and the output)."""
        k = self._tag_of.get(self._pos(node_name))
        return None if k is None else self._result.tags[k]

    def eligible_backend_of(self, node_name: str) -> str:
        """The backend support made the node eligible for, before small blocks were demoted."""
        b = self._result.assignment.backend[self._pos(node_name)]
        return eng.FALLBACK if b is None else b

    def reason_code_of(self, node_name: str) -> str:
        """supported, follows_producer, torch_executed_ops, unsupported, validator_rejected,
        demoted or not_callable."""
        i = self._pos(node_name)
        if i in self._result.demoted:
            return eng.DEMOTED
        return self._result.assignment.code[i]

    def reason_of(self, node_name: str) -> str:
        """Why the node runs where it runs, in words."""
        i = self._pos(node_name)
        res = self._result
        index = res.index
        op = index.ops[i]
        if not index.callable[i]:
            kind = {"placeholder": "graph input", "get_attr": "weight/constant", "output": "graph output"}
            return f"{kind.get(index.nodes[i].op, index.nodes[i].op)}: not partitioned"
        if i in res.demoted:
            backend, size = res.demoted[i]
            if not size:  # upstream's engine does not keep its subgraphs before demotion
                return (f"demoted to PyTorch: eligible for {backend}, but its subgraph was smaller "
                        f"than min_block_size {self.config.min_block_size}")
            return (f"demoted to PyTorch: its {backend} subgraph had {size} node(s) < "
                    f"min_block_size {self.config.min_block_size}")
        code, detail = res.assignment.code[i], res.assignment.detail[i]
        where = self.backend_of(index.names[i])
        if code == eng.TORCH_EXECUTED:
            return f"runs in PyTorch: {op} is in torch_executed_ops"
        if code == eng.FOLLOWS_PRODUCER:
            return (f"non-compute node ({op.rsplit('.', 2)[-2] if op.startswith('torch.ops') else op}): "
                    f"follows its producer {index.names[detail]}, runs in {where}")
        if code in (eng.UNSUPPORTED, eng.VALIDATOR):
            why = "; ".join(f"{b}: {r}" for b, r in detail.items())
            return f"runs in PyTorch: no support in any backend ({why})"
        skipped = "; ".join(f"{b}: {r}" for b, r in (detail or {}).items())
        support = self.config.support_for(res.assignment.backend[i])
        text = f"runs in {where}: {op} supported by {support.description}"
        if where != res.assignment.backend[i]:
            text += f" (merged into a {where} subgraph)"
        return text + (f" (skipped {skipped})" if skipped else "")

    @functools.cached_property
    def _members(self) -> list[frozenset[str]]:
        return [frozenset(sg.nodes) for sg in self.subgraphs]

    # ------------------------------------------------------------------ the split module
    @property
    def module(self) -> GraphModule:
        """The split GraphModule: one submodule per subgraph, named by its tag."""
        if self._module is None:
            self._module = build_split_module(self.graph, self._result)
        return self._module

    # ------------------------------------------------------------------ numbers and tables
    @functools.cached_property
    def stats(self) -> dict:
        res = self._result
        index = res.index
        callables = index.callable_indices
        compute = [i for i in callables if not index.non_compute[i]]
        supported = [i for i in compute if res.assignment.backend[i] is not None]
        accelerated = [i for i in compute if res.subgraphs[self._tag_of[i]].is_acc]
        by_backend = {b: 0 for b in self.backends}
        for sg in res.subgraphs:
            by_backend[sg.backend] = by_backend.get(sg.backend, 0) + 1
        boundary = 0
        for i in callables:
            k = self._tag_of[i]
            if any(index.callable[u] and self._tag_of[u] != k for u in index.users[i]):
                boundary += 1
        return {
            "nodes": len(callables),
            "compute_ops": len(compute),
            "supported_ops": len(supported),
            "coverage": round(len(supported) / len(compute), 4) if compute else 1.0,
            "accelerated_ops": len(accelerated),
            "accelerated_coverage": round(len(accelerated) / len(compute), 4) if compute else 1.0,
            "subgraphs": len(res.subgraphs),
            "acc_subgraphs": sum(1 for sg in res.subgraphs if sg.is_acc),
            "subgraphs_by_backend": by_backend,
            "boundary_tensors": boundary,
        }

    def ops(self) -> "pd.DataFrame":
        """One row per op target: how many, where they run, and why."""
        import pandas as pd

        res = self._result
        index = res.index
        rows: dict[str, dict[str, Any]] = {}
        reasons: dict[str, Counter] = {}
        for i in index.callable_indices:
            op = index.ops[i]
            row = rows.setdefault(op, {"op": op, "count": 0, **{b: 0 for b in self.backends}})
            row["count"] += 1
            b = res.subgraphs[self._tag_of[i]].backend
            row[b] = row.get(b, 0) + 1
            reasons.setdefault(op, Counter())[self._short_reason(i)] += 1
        table = []
        for op, row in rows.items():
            where = [b for b in self.backends if row.get(b)]
            row["backend"] = ", ".join(where)
            row["reason"] = "; ".join(r for r, _ in reasons[op].most_common(2))
            table.append(row)
        cols = ["op", "count", "backend", *self.backends, "reason"]
        df = pd.DataFrame(table, columns=cols)
        return df.sort_values(["count", "op"], ascending=[False, True], ignore_index=True)

    def _short_reason(self, i: int) -> str:
        res = self._result
        if i in res.demoted:
            return f"demoted (subgraph < min_block_size {self.config.min_block_size})"
        code = res.assignment.code[i]
        if code == eng.SUPPORTED:
            return f"supported by {res.assignment.backend[i]}"
        if code == eng.FOLLOWS_PRODUCER:
            return "non-compute: follows producer"
        if code == eng.TORCH_EXECUTED:
            return "in torch_executed_ops"
        if code == eng.VALIDATOR:
            return "validator rejected"
        return "no support in any backend"

    def summary(self) -> "pd.DataFrame":
        """One row per subgraph: tag, backend, op counts, boundary tensors and their shapes."""
        import pandas as pd

        index = self._result.index
        rows = []
        for sg in self.subgraphs:
            ops = Counter(index.ops[index.position[n]].replace("torch.ops.", "") for n in sg.nodes)
            rows.append({
                "tag": sg.tag,
                "backend": sg.backend,
                "accelerated": sg.is_acc,
                "ops": sg.compute_ops,
                "nodes": len(sg.nodes),
                "inputs": len(sg.inputs),
                "outputs": len(sg.outputs),
                "input_shapes": "; ".join(str(t) for t in sg.inputs),
                "output_shapes": "; ".join(str(t) for t in sg.outputs),
                "top_ops": ", ".join(f"{o} x{c}" for o, c in ops.most_common(3)),
            })
        return pd.DataFrame(rows, columns=["tag", "backend", "accelerated", "ops", "nodes", "inputs",
                                           "outputs", "input_shapes", "output_shapes", "top_ops"])

    def report(self) -> str:
        """Everything Torch-TensorRT's dryrun report shows, for every backend."""
        from hierviz.partitioner.report import report

        return report(self)

    def recommend(self, sizes: Iterable[int] | None = None) -> "pd.DataFrame":
        """min_block_size -> subgraph counts per backend, by re-partitioning at each size
        (only the small-block pass is re-run; assignment and traversal are reused)."""
        import pandas as pd

        res = self._result
        if sizes is None:
            largest = max((len(sg.nodes) for sg in res.raw if sg.is_acc), default=1)
            sizes = sorted({1, 2, 3, 5, 8, 10, 15, 20, 30, 50, 100} | {self.config.min_block_size})
            sizes = [s for s in sizes if s <= max(largest + 1, self.config.min_block_size)]
        rows = []
        for size in sizes:
            if int(size) < 1:
                raise ConfigError(f"recommend: sizes must be >= 1, got {size}")
            if self.engine == "hierviz":
                merged, _ = eng.merge_small(res.raw, int(size), self.config.require_full_compilation)
            else:  # upstream's subgraphs before demotion are not kept: run it again at this size
                from hierviz.partitioner import partition

                again = partition(self.graph, config=self.config.replace(min_block_size=int(size)),
                                  engine=self.engine)
                merged = again._result.subgraphs
            counts = Counter(sg.backend for sg in merged)
            row = {"min_block_size": int(size), "subgraphs": len(merged),
                   "acc_subgraphs": sum(1 for sg in merged if sg.is_acc)}
            row.update({b: counts.get(b, 0) for b in self.backends})
            row["accelerated_nodes"] = sum(len(sg.nodes) for sg in merged if sg.is_acc)
            rows.append(row)
        return pd.DataFrame(rows)

    # ------------------------------------------------------------------ drawing
    def render(self, view: str = "auto", *, focus: Any = None, max_nodes: int | None = None,
               radius: int = 2, **kwargs: Any) -> "graphviz.Digraph":
        """A graphviz.Digraph of the partition: view is full, collapsed, focus or auto
        (full up to max_nodes, collapsed above); `weights=True` also draws weights."""
        from hierviz.drawing import render

        return render(self, view=view, focus=focus, max_nodes=max_nodes, radius=radius, **kwargs)

    def save(self, path: str | Path, **kwargs: Any) -> Path:
        from hierviz.drawing import save

        return save(self, path, **kwargs)

    def _repr_html_(self) -> str:
        from hierviz.drawing import notebook_html

        return notebook_html(self)

    def __repr__(self) -> str:
        s = self.stats
        by = ", ".join(f"{b}={n}" for b, n in s["subgraphs_by_backend"].items() if n)
        return (f"<hv.Partition {s['nodes']} nodes, {s['subgraphs']} subgraphs ({by}), "
                f"coverage {s['coverage']:.0%}, {self.config.label()}>")


def copy_graph_module(gm: GraphModule) -> GraphModule:
    """A GraphModule over a copy of gm's graph (same node names and meta, same codegen),
    sharing gm's weights. Passes that write to nodes run on this, so the user's graph is
    never touched."""
    graph = torch.fx.Graph()
    out = graph.graph_copy(gm.graph, {}, return_output_node=True)
    if isinstance(out, tuple):
        out = out[0]
    graph.output(out)
    graph._codegen = gm.graph._codegen
    return GraphModule(gm, graph)


def build_split_module(gm: GraphModule, result: eng.EngineResult) -> GraphModule:
    """Split a copy of `gm` by subgraph tags; the original graph is left untouched."""
    from torch.fx.passes.split_utils import split_by_tags

    work = copy_graph_module(gm)
    copies = {n.name: n for n in work.graph.nodes}
    names = result.index.names
    for k, sg in enumerate(result.subgraphs):
        for i in sg.nodes:
            copies[names[i]].tag = result.tags[k]
    split = split_by_tags(work, list(result.tags))
    codegen = getattr(gm.graph, "_codegen", None)
    if codegen is not None and type(codegen) is not torch.fx.graph.CodeGen:
        split.graph._codegen = copy.deepcopy(codegen)
        split.recompile()
    return split


def diff(a: Partition, b: Partition) -> "pd.DataFrame":
    """Nodes whose backend or subgraph differs between two partitions of the same graph."""
    import pandas as pd

    ia, ib = a._result.index, b._result.index
    if ia.names != ib.names:
        raise ConfigError("diff needs two partitions of the same graph (capture the model once and "
                          "partition it with two configs).")
    rows = []
    for i in ia.callable_indices:
        name = ia.names[i]
        ba, bb = a.backend_of(name), b.backend_of(name)
        ta, tb = a.tag_of(name), b.tag_of(name)
        if ba != bb or _subgraph_key(a, name) != _subgraph_key(b, name):
            rows.append({"node": name, "op": ia.ops[i], "backend_a": ba, "backend_b": bb,
                         "tag_a": ta, "tag_b": tb, "reason_a": a.reason_of(name), "reason_b": b.reason_of(name)})
    return pd.DataFrame(rows, columns=["node", "op", "backend_a", "backend_b", "tag_a", "tag_b",
                                       "reason_a", "reason_b"])


def _subgraph_key(p: Partition, name: str) -> frozenset[str]:
    """A subgraph's identity independent of its numbering: its member set."""
    k = p._tag_of[p._pos(name)]
    return p._members[k]
