"""Partition: what a partitioner run produced, and questions about it.

It holds an engine's result (`plan.EngineResult`, built by hierviz's engine, upstream/hierarchical.py or
compile_partitioners.py) and answers from it: the public per-node record (`Partition.records`, built by
record_building.py; `.record(name)`, `.nodes()`; see record.py) and the Partition's methods; splitter.py
reads the result too, to build the split module. Everything outside the partitioner reads the Partition,
never the engine's result. Tables and text computed from the record live in report.py.
"""

from __future__ import annotations

import copy
import functools
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

import torch
from torch.fx import GraphModule

from hierviz.foundation.arguments import check_bool
from hierviz.capturing.aten_capture import capture_notes, source_of
from hierviz.capturing.target_device import target_of
from hierviz.settings.config import Config, derive
from hierviz.settings.setting_values import parse_min_block_size
from hierviz.errors import ConfigError, checked_arguments, parameter_names, unknown_arguments
from hierviz.foundation.gcpause import gc_paused
from hierviz.support.tensorrt_support import tensorrt_version
from hierviz.version import __version__
from hierviz.partitioner.assumed_support import AssumedNode, assumed_nodes, assumed_text
from hierviz.partitioner.counts import nodes_text
from hierviz.partitioner.splitter import build_split_module
from hierviz.partitioner.engine.passes.demotion import at_min_block_size
from hierviz.partitioner.engine.plan import EngineResult
from hierviz.partitioner.reasons import FALLBACK, GRAPH, NOTHING_TO_PARTITION
from hierviz.partitioner.record import NodeRecord, NodeTable, tensor_spec
from hierviz.partitioner.record_building import node_table
from hierviz.partitioner.subgraph import Subgraph

if TYPE_CHECKING:  # pragma: no cover
    import graphviz
    import pandas as pd


DEFAULT_TOP = 3  # the blockers a default `blockers()` table joins in its last row

