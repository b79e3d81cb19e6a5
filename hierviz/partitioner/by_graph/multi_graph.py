"""MultiGraphPartition: a model partitioned graph by graph, as torch.compile's torch_tensorrt backend does.

`hv.partition(model, inputs, ir="torch_compile")` captures the graphs dynamo compiles
(hierviz.capturing.by_graph.dynamo_capture) and partitions each with the same Config and engine; this holds them,
in execution order, with the graph breaks between them, and answers a Partition's questions for
the whole model: stats summed over graphs, a report (each graph's dryrun, then totals), per-node
and per-subgraph tables with a `graph` column, `reason_of`.

Nodes of different graphs may share a name, so across graphs a node is named `g<k>/<name>`
(`"g2/add_3"`: node `add_3` of graph 2, counting from 0 in execution order); every method that
takes a node also takes the pair `(2, "add_3")`.

As torch.compile's backend does (`parse_dynamo_kwargs`), require_full_compilation is off; and a
graph with fewer supported ops than min_block_size is left whole in PyTorch
(`compile_module`'s early return; engine "fast" / "global" make exactly that partition).
"""

from __future__ import annotations

import itertools
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, overload

from hierviz.foundation.arguments import check_bool
from hierviz.settings.config import Config, derive
from hierviz.support.sources import ops as support_ops
from hierviz.support.support_map import SupportMap
from hierviz.capturing.aten_capture import check_ir, source_of
from hierviz.capturing.by_graph.dynamo_capture import DynamoCapture
from hierviz.errors import ConfigError, checked_arguments, parameter_names, unknown_arguments
from hierviz.capturing.by_graph.graph_break import GraphBreak
from hierviz.partitioner.engine_dispatch import partition_graph
from hierviz.partitioner.by_graph.per_graph import per_graph, per_graph_table
from hierviz.partitioner.by_graph.unrecorded_sources import refuse_unrecorded_sources
from hierviz.partitioner.reasons import FALLBACK
from hierviz.partitioner.partition_result import DEFAULT_TOP, Partition, outline
from hierviz.partitioner.counts import count_text

if TYPE_CHECKING:  # pragma: no cover
    import graphviz
    import pandas as pd
    from torch.fx import GraphModule

RULE = "=" * 30
SUMMED = ("nodes", "compute_ops", "supported_ops", "accelerated_ops", "subgraphs", "acc_subgraphs",
          "boundary_tensors")
NOTHING_CAPTURED = "nothing captured: the whole forward runs in Python"
LEFT_WHOLE = "graphs left whole in PyTorch (fewer than min_block_size supported ops)"
RUN_EAGERLY = "graphs run eagerly after Torch-TensorRT's backend failed"


def qualified(graph: int, name: str) -> str:
    """The name of node `name` of graph `graph` across a model's graphs: 'g2/add_3'."""
    return f"g{graph}/{name}"


def runs_by_graph(model: Any, ir: Any) -> bool:
    """Whether `model` is partitioned graph by graph: `ir="torch_compile"` (ir checked), or a
    capture or partition that already is graph by graph. hv.partition, hv.sweep, hv.tune,
    hv.compare_engines and hv.explore all decide with this."""
    return check_ir(ir) == "torch_compile" or isinstance(model, (DynamoCapture, MultiGraphPartition))


