"""hierviz's engine: its own implementation of Torch-TensorRT's hierarchical adjacency
partitioner, the passes of `hierviz.partitioner.engine.passes` run in order over the graph index.

Five passes over a read-only graph index (graph_index.py), each linear in the graph (up to a
log factor for the ready queues), building the plan types (plan.py):

1. assignment   each callable node's eligible backend (first in priority whose support takes
                it, unless it is in torch_executed_ops; a getitem or view stays with its
                producer's backend when that backend's support takes it too)
2. fusion       groups of accelerated nodes that pass non-tensor data (as torch.fx's
                FxNetAccFusionsFinder), kept together unless skip_fusion
3. traversal    a topological walk in phases: each phase takes every node of one backend that
                becomes ready (a maximal same-backend run); when the backend runs dry, the next
                one is the backend of the ready node with the most backend changes still ahead
                of it (its "switch height"), ties broken by graph order
4. merging      merges same-backend subgraphs whenever that creates no cycle between
                subgraphs (TVM BYOC's "merge compiler regions"), checked by a bounded search
                on the subgraph DAG. Passes 3 and 4 run as a search (search.py): where the
                plan is above the lower bound and some phase had a choice of backend, up to
                32 restarts draw the phase choices at random (fixed seeds), within a budget
                that leaves large graphs one traversal; the fewest subgraphs win
5. demotion     upstream's remove_small_acc_subgraphs, then merging again, so that demoted
                blocks join neighbouring PyTorch subgraphs. With `demote_to="next"`, a small
                accelerated subgraph first moves to the next backend in priority that takes
                all its nodes, joins that backend's neighbours where no cycle results, and is
                tested against min_block_size there; PyTorch only when no backend is left

The input graph is never modified; every pass works on integer node indices.
"""

from __future__ import annotations

from torch.fx import GraphModule

from hierviz.settings.config import Config
from hierviz.foundation.gcpause import gc_paused
from hierviz.partitioner.engine.graph_index import index_graph
from hierviz.partitioner.engine.passes.assignment import assign, check_full_compilation
from hierviz.partitioner.engine.support_verdicts import SupportVerdicts
from hierviz.partitioner.engine.passes.demotion import small_blocks
from hierviz.partitioner.engine.passes.fusion import fusions
from hierviz.partitioner.engine.passes.search import fewest_subgraphs
from hierviz.partitioner.engine.passes.traversal import dependencies
from hierviz.partitioner.engine.plan import EngineResult, tags_for


def run(gm: GraphModule, config: Config) -> EngineResult:
    """Partition `gm` with `config`: the five passes in order."""
    with gc_paused():
        index = index_graph(gm)
        assignment = assign(index, config)
        if config.require_full_compilation:
            check_full_compilation(index, assignment)
        acc = [b is not None for b in assignment.backend]
        groups = {} if config.skip_fusion else fusions(index, acc)
        deps = dependencies(index, groups)
        raw = fewest_subgraphs(index, assignment.backend, groups, deps)
        nxt = SupportVerdicts(index, config) if config.demote_to == "next" and len(config.priority) > 1 else None
        subgraphs, demoted, moved = small_blocks(index, deps, raw, config.min_block_size,
                                                 config.require_full_compilation, nxt)
    return EngineResult(index, assignment, raw, subgraphs, tags_for(subgraphs), demoted, deps,
                        moved=moved, next_backend=nxt)