class Partition:
    """The result of partitioning a graph with a Config.

    `.graph` is the input graph (never modified); `.module` is the split GraphModule, built
    on first use; `.subgraphs` lists each subgraph with its boundary tensors.
    """

    saved_from: Path | None = None  # the file a loaded partition came from (hv.load_partition)
    # ("g3", its first call's values): this is dynamo graph 3 of torch.compile's path (MultiGraphPartition.graphs)
    dynamo_graph: tuple[str, tuple] | None = None
    # graph by graph: why Torch-TensorRT's backend runs this graph eagerly (it failed on it); "" when it does not
    backend_failed: str = ""
    # (device, the report's line on it) the graph was lowered for: hv.capture(target_device=...); None: not known
    traced_for: tuple[str, str] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Not for users: a Partition comes from hv.partition (or hv.load_partition); inside
        hierviz an engine's result becomes one through `from_engine_result`."""
        raise ConfigError("a Partition is not made directly: hv.partition(model_or_graph, example_inputs, config) "
                          "partitions a model, hv.load_partition(path) reads a saved one.")

    def _start(self, graph: GraphModule, config: Config, result: EngineResult, engine: str | None,
               module: GraphModule | None, notes: tuple[str, ...]) -> None:
        self.graph = graph
        # the model the graph was captured from, held so that it lives as long as the partition (hv.partition(
        # Model(), x) keeps it for repro() and hv.measure's eager baseline); its weights are the graph's own
        self._model = source_of(graph)
        if engine is not None and engine != config.engine:  # the engine that made it is part of its settings
            config = derive(config, {"engine": engine}, together=False)
        self.config = config
        self.engine = config.engine
        # what the engine did besides partitioning (e.g. compile's fallback), and what the
        # capture says of itself (it came from the disk cache)
        self.notes = tuple(notes) + capture_notes(graph)
        self.traced_for = target_of(graph)
        self._result = result
        self._module = module
        self._tag_of: dict[int, int] = {}
        for k, sg in enumerate(result.subgraphs):
            for i in sg.nodes:
                self._tag_of[i] = k

    @functools.cached_property
    def subgraphs(self) -> list[Subgraph]:
        """Every subgraph in order, with its boundary tensors (described on first use)."""
        with gc_paused():
            return [self._describe(k) for k in range(len(self._result.subgraphs))]

    @functools.cached_property
    def _by_tag(self) -> dict[str, Subgraph]:
        return {sg.tag: sg for sg in self.subgraphs}

    # ------------------------------------------------------------------ the per-node record
    @functools.cached_property
    def records(self) -> NodeTable:
        """The per-node record of every graph node in columns (built once; fast at 10^5
        nodes). `Partition.record(name)` gives one node's `NodeRecord`, `nodes()` a DataFrame."""
        with gc_paused():
            return node_table(self._result, self.config)

    def record(self, node_name: str) -> NodeRecord:
        """One node's record: op, kind, backend, tag, reason, module, dtype, shape, ..."""
        return self.records[self._pos(node_name)]

    @checked_arguments
    def nodes(self) -> "pd.DataFrame":
        """One row per graph node, in graph order: name, op, kind, compute (a compute op: not
        getitem or a view that runs with its producer), eligible_backend, backend, tag,
        reason_code, reason, module_path, module_class, dtype, shape. The graph's inputs,
        weights and output have backend "graph"; the other rows are the `stats["nodes"]`."""
        return self.records.frame()

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
        if not isinstance(node_name, str):
            raise ConfigError(f"node names are strings such as 'relu_default' (see Partition.nodes()), "
                              f"not {type(node_name).__name__}.")
        pos = self._result.index.position.get(node_name)
        if pos is None:
            raise ConfigError(f"no node named {node_name!r} in this graph; node names are listed in "
                              "Partition.nodes() and Partition.subgraphs[i].nodes.")
        return pos

    @property
    def target_device(self) -> str | None:
        """The device the graph was lowered for ("cuda": as Torch-TensorRT lowers it on a CUDA GPU,
        whatever machine captured it; "cpu"), as hv.capture(target_device=...) made it; None when not known."""
        return None if self.traced_for is None else self.traced_for[0]

    @property
    def backends(self) -> tuple[str, ...]:
        """Backends in priority order, then the PyTorch fallback."""
        return (*self.config.priority, FALLBACK)

    def subgraph(self, tag: str) -> Subgraph:
        try:
            return self._by_tag[tag]
        except (KeyError, TypeError):
            raise ConfigError(f"no subgraph {tag!r}; tags are {list(self._by_tag)[:10]}") from None

    def backend_of(self, node_name: str) -> str:
        """The backend the node runs in ('torch' for PyTorch), or 'graph' for inputs/weights."""
        k = self._tag_of.get(self._pos(node_name))
        return GRAPH if k is None else self._result.subgraphs[k].backend

    def tag_of(self, node_name: str) -> str | None:
        """The node's subgraph tag (None for placeholders, weights and the output)."""
        k = self._tag_of.get(self._pos(node_name))
        return None if k is None else self._result.tags[k]

    def eligible_backend_of(self, node_name: str) -> str:
        """The backend support made the node eligible for, before small blocks were demoted."""
        return self.records.eligible_backend[self._pos(node_name)] or FALLBACK

    def reason_code_of(self, node_name: str) -> str:
        """supported, follows_producer, torch_executed_ops, unsupported, validator_rejected,
        demoted or not_callable (hierviz.partitioner.REASON_CODES)."""
        return self.records.reason_code[self._pos(node_name)]

    def reason_of(self, node_name: str) -> str:
        """Why the node runs where it runs, in words."""
        return self.records.reason(self._pos(node_name))

    @functools.cached_property
    def assumed(self) -> tuple[AssumedNode, ...]:
        """The nodes this partition places in TensorRT that Torch-TensorRT's own converters would
        not take (no converter, or its validator refuses the node): only a config whose TensorRT
        support is not Torch-TensorRT's default (a Blockers what-if) places them; Torch-TensorRT
        would not run such a partition. () otherwise; the repr and report() name them."""
        with gc_paused():
            return assumed_nodes(self.config, self.records, None if self.graph is None else self._result.index.nodes)

    # ------------------------------------------------------------------ the split module
    @property
    def module(self) -> GraphModule:
        """The split GraphModule: one submodule per subgraph, named by its tag."""
        return self._split_module

    @functools.cached_property
    def _split_module(self) -> GraphModule:
        """The engine's split module where it built one, else built here on first use."""
        return self._module if self._module is not None else build_split_module(self.graph, self._result)

    # ------------------------------------------------------------------ numbers and tables
    @functools.cached_property
    def stats(self) -> dict:
        res = self._result
        index = res.index
        callables = index.callable_indices
        compute = [i for i in callables if not index.non_compute[i]]
        supported = [i for i in compute if res.assignment.backend[i] is not None]
        tag_of = self._tag_of  # no entry: removed as dead code (engine="torch_tensorrt")
        accelerated = [i for i in compute if i in tag_of and res.subgraphs[tag_of[i]].is_acc]
        by_backend = {b: 0 for b in self.backends}
        for sg in res.subgraphs:
            by_backend[sg.backend] = by_backend.get(sg.backend, 0) + 1
        boundary = 0
        for i in callables:
            k = tag_of.get(i)
            if k is not None and any(index.callable[u] and tag_of.get(u) != k for u in index.users[i]):
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

    @checked_arguments
    def ops(self) -> "pd.DataFrame":
        """One row per op target: how many, where they run, and why."""
        from hierviz.partitioner.report import ops_table

        return ops_table(self)

    @checked_arguments
    def summary(self) -> "pd.DataFrame":
        """One row per subgraph: tag, backend, op counts, boundary tensors and their shapes."""
        from hierviz.partitioner.report import summary_table

        return summary_table(self)

    @checked_arguments
    def report(self, *, what_to_change: bool = True, measurement: Any = None, builds: Any = None) -> str:
        """Everything Torch-TensorRT's dryrun report shows, for every backend; then "What to
        change": the top 5 blockers (`blockers()`), each with what fixing it saves. With
        `measurement=` (hv.measure of this partition) each engine says what ran it (a subgraph
        that fell back ran in eager PyTorch, and why), and a "Measured" section its times.
        With `builds=` (what `build()` returned) a "Built on this machine" section follows, and
        each engine that failed to build leads "What to change"; without it the report is the
        same whether or not the partition was built."""
        from hierviz.partitioner.report import report

        return report(self, what_to_change, measurement=measurement, builds=builds)

    @checked_arguments
    def subgraph_counts(self, min_block_size: int) -> dict[str, int]:
        """Subgraphs per backend (priority order, then 'torch') that partitioning this graph at
        `min_block_size` gives, everything else in the config unchanged. hierviz's engine
        re-runs only its small-block pass; upstream's is re-run whole."""
        merged = self._merged_at(parse_min_block_size(min_block_size))
        counts = {b: 0 for b in self.backends}
        for sg in merged:
            counts[sg.backend] = counts.get(sg.backend, 0) + 1
        return counts

    def _merged_at(self, min_block_size: int) -> list:
        """The engine's subgraphs at another min_block_size. hierviz's engine re-runs only its
        small-block pass; the others, whose subgraphs before demotion are not kept, run again
        (only when asked: recommend(), subgraph_counts())."""
        if self.engine == "hierviz":
            merged, _ = at_min_block_size(self._result, min_block_size, self.config.require_full_compilation)
            return merged
        from hierviz.partitioner.engine_dispatch import partition_graph

        again = partition_graph(self.graph, derive(self.config, {"min_block_size": min_block_size}))
        return again._result.subgraphs

    @checked_arguments
    def recommend(self, sizes: Iterable[int] | None = None) -> "pd.DataFrame":
        """min_block_size -> subgraph counts per backend, by re-partitioning at each size: for
        engine "hierviz" only its small-block pass is re-run (assignment and traversal are
        reused); the other engines run whole once per size, so this costs that much."""
        import pandas as pd

        res = self._result
        if sizes is None:
            largest = max((len(sg.nodes) for sg in res.raw if sg.is_acc), default=1)
            sizes = sorted({1, 2, 3, 5, 8, 10, 15, 20, 30, 50, 100} | {self.config.min_block_size})
            sizes = [s for s in sizes if s <= max(largest + 1, self.config.min_block_size)]
        elif isinstance(sizes, (str, bytes, Mapping)) or not isinstance(sizes, Iterable):
            raise ConfigError(f"recommend takes a list of min_block_size values, e.g. p.recommend([1, 3, 5]), "
                              f"not {type(sizes).__name__} {sizes!r}.")
        else:  # the user's sizes, each read once
            try:
                sizes = [parse_min_block_size(s) for s in sizes]
            except ConfigError as exc:
                raise ConfigError(f"recommend: {exc}") from None
        rows = []
        for size in sizes:
            merged = self._merged_at(int(size))
            counts = Counter(sg.backend for sg in merged)
            row = {"min_block_size": int(size), "subgraphs": len(merged),
                   "acc_subgraphs": sum(1 for sg in merged if sg.is_acc)}
            row.update({b: counts.get(b, 0) for b in self.backends})
            row["accelerated_nodes"] = sum(len(sg.nodes) for sg in merged if sg.is_acc)
            rows.append(row)
        return pd.DataFrame(rows)

    @functools.cached_property
    def versions(self) -> dict[str, str | None]:
        """The torch, torch_tensorrt and hierviz versions this partition was made with."""
        return versions()

    @functools.cached_property
    def demotions(self) -> dict[str, tuple[str, int]]:
        """Nodes demoted to PyTorch below min_block_size: name -> (the backend they were
        eligible for, the size of the small subgraph they were in; 0 when the engine does not say)."""
        names = self._result.index.names
        return {names[i]: d for i, d in sorted(self._result.demoted.items())}

    @checked_arguments
    def blockers(self, *, measure: bool = False, device: Any = None, kind: Any = None, top: int = DEFAULT_TOP,
                 example_inputs: Any = None, measure_options: dict | None = None,
                 compute: bool = True, builds: Any = None) -> "pd.DataFrame | None":
        """One row per cause keeping nodes out of the accelerated backends (no converter,
        validator rejected, forced by torch_executed_ops, demoted below min_block_size, no
        backend in priority), with what re-partitioning with that cause removed gives:
        subgraphs_if_fixed, subgraphs_saved, accelerated_ops_gained, and its verdict from those
        counts (improvement: fewer subgraphs without fewer ops accelerated, or more ops
        accelerated without more subgraphs; trade-off; no gain); improvements first, each group
        by subgraphs saved, then ops gained; a last row joins the first `top` (0: none) when that
        is a change and an outcome no single row has. `kind=` keeps some kinds.
        `measure=True` also times each what-if that can run (hv.measure on `device`) against
        this setting: median_ms, speedup and its interval (speedup_low, speedup_high), or in
        `measured` why a row cannot run (no converter); `example_inputs` (default: random,
        shaped like the graph's) and `measure_options` (hv.measure's warmup, iters, ...) go to
        hv.measure. The default table, once made, is kept beside the partition (a copy is
        returned; hierviz.partitioner.blockers.known_tables); `compute=False` returns it only when
        known, else None (the HTML report's rule). With `builds=` (what `build()` returned), each
        engine that failed to build here comes first (kind "engine fails to build", verdict
        "required"), its change the fix shown to build."""
        from hierviz.partitioner.blockers.blocker_causes import blockers_of

        check_bool(measure, "blockers(measure=...)")
        table = blockers_of(self, kind=kind, top=top, compute=compute, builds=builds)
        if not measure or table is None:
            return table
        from hierviz.latency.whatif import measure_blockers

        return measure_blockers(self, table, device=device, example_inputs=example_inputs, **(measure_options or {}))

    def keep_blockers(self, table: pd.DataFrame) -> None:
        """Keep `table`, this partition's default `blockers()` made elsewhere (the explorer's
        worker makes it), so the report and `blockers(compute=False)` show it; a table already
        known is kept as it is (both are the same function of this partition)."""
        from hierviz.partitioner.blockers.known_tables import keep_table

        keep_table(self, table)

    def as_dynamo_graph(self, name: str, example_inputs: tuple, backend_failed: str = "") -> Partition:
        """This partition as dynamo graph `name` ("g3") of torch.compile's path, called first with
        `example_inputs` (its build() then answers for that path); `backend_failed`: why
        Torch-TensorRT's backend runs the graph eagerly, "" when it does not. A copy: this
        partition, which a cache may share between graphs, is left as it is."""
        graph_part = copy.copy(self)
        graph_part.dynamo_graph = (name, example_inputs)
        graph_part.backend_failed = backend_failed
        return graph_part

    # ------------------------------------------------------------------ drawing
    @checked_arguments
    def render(self, view: str = "auto", *, focus: Any = None, max_nodes: int | None = None,
               measurement: Any = None, against: "Partition | None" = None, depth: int | None = None,
               radius: int = 2, **kwargs: Any) -> "graphviz.Digraph":
        """A graphviz.Digraph of the partition: view is full, collapsed, focus, modules (by
        nn.Module, repeated blocks rolled up; `depth` levels) or auto (full up to max_nodes,
        collapsed above); `measurement=` overlays measured time, `against=` marks what another
        partition does differently (a loaded one too); `numerics=` (hv.numerics) colours each
        subgraph by its error; `highlight="blockers"` marks the nodes of the top causes of
        `blockers()` in red; `weights=True` also draws weights."""
        from hierviz.drawing.views import render

        unknown_arguments("Partition.render", kwargs, parameter_names(render, skip=("p",)))
        return render(self, view=view, focus=focus, max_nodes=max_nodes, measurement=measurement, against=against,
                      depth=depth, radius=radius, **kwargs)

    @checked_arguments
    def save(self, path: str | Path, **kwargs: Any) -> Path:
        """Write the partition to `path`, the format from its suffix: .svg .png .pdf (the
        picture), .dot, .json (what hv.load_partition reads), .html (a standalone report);
        format="model_explorer" (Google's Model Explorer). Takes render()'s arguments."""
        from hierviz.drawing.files import save
        from hierviz.drawing.views import render

        unknown_arguments("Partition.save", kwargs, [*parameter_names(save, skip=("p", "path")),
                                                     *parameter_names(render, skip=("p", "view"))])
        return save(self, path, **kwargs)

    # ------------------------------------------------------------------ torch_tensorrt.compile today
    def compile_today(self, *, compute: bool = True) -> Any:
        """What torch_tensorrt.compile runs with these settings, as a TodaysCompile
        (hierviz.partitioner.upstream.todays_compile): `.partition` and its `.stats` (its fast partition,
        or None with `.why` it is left out) and `.seconds` it took. The first call runs Torch-TensorRT's fast
        partitioner on this graph (about as long as partitioning it); the answer is kept in
        the process's cache of them (hierviz.partitioner.upstream.todays_compile), keyed by the graph
        and compile's settings. The HTML report shows it, with its cost, once computed, and never
        computes it itself. `compute=False` returns it only when known (else None)."""
        from hierviz.partitioner.upstream.todays_compile import compile_today_of

        return compile_today_of(self, compute=compute)

    # ------------------------------------------------------------------ built on this machine
    @checked_arguments
    def build(self, *, trt_settings: Any = None, tf32: bool = False, fix: bool = True, cache: bool = True,
              example_inputs: Any = None) -> Any:
        """Every TensorRT subgraph converted with the installed Torch-TensorRT's converters and
        its engine built with the installed TensorRT (TensorRT-RTX builds ahead of time on a CPU:
        no GPU needed), with the settings hv.measure converts with (`trt_settings`, `tf32`).
        First the lowered graph runs once in PyTorch on `example_inputs` (default: random inputs
        shaped like the graph's). Returns hv.Builds: `.df` one row per TensorRT subgraph (stage
        run/convert/build/built, layers, engine_bytes, node, error, runs_instead, fix), `.ok`.
        `fix`: for a failed conversion or build, search the ops that moved to PyTorch make every
        engine build (each shown to build). `cache`: builds are kept on disk (hierviz's cache
        folder) and read back in any process. The partition is left as it was: pass the Builds
        to report(builds=...), blockers(builds=...), render(builds=...) to show them there."""
        from hierviz.building.build_partition import build

        return build(self, trt_settings=trt_settings, tf32=tf32, fix=fix, cache=cache, example_inputs=example_inputs)

    # ------------------------------------------------------------------ deploying
    @checked_arguments
    def compile(self, device: Any = None, *, example_inputs: Any = None, **options: Any) -> Any:
        """The compiled split model (hierviz.latency.deploy.CompiledModel): TensorRT subgraphs
        through Torch-TensorRT, TorchInductor subgraphs through TorchInductor, the rest eager;
        the very module `hv.measure` times, to deploy. `example_inputs` (default: random inputs
        shaped like the graph's) are what each subgraph is compiled with; `options` are
        hv.measure's (on_error, trt_settings, inductor_options, compilers, tf32, cache_dir).
        `.save(folder)` writes it, `hierviz.latency.deploy.load(folder)` reads it back."""
        from hierviz.latency.deploy import compiled_model

        return compiled_model(self, device, example_inputs=example_inputs, **options)

    def _repr_html_(self) -> str:
        from hierviz.drawing.notebook import notebook_html

        return notebook_html(self)

    def __repr__(self) -> str:
        if not self.stats["nodes"]:
            return f"<hv.Partition: {NOTHING_TO_PARTITION}; {self.config.label()}>"
        assumed = f", {assumed_text(self.assumed)}" if self.assumed else ""  # a what-if TensorRT would not run
        return (f"<hv.Partition {nodes_text(len(self.records), self.stats)}, {outline(self.stats, self.config)}"
                f"{assumed}>")