class MultiGraphPartition(Sequence[Partition]):
    """Every dynamo graph of a model partitioned, in execution order: a sequence of
    hv.Partitions (`len(mp)`, `mp[k]`, `for p in mp`) plus the graph breaks between them.

    `.graphs`: one hv.Partition per graph (a list); `.breaks`: the graph breaks
    (hierviz.capturing.by_graph.graph_break.GraphBreak), in the order they happened; `.capture`:
    the DynamoCapture (each graph's inputs, outputs, ops, example inputs); `.config` and
    `.engine` the settings every graph was partitioned with. What a layer does to one Partition
    it does to every graph with hierviz.partitioner.by_graph.per_graph.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise ConfigError("A MultiGraphPartition is made by hv.partition(model, example_inputs, ir='torch_compile'), "
                          "or read back by hv.load_partition(path); it is not constructed directly.")

    @classmethod
    def _made(cls, capture: DynamoCapture, graphs: list[Partition], config: Config,
              notes: tuple[str, ...] = ()) -> "MultiGraphPartition":
        """The partition of `capture`'s graphs (hv.partition's; its constructor is private)."""
        self = cls.__new__(cls)
        self._setup(capture, graphs, config, notes)
        return self

    def _setup(self, capture: DynamoCapture, graphs: list[Partition], config: Config,
               notes: tuple[str, ...] = ()) -> None:
        self.capture = capture
        self._model = source_of(capture)  # kept while the partition lives (as Partition does)
        self.graphs = list(graphs)
        self.breaks: tuple[GraphBreak, ...] = capture.breaks
        self.config = config
        self.engine = config.engine
        self.notes = tuple(notes)
        # (device, the report's line on it) the graphs were lowered for; None: not known (a file saved before)
        self.traced_for: tuple[str, ...] | None = tuple(getattr(capture, "traced_for", ())) or None

    @property
    def target_device(self) -> str | None:
        """The device the graphs were lowered for ("cuda" or "cpu", as Partition.target_device); None when not known."""
        return None if self.traced_for is None else self.traced_for[0]

    @property
    def backends(self) -> tuple[str, ...]:
        """Backends in priority order, then the PyTorch fallback (as Partition.backends)."""
        return (*self.config.priority, FALLBACK)

    # ------------------------------------------------------------------ per graph
    def __len__(self) -> int:
        """How many graphs dynamo made."""
        return len(self.graphs)

    @overload
    def __getitem__(self, k: int | str) -> Partition: ...

    @overload
    def __getitem__(self, k: slice) -> list[Partition]: ...

    def __getitem__(self, k: int | str | slice) -> Partition | list[Partition]:
        """Graph k's Partition (k an index, or its name 'g2'); a slice gives those graphs' Partitions."""
        if isinstance(k, slice):
            return self.graphs[k]
        if isinstance(k, str) and k[:1] == "g" and k[1:].isdigit():
            k = int(k[1:])
        return self.graphs[self._graph_index(k)]

    def __iter__(self) -> Iterator[Partition]:
        """Each graph's Partition, in execution order."""
        return iter(self.graphs)

    def breaks_after(self, k: int) -> tuple[GraphBreak, ...]:
        """The graph breaks right after graph `k` (-1: before the first graph), in the order they happened."""
        return tuple(b for b in self.breaks if b.after_graph == k)

    @checked_arguments
    def recommend(self, sizes: Any = None) -> "pd.DataFrame":
        """min_block_size -> subgraph counts per backend summed over the graphs (each graph's
        Partition.recommend at the same sizes: every size any graph would suggest, or `sizes`)."""
        import pandas as pd

        if sizes is None:
            sizes = sorted({int(v) for p in self.graphs for v in p.recommend()["min_block_size"]}
                           | {self.config.min_block_size})
        tables = per_graph(lambda p: p.recommend(sizes), self)
        if not tables:
            return pd.DataFrame({"min_block_size": list(sizes)})
        total = pd.concat(tables).groupby("min_block_size", sort=True).sum(numeric_only=True).reset_index()
        total.insert(1, "graphs", len(self.graphs))
        return total

    def compile_today(self, *, compute: bool = True) -> list:
        """What Torch-TensorRT's torch.compile backend runs today, graph by graph: each graph's
        Partition.compile_today() (its fast partition and the seconds it took), in order."""
        return per_graph(lambda p: p.compile_today(compute=compute), self)

    def left_whole(self, k: int) -> bool:
        """Whether graph `k` runs whole in PyTorch because it has fewer supported ops than
        min_block_size (torch.compile's backend returns such a graph unchanged)."""
        s = self.graphs[self._graph_index(k)].stats
        return (not self.backend_failed(k) and s["compute_ops"] > 0 and s["acc_subgraphs"] == 0
                and s["supported_ops"] < self.config.min_block_size)

    def backend_failed(self, k: int) -> str:
        """For a graph Torch-TensorRT's backend runs eagerly because its lowering failed with an
        exception the backend catches: "runs eagerly: Torch-TensorRT's backend failed on it
        (RuntimeError: ...)"; empty for the others."""
        return str(getattr(self.capture.graphs[self._graph_index(k)], "fell_back", "") or "")

    def has_compute(self, k: int) -> bool:
        """False for a graph with nothing to partition (no compute op)."""
        return self.graphs[self._graph_index(k)].stats["compute_ops"] > 0

    def _graph_index(self, k: Any) -> int:
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(self.graphs):
            raise ConfigError(f"no graph {k!r:.40}: this model has {len(self.graphs)} graph(s), "
                              f"numbered 0 to {len(self.graphs) - 1} in execution order.")
        return k

    def locate(self, node: Any) -> tuple[int, str]:
        """(graph index, node name) of a node named 'g2/add_3' or given as (2, 'add_3')."""
        if isinstance(node, tuple) and len(node) == 2 and isinstance(node[0], int) and isinstance(node[1], str):
            k, name = node
        elif isinstance(node, str) and "/" in node and node.split("/", 1)[0][1:].isdigit() and node[0] == "g":
            head, name = node.split("/", 1)
            k = int(head[1:])
        else:
            raise ConfigError(f"across graphs a node is named 'g<graph>/<name>' (e.g. 'g0/{self._example()}') "
                              f"or given as (graph, name), not {node!r:.60}; names are in nodes().name.")
        return self._graph_index(k), name

    def _example(self) -> str:
        for p in self.graphs:
            for row in p.records.name:
                return row
        return "add"

    def reason_of(self, node: Any) -> str:
        """Why the node runs where it runs, in words ('g2/add_3' or (2, 'add_3'))."""
        k, name = self.locate(node)
        why = self.graphs[k].reason_of(name)
        if self.backend_failed(k) and self.graphs[k].backend_of(name) == FALLBACK:
            return self.backend_failed(k)
        if self.left_whole(k) and self.graphs[k].backend_of(name) == FALLBACK:  # not demoted: the graph is left whole
            s = self.graphs[k].stats
            return (f"left whole: fewer than min_block_size ({self.config.min_block_size}) supported ops in this "
                    f"graph ({s['supported_ops']}), so torch.compile's backend returns g{k} unchanged and it runs "
                    "in PyTorch")
        return why

    def backend_of(self, node: Any) -> str:
        """The backend the node runs in ('torch' for PyTorch, 'graph' for inputs and weights)."""
        k, name = self.locate(node)
        return self.graphs[k].backend_of(name)

    def tag_of(self, node: Any) -> str | None:
        """The node's subgraph tag within its graph (None for inputs, weights and outputs)."""
        k, name = self.locate(node)
        return self.graphs[k].tag_of(name)

    # ------------------------------------------------------------------ numbers and tables
    @property
    def stats(self) -> dict:
        """Partition.stats summed over the graphs (coverage recomputed: 0 when no graph holds a
        compute op), plus `graphs`, `graph_breaks`, `graphs_left_whole`, `graphs_without_compute`
        `graphs_run_eagerly` (Torch-TensorRT's backend failed on them: none of their ops is
        accelerated) and `nothing_captured` (dynamo made no graph: the whole forward runs in Python)."""
        per = [p.stats for p in self.graphs]
        total = {key: sum(s[key] for s in per) for key in SUMMED}
        compute = total["compute_ops"]
        # zero of zero is not 100%: a model whose graphs hold no compute op accelerates nothing
        total["coverage"] = round(total["supported_ops"] / compute, 4) if compute else 0.0
        total["accelerated_coverage"] = round(total["accelerated_ops"] / compute, 4) if compute else 0.0
        by_backend: Counter = Counter({b: 0 for b in (*self.config.priority, "torch")})
        for s in per:
            by_backend.update(s["subgraphs_by_backend"])
        total["subgraphs_by_backend"] = dict(by_backend)
        total["graphs"] = len(self.graphs)
        total["graph_breaks"] = len(self.breaks)
        total["graphs_left_whole"] = sum(self.left_whole(k) for k in range(len(self.graphs)))
        total["graphs_without_compute"] = sum(not self.has_compute(k) for k in range(len(self.graphs)))
        total["graphs_run_eagerly"] = sum(bool(self.backend_failed(k)) for k in range(len(self.graphs)))
        total["nothing_captured"] = not self.graphs
        return total

    @checked_arguments
    def nodes(self) -> "pd.DataFrame":
        """Partition.nodes() of every graph, one after the other: `graph` (its index), `name`
        (qualified across graphs, 'g2/add_3'), `node` (the name within its graph), then the
        per-graph columns."""
        df = per_graph_table(Partition.nodes, self)
        if "name" in df:
            df.insert(2, "node", df["name"])
            df["name"] = [qualified(int(k), n) for k, n in zip(df["graph"], df["node"])]
        return df

    @checked_arguments
    def ops(self) -> "pd.DataFrame":
        """Partition.ops() of every graph, with its `graph` column: one row per graph and op."""
        return per_graph_table(Partition.ops, self)

    @checked_arguments
    def summary(self) -> "pd.DataFrame":
        """Partition.summary() of every graph, with its `graph` column: one row per subgraph
        (tags are per graph)."""
        return per_graph_table(Partition.summary, self)

    def repartitioned(self, config: Config) -> "MultiGraphPartition":
        """Every graph of this capture partitioned again with `config` (its engine included):
        `hv.partition(self, config=config, ir="torch_compile")`."""
        return partition_graphs(self.capture, config)

    def blockers(self, *, measure: bool = False, device: Any = None, kind: Any = None,
                 top: int = DEFAULT_TOP) -> "pd.DataFrame":
        """One row per cause keeping the model from fewer, larger engines, graph breaks included,
        ranked together as Partition.blockers() ranks (hierviz.partitioner.blockers.multi_blockers, and
        docs/blockers.md, say how each figure is computed): Partition.blockers()'s columns with
        `graph` first (the graphs the row concerns: 'g1', 'g0, g2'). An op cause is one row for
        all graphs, its figures from re-partitioning every graph without it; a graph break
        (kind 'graph break', dynamo's hints in `note`, the user's file:line in `change`) counts
        what joining the two graphs it separates gives. `kind=` keeps some kinds; `top` as in
        Partition.blockers(). `measure=True` is for one graph: part.graphs[k].blockers(measure=True).
        The default table, once made, is kept beside the partition (as Partition.blockers())."""
        from hierviz.partitioner.blockers.multi_blockers import multi_blockers_of

        check_bool(measure, "blockers(measure=...)")
        return multi_blockers_of(self, measure=measure, device=device, kind=kind, top=top)

    # ------------------------------------------------------------------ text
    def _graph_head(self, k: int) -> str:
        g = self.capture.graphs[k]
        where = f"{g.function} ({g.file}:{g.line})" if g.file else "(source unknown)"
        calls = "" if g.calls == 1 else f", called {g.calls} times"
        starts = getattr(g, "starts", "")
        failed = self.backend_failed(k)
        return (f"{RULE} Graph g{k} of {len(self.graphs)}: {where}, {len(g.ops)} ops{calls} {RULE}"
                + (f"\nStarts here: {starts}." if starts else "")
                + (f"\ng{k} {failed}; none of its ops is accelerated." if failed else ""))

    def _break_text(self, b: GraphBreak) -> list[str]:
        where = f" at {b.location}" if b.file else ""
        after = f"after g{b.after_graph}" if b.after_graph >= 0 else "before the first graph"
        lines = [f"Graph break {after}{where}: {b.short}" + ("" if b.ended_graph else " (ended no graph)")]
        if b.code:
            lines.append(f"    {b.code}")
        if b.explanation:
            lines.append(f"  Explanation: {b.explanation}")
        lines += [f"  Hint: {h}" for h in b.hints]
        if not b.gb_type:
            lines.append(f"  Reason: {b.reason.strip().splitlines()[0] if b.reason.strip() else '(none given)'}")
        return lines

    @checked_arguments
    def report(self, *, builds: Any = None) -> str:
        """Each graph's dryrun report (Partition.report) in execution order, the graph breaks
        between them, then totals: graphs, breaks with reasons and source lines, subgraphs per
        backend, graphs left whole in PyTorch and graphs with nothing to partition. With
        `builds=` (what `build()` returned) a "Built on this machine" section ends it."""
        from hierviz.partitioner.report import built_here, report as report_text

        s = self.stats
        lines = [f"{RULE} {self.capture.model} graph by graph, as torch.compile(backend=\"torch_tensorrt\") "
                 f"compiles it: {s['graphs']} graph(s), {s['graph_breaks']} graph break(s) "
                 f"({self.engine} engine) {RULE}",
                 ""]
        lines += [self.traced_for[1], ""] if self.traced_for is not None else []
        lines += [f"Note: {note}." for note in self.notes]
        if s["nothing_captured"]:
            lines += [f"{NOTHING_CAPTURED[0].upper()}{NOTHING_CAPTURED[1:]}: dynamo made no graph, so nothing is "
                      "accelerated (0%); the graph breaks below are why.", ""]
        for b in self.breaks_after(-1):
            lines += self._break_text(b) + [""]
        for k, p in enumerate(self.graphs):
            lines += [self._graph_head(k), ""]
            if not self.has_compute(k):
                lines += ["Nothing to partition: this graph has no compute op (only inputs, views or constants).", ""]
            else:
                if self.left_whole(k):
                    lines += [f"Left whole in PyTorch: {p.stats['supported_ops']} supported op(s) < min_block_size "
                              f"{self.config.min_block_size}, so torch.compile's backend returns this graph "
                              "unchanged.", ""]
                lines.append(report_text(p, False, traced=False).rstrip("\n"))
                lines.append("")
            for b in self.breaks_after(k):
                lines += self._break_text(b) + [""]
        lines += self._totals(s)
        if builds is not None:
            lines += ["", *built_here(builds)]
        return "\n".join(lines) + "\n"

    def _totals(self, s: dict) -> list[str]:
        by = ", ".join(f"{b}={n}" for b, n in s["subgraphs_by_backend"].items())
        lines = [f"{RULE} Totals over {s['graphs']} graph(s) {RULE}", "",
                 f"Graphs: {s['graphs']}",
                 f"Graph breaks: {s['graph_breaks']}"]
        said: list[str] = []  # the same break again at once (a loop, a retried frame): counted, not repeated
        for b in self.breaks:
            after = f"after g{b.after_graph}" if b.after_graph >= 0 else "before g0"
            code = f" ({b.code})" if b.code else ""
            said.append(f"  {after}: {b.location or 'unknown line'}{code}: {b.short}")
        for text, group in itertools.groupby(said):
            times = len(list(group))
            lines.append(text + (f" (x{times})" if times > 1 else ""))
        lines += [f"Operators: {count_text('compute_ops', s['compute_ops'])}, "
                  f"{count_text('supported_ops', s['supported_ops'])}, "
                  f"{s['coverage'] * 100:.2f}% coverage; {s['accelerated_ops']} accelerated "
                  f"({s['accelerated_coverage'] * 100:.2f}%)"
                  + (f"; {NOTHING_CAPTURED}" if s["nothing_captured"] else ""),
                  f"Subgraphs: {s['subgraphs']} ({by})",
                  f"{LEFT_WHOLE[0].upper()}{LEFT_WHOLE[1:]}: {s['graphs_left_whole']}"
                  + (f" ({', '.join(f'g{k}' for k in range(len(self.graphs)) if self.left_whole(k))})"
                     if s["graphs_left_whole"] else ""),
                  f"Graphs with nothing to partition (no compute): {s['graphs_without_compute']}"]
        if s.get("graphs_run_eagerly"):
            failed = [k for k in range(len(self.graphs)) if self.backend_failed(k)]
            lines.append(f"{RUN_EAGERLY[0].upper()}{RUN_EAGERLY[1:]}: {s['graphs_run_eagerly']} "
                         f"({', '.join(f'g{k}' for k in failed)})")
        return lines

    # ------------------------------------------------------------------ built on this machine
    @checked_arguments
    def build(self, *, trt_settings: Any = None, tf32: bool = False, fix: bool = True, cache: bool = True) -> Any:
        """Partition.build() graph by graph (hv.Builds with a `graph` column): each graph runs in
        PyTorch on the values of its first call, then each TensorRT subgraph is converted and
        built. A failure says what torch.compile then runs (that whole graph eagerly, where
        Torch-TensorRT's backend catches it). The partition is left as it was: pass the Builds
        to report(builds=...) or render(builds=...) to show them there."""
        from hierviz.building.build_partition import build_graphs

        return build_graphs(self, trt_settings=trt_settings, tf32=tf32, fix=fix, cache=cache)

    # ------------------------------------------------------------------ running it
    def compile(self, device: Any = None, *, example_inputs: Any = None, model: Any = None, **options: Any) -> Any:
        """The model compiled as this partition says, through torch.compile with hierviz's
        backend (hierviz.latency.by_graph.compiled_graphs.CompiledGraphs, callable like the model): each
        dynamo graph runs its Partition's compiled split module (TensorRT, TorchInductor or
        PyTorch per subgraph), the Python between graphs eagerly. `model`: the model to compile
        (default: the one captured; a private copy is compiled, never the model); with
        `example_inputs` every graph is compiled now, else on the first call. `options` are
        hv.measure's (on_error, trt_settings, inductor_options, compilers, cache, tf32 ...)."""
        from hierviz.latency.by_graph.compiled_graphs import compile_graphs

        return compile_graphs(self, device, example_inputs=example_inputs, model=model, **options)

    def __repr__(self) -> str:
        s = self.stats
        if s["nothing_captured"]:
            return (f"<hv.MultiGraphPartition {self.capture.model}: {NOTHING_CAPTURED} ({s['graph_breaks']} graph "
                    f"breaks), accelerated 0%, {self.config.label()}>")
        accelerated = f", accelerated {s['accelerated_coverage']:.0%}" \
            if s["accelerated_coverage"] < s["coverage"] else ""
        failed = [f"g{k}" for k in range(len(self.graphs)) if self.backend_failed(k)]
        eager = (f", {len(failed)} graph{' runs' if len(failed) == 1 else 's run'} eagerly (Torch-TensorRT's "
                 f"backend failed on {', '.join(failed)})") if failed else ""
        return (f"<hv.MultiGraphPartition {self.capture.model}: {s['graphs']} graphs, "
                f"{s['graph_breaks']} graph breaks, {outline(s, self.config)}{accelerated}{eager}>")

    # ------------------------------------------------------------------ drawing
    @checked_arguments
    def render(self, view: str = "auto", *, max_nodes: int | None = None, measurement: Any = None,
               against: Any = None, depth: int | None = None, **kwargs: Any) -> "graphviz.Digraph":
        """One picture of every graph, in execution order: each graph a frame holding its
        partition (view 'auto' picks full, modules or collapsed per graph from a node budget
        the graphs share; 'full', 'collapsed', 'modules' for all), a graph-break marker between
        frames with dynamo's reason and the user's file:line (hierviz.drawing.by_graph.frames).
        `measurement=` one hv.Measurement per graph, `against=` another MultiGraphPartition of
        the same model, `highlight="blockers"`, `weights=True` as for a Partition."""
        from hierviz.drawing.by_graph.frames import render_graphs as render

        unknown_arguments("MultiGraphPartition.render", kwargs, parameter_names(render, skip=("mp",)))
        return render(self, view=view, max_nodes=max_nodes, measurement=measurement, against=against, depth=depth,
                      **kwargs)

    @checked_arguments
    def save(self, path: str | Path, **kwargs: Any) -> Path:
        """Write the model graph by graph to `path`, the format from its suffix: .svg .png .pdf
        (the picture), .dot, .json (the saved partition hv.load_partition reads), .html (a
        standalone report of every graph and break); format="model_explorer" (one graph pair
        per dynamo graph). Takes render()'s arguments (view=, max_nodes=, ...)."""
        from hierviz.drawing.by_graph.frames import render_graphs as render
        from hierviz.drawing.by_graph.graphs_export import save_graphs as save

        unknown_arguments("MultiGraphPartition.save", kwargs, [*parameter_names(save, skip=("mp", "path")),
                                                               *parameter_names(render, skip=("mp", "view"))])
        return save(self, path, **kwargs)

    def _repr_html_(self) -> str:
        from hierviz.drawing.by_graph.graphs_export import notebook_html_graphs

        return notebook_html_graphs(self)


