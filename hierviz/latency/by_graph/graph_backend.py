"""The torch.compile backend a multi-graph partition runs through: for each graph dynamo hands
it, that graph's compiled split module, as Torch-TensorRT's `torch_tensorrt` backend hands back
its compiled module.

`hv.measure(multi_graph_partition, ...)` and `MultiGraphPartition.compile()` run a private copy
of the model under `torch.compile(backend=GraphBackend(...), dynamic=False)`. Dynamo compiles the
same graphs in the same order for the same model and inputs, so the graph it hands over is
matched with the capture's (hierviz.capturing.by_graph.dynamo_capture.describes checks inputs, outputs and the
user's line) and runs that graph's Partition compiled by compiled_split.compile_split:
TensorRT, TorchInductor or PyTorch per subgraph, through the compile cache. A graph the capture
did not see (other input shapes, a recompile) is lowered and partitioned anew with the
partition's settings, as Torch-TensorRT's backend treats every graph.

A graph is compiled on its first call, with the tensors it really receives, outside dynamo's
tracing. A failure is kept in `errors` and that graph runs eagerly, so the model's run ends;
the caller raises it after the run.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, cast

import torch
from torch.fx import GraphModule

from hierviz.capturing.by_graph.dynamo_capture import describes, lowered
from hierviz.capturing.by_graph.dynamo_graph import graph_args
from hierviz.errors import HiervizError, MeasureError
from hierviz.latency.compiling.compiled_split import CompiledSplit, compile_split
from hierviz.latency.compiling.subgraph_compiling import short
from hierviz.partitioner import Partition, partition

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.by_graph.multi_graph import MultiGraphPartition

logger = logging.getLogger(__name__)


@dataclass
class GraphRun:
    """One graph the backend handed back. `index`: the capture's graph it is (None: a graph the
    capture did not see, partitioned anew); `partition`: the hv.Partition it runs; `split`:
    its CompiledSplit once its first call compiled it; `calls`: how often it ran; `first_args`:
    its aten graph's inputs on its first call."""

    index: int | None
    partition: Partition
    split: CompiledSplit | None = None
    calls: int = 0
    first_args: tuple = ()

    @property
    def name(self) -> str:
        """'g2' for the capture's graph 2; 'new' for a graph it did not see."""
        return f"g{self.index}" if self.index is not None else "new"


@dataclass
class GraphBackend:
    """A torch.compile backend (`backend(gm, example_inputs) -> callable`) running each dynamo
    graph as its Partition's compiled split module (see the module docstring). `options` are
    compile_split's keyword arguments (on_error, cache, trt_settings, ...)."""

    multi: MultiGraphPartition
    device: torch.device
    options: dict[str, Any] = field(default_factory=dict)
    who: str = "hv.measure"
    runs: list[GraphRun] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)
    _next: int = 0

    def __call__(self, gm: GraphModule, sample_inputs: list) -> Callable[..., Any]:
        try:
            run = self._match(gm, sample_inputs)
        except Exception as exc:  # a torch.compile backend: raised by the caller once the run has ended
            logger.debug("graph %d could not be matched and partitioned", len(self.runs), exc_info=True)
            self.errors.append(exc)
            return gm
        self.runs.append(run)
        placeholders = sum(1 for n in run.partition.graph.graph.nodes if n.op == "placeholder")

        def call(*args: Any) -> Any:
            values = graph_args(args, placeholders)
            if run.split is None:
                if self.errors:  # one failure is enough: the rest of the run is eager
                    return gm(*args)
                try:
                    run.split = compile_split(run.partition, values, self.device, who=self.who, **self.options)
                except Exception as exc:  # raised by the caller once the run has ended
                    logger.debug("a graph's compile failed; the rest of the run is eager", exc_info=True)
                    self.errors.append(_in_graph(exc, run))
                    return gm(*args)
                run.first_args = values
            run.calls += 1
            return run.split.module(*values)

        return call

    def _match(self, gm: GraphModule, sample_inputs: list) -> GraphRun:
        """The capture's graph dynamo's `gm` is (the next one expected first, then any), else a
        new partition of it with the same settings."""
        graphs = self.multi.capture.graphs
        order = [self._next, *(k for k in range(len(graphs)) if k != self._next)]
        for k in order:
            if k < len(graphs) and describes(graphs[k], gm):
                self._next = k + 1
                return GraphRun(k, self.multi.graphs[k])
        aten = lowered(gm, sample_inputs)
        return GraphRun(None, cast(Partition, partition(aten, config=self.multi.config)))  # a graph: one Partition

    def raise_first(self) -> None:
        """The first failure of the run, as a MeasureError (a HiervizError as it was)."""
        if not self.errors:
            return
        exc = self.errors[0]
        if isinstance(exc, HiervizError):
            raise exc
        raise MeasureError(f"{self.who}: compiling a graph dynamo handed over failed: {short(exc)}") from exc


def _in_graph(exc: BaseException, run: GraphRun) -> BaseException:
    """`exc` with the graph it happened in named first (its message, where it is hierviz's)."""
    if isinstance(exc, HiervizError) and exc.args and isinstance(exc.args[0], str):
        exc.args = (f"graph {run.name}: {exc.args[0]}", *exc.args[1:])
    return exc


__all__ = ["GraphBackend", "GraphRun"]