def outline(stats: dict, config: Config) -> str:
    """'<n> subgraphs (<per backend>), coverage <c>%, <settings>[, engine=<e>]': the part of a
    partition's repr its stats and settings give (a Partition's, a MultiGraphPartition's)."""
    by = ", ".join(f"{b}={n}" for b, n in stats["subgraphs_by_backend"].items() if n)
    engine = "" if config.engine == "hierviz" else f", engine={config.engine}"
    return f"{stats['subgraphs']} subgraphs ({by}), coverage {stats['coverage']:.0%}, {config.label()}{engine}"


def from_engine_result(graph: GraphModule, config: Config, result: EngineResult, *, engine: str | None = None,
                       module: GraphModule | None = None, notes: tuple[str, ...] = ()) -> Partition:
    """The Partition of an engine's `result` on `graph` with `config` (`engine`: the engine that
    made it, when not config.engine; `module`: its split module when the engine built one;
    `notes`: what the engine did besides partitioning, e.g. compile's fallback)."""
    partition = Partition.__new__(Partition)
    partition._start(graph, config, result, engine, module, notes)
    return partition


def versions() -> dict[str, str | None]:
    """The versions a partition records (and a saved one keeps): torch, torch_tensorrt (None when
    absent), hierviz."""
    return {"torch": torch.__version__, "torch_tensorrt": tensorrt_version(),
            "hierviz": __version__}