def partition_graphs(capture: DynamoCapture, config: Config,
                     run: Callable[[GraphModule, Config], Partition] | None = None) -> MultiGraphPartition:
    """Every graph of `capture` partitioned with `config` (require_full_compilation off, as
    torch.compile's backend forces it), in execution order; `run(graph, config)` partitions one
    graph (default: hv.partition's; hv.sweep passes its cached one)."""
    notes: tuple[str, ...] = tuple(getattr(capture, "notes", ()))  # it came from the disk cache
    if config.require_full_compilation:
        config = derive(config, {"require_full_compilation": False})
        notes += ("require_full_compilation has no effect on torch.compile's path (Torch-TensorRT turns it off); "
                 "partitioned without it",)
    refuse_unrecorded_sources(config)
    run = run or partition_graph
    # a graph Torch-TensorRT's backend runs eagerly is dynamo's own (not lowered): no backend takes any of it
    eager = Config(priority=config.priority, support=SupportMap({b: support_ops(()) for b in config.priority}),
                   min_block_size=config.min_block_size)
    # a graph Torch-TensorRT's backend fell back on has no blockers (hierviz.partitioner.blockers.blocker_causes)
    parts = [(partition_graph(g.graph, eager) if getattr(g, "fell_back", "") else run(g.graph, config))
             .as_dynamo_graph(f"g{k}", g.example_inputs, getattr(g, "fell_back", ""))
             for k, g in enumerate(capture.graphs)]
    return MultiGraphPartition._made(capture, parts, config, notes)


__all__ = ["runs_by_graph", "MultiGraphPartition", "partition_graphs",
           "qualified", "LEFT_WHOLE", "NOTHING_CAPTURED",
           "RUN_EAGERLY"]
