"""Property tests: random aten DAGs, random configurations, the partitioner's invariants.

Graphs are built directly with torch.fx from a random DAG of elementwise aten ops on small
tensors (every node carries meta["val"] and meta["tensor_meta"]), with sometimes a
multi-output op unpacked by getitem, a `view`, or a node whose tensor_meta was dropped: nodes
without tensor_meta are how torch.fx recognises fusion groups. Configurations draw a priority
(subset and order of tensorrt / inductor / a custom backend), support sets built with
hv.support.ops() and hv.support.where(), torch_executed_ops, min_block_size 1..6,
skip_fusion and require_full_compilation.

The small-block exception, exactly as upstream's remove_small_acc_subgraphs (transcribed
below as `upstream_remove_small_acc_subgraphs`) has it: an accelerated subgraph with fewer than
min_block_size nodes survives as accelerated only when require_full_compilation is set (the
upstream's other escape, allowed_single_node_partition_ops, is always None in
hierarchical_adjacency_partition). A small subgraph that follows a subgraph of its own
backend is merged into that one, which was already at least min_block_size, so every
accelerated subgraph of the final partition has >= min_block_size nodes (getitem and view
nodes count, as upstream counts them) unless require_full_compilation is set. After that pass,
hierviz merges same-backend subgraphs that can be merged without a cycle, so the final
partition is upstream's pass's result with some same-backend subgraphs joined.

Quality: on graphs of up to 12 callable nodes, hierviz never makes more subgraphs than the
exhaustive minimum (benchmarks/partition_quality.py's search over down-sets).
"""

from __future__ import annotations

import operator
import sys
import zlib
from pathlib import Path
from dataclasses import dataclass, field

import pytest
import torch
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st
from torch.fx.passes.shape_prop import _extract_tensor_metadata
from torch.fx.passes.tools_common import FxNetAccFusionsFinder

import hierviz as hv
from hierviz.foundation.opnames import qualname
from hierviz.partitioner.engine.graph_index import index_graph
from hierviz.partitioner.engine.passes.fusion import fusions
from hierviz.partitioner.upstream.hierarchical import copy_graph_module

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import partition_quality  # the exhaustive reference lives with the benchmark

aten = torch.ops.aten
SHAPE = (2, 3)
UNARY = [aten.relu.default, aten.neg.default, aten.sigmoid.default, aten.tanh.default,
         aten.abs.default, aten.frac.default, aten.special_i0e.default]  # last two: no TRT converter
BINARY = [aten.add.Tensor, aten.mul.Tensor, aten.sub.Tensor, aten.maximum.default,
          aten.hypot.default, aten.copysign.Tensor]  # last two: no TRT converter
MULTI = [aten.sort.default, aten.frexp.Tensor]  # (values, indices) / (mantissa, exponent)
VIEW = aten.view.default
ALL_OPS = [qualname(op) for op in UNARY + BINARY + MULTI + [VIEW]] + ["_operator.getitem"]

PROFILE = settings(max_examples=300, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------------------ graphs
@dataclass
class GraphSpec:
    inputs: int
    steps: list[tuple]  # ("unary"|"binary"|"multi"|"view", op index, arg refs, drop tensor_meta, extra)


@st.composite
def graph_specs(draw) -> GraphSpec:
    n_inputs = draw(st.integers(1, 3))
    n_steps = draw(st.integers(3, 30))
    steps = []
    available = n_inputs  # float tensors of SHAPE made so far (inputs first)
    for _ in range(n_steps):
        kind = draw(st.sampled_from(["unary"] * 5 + ["binary"] * 5 + ["multi", "view"]))
        # mostly the latest value (chains), sometimes anything earlier (branches, skips)
        def ref():
            return draw(st.one_of(st.just(available - 1), st.integers(0, available - 1)))
        drop_tm = draw(st.integers(0, 9)) == 0
        if kind == "unary":
            steps.append((kind, draw(st.integers(0, len(UNARY) - 1)), (ref(),), drop_tm, None))
        elif kind == "binary":
            steps.append((kind, draw(st.integers(0, len(BINARY) - 1)), (ref(), ref()), drop_tm, None))
        elif kind == "multi":
            # the second output (indices / exponent) is not float: it only feeds the output
            steps.append((kind, draw(st.integers(0, len(MULTI) - 1)), (ref(),), False, draw(st.booleans())))
        else:
            steps.append((kind, 0, (ref(),), drop_tm, None))
        available += 1
    return GraphSpec(n_inputs, steps)


def example_inputs(spec: GraphSpec) -> tuple[torch.Tensor, ...]:
    gen = torch.Generator().manual_seed(1234)
    return tuple(torch.randn(SHAPE, generator=gen) for _ in range(spec.inputs))


def build(spec: GraphSpec) -> torch.fx.GraphModule:
    """An aten GraphModule for `spec`, with meta computed by running it on example inputs."""
    graph = torch.fx.Graph()
    values: list[torch.fx.Node] = []
    concrete: dict[torch.fx.Node, object] = {}

    def mark(node: torch.fx.Node, val: object, tensor_meta: bool = True) -> torch.fx.Node:
        concrete[node] = val
        node.meta["val"] = val
        if tensor_meta and isinstance(val, torch.Tensor):
            node.meta["tensor_meta"] = _extract_tensor_metadata(val)
        return node

    for k, x in enumerate(example_inputs(spec)):
        values.append(mark(graph.placeholder(f"x{k}"), x))
    leaves: list[torch.fx.Node] = []
    for kind, op_i, refs, drop_tm, extra in spec.steps:
        args = [values[r] for r in refs]
        if kind == "unary":
            op = UNARY[op_i]
            node = graph.call_function(op, (args[0],))
            values.append(mark(node, op(concrete[args[0]]), not drop_tm))
        elif kind == "binary":
            op = BINARY[op_i]
            node = graph.call_function(op, (args[0], args[1]))
            values.append(mark(node, op(concrete[args[0]], concrete[args[1]]), not drop_tm))
        elif kind == "view":
            node = graph.call_function(VIEW, (args[0], list(SHAPE)))
            values.append(mark(node, VIEW(concrete[args[0]], list(SHAPE)), not drop_tm))
        else:
            op = MULTI[op_i]
            multi = graph.call_function(op, (args[0],))
            out = op(concrete[args[0]])
            mark(multi, tuple(out), tensor_meta=False)  # multi-output nodes carry no tensor_meta
            first = graph.call_function(operator.getitem, (multi, 0))
            values.append(mark(first, out[0]))
            if extra:
                second = graph.call_function(operator.getitem, (multi, 1))
                leaves.append(mark(second, out[1]))
    outputs = [n for n in values[spec.inputs:] if not n.users] + leaves
    if not outputs:
        outputs = [values[-1]]
    graph.output(tuple(outputs))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


# ------------------------------------------------------------------------------ configs
def crc(name: str) -> int:
    return zlib.crc32(name.encode())


@st.composite
def configs(draw) -> hv.Config:
    backends = draw(st.lists(st.sampled_from(["tensorrt", "inductor", "custom"]), min_size=1,
                             max_size=3, unique=True))
    support: dict[str, hv.Support] = {}
    if "tensorrt" in backends and draw(st.sampled_from([True, True, True, False])):
        # mostly op names only (what upstream's partitioner compares against); else the
        # validated default
        support["tensorrt"] = hv.support.tensorrt(validate=False)
    if "inductor" in backends:
        if draw(st.booleans()):
            support["inductor"] = hv.support.ops(draw(st.sets(st.sampled_from(ALL_OPS))))
        else:
            support["inductor"] = hv.support.inductor()
    if "custom" in backends:
        if draw(st.booleans()):
            ops = frozenset(draw(st.sets(st.sampled_from(ALL_OPS))))
            modulus = draw(st.integers(1, 3))
            support["custom"] = hv.support.where(
                lambda node, ops=ops, modulus=modulus: qualname(node.target) in ops and crc(node.name) % modulus == 0,
                name=f"ops&crc%{modulus}")
        else:
            support["custom"] = hv.support.ops(draw(st.sets(st.sampled_from(ALL_OPS))))
    return hv.Config(
        priority=tuple(backends),
        support=support or None,
        min_block_size=draw(st.integers(1, 6)),
        torch_executed_ops=frozenset(draw(st.sets(st.sampled_from(ALL_OPS), max_size=3))),
        skip_fusion=draw(st.booleans()),
        require_full_compilation=draw(st.integers(0, 5)) == 3,
    )


# ------------------------------------------------------------------------------ references
def is_non_compute(node: torch.fx.Node) -> bool:
    name = qualname(node.target)
    return name == "_operator.getitem" or name.startswith("torch.ops.aten.view.")


def expected_eligibility(gm: torch.fx.GraphModule, cfg: hv.Config) -> dict[str, str]:
    """The first backend in priority whose support takes the node, unless torch_executed_ops
    names it; 'torch' when none. A getitem/view stays with its producer's backend when that
    is PyTorch or that backend's support takes it too; otherwise it is decided like any node."""
    result: dict[str, str] = {}
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        if qualname(node.target) in cfg.torch_executed_ops:
            result[node.name] = "torch"
            continue
        producer = next((a for a in node.all_input_nodes if a.op == "call_function"), None)
        if is_non_compute(node) and producer is not None:
            b = result[producer.name]
            if b == "torch" or cfg.support_for(b).check(node)[0]:
                result[node.name] = b
                continue
        result[node.name] = next((b for b in cfg.priority if cfg.support_for(b).check(node)[0]), "torch")
    return result


@dataclass
class UpstreamSubgraph:
    is_acc: bool
    backend: str
    nodes: list[str] = field(default_factory=list)


def upstream_remove_small_acc_subgraphs(subgraphs: list[UpstreamSubgraph], min_acc_module_size: int,
                                    require_full_compilation: bool) -> list[UpstreamSubgraph]:
    """Upstream's HierarchicalAdjacencyPartitioner.remove_small_acc_subgraphs, line for line
    (allowed_single_node_partition_ops is None there)."""
    result: list[UpstreamSubgraph] = []
    for subgraph in subgraphs:
        if subgraph.is_acc:
            if len(subgraph.nodes) >= min_acc_module_size or require_full_compilation:
                result.append(subgraph)
            else:
                if result and (not result[-1].is_acc or result[-1].backend == subgraph.backend):
                    result[-1].nodes.extend(subgraph.nodes)
                else:
                    subgraph.is_acc = False
                    subgraph.backend = "None"
                    result.append(subgraph)
        else:
            if result and not result[-1].is_acc:
                result[-1].nodes.extend(subgraph.nodes)
            else:
                if result:
                    if result[-1].backend == subgraph.backend:
                        result[-1].nodes.extend(subgraph.nodes)
                    else:
                        result.append(subgraph)
                else:
                    result.append(subgraph)
    return result


def snapshot(gm: torch.fx.GraphModule) -> tuple:
    return (gm.code, str(gm.graph),
            [(n.name, n.op, tuple(sorted(n.meta)), id(n.meta.get("val"))) for n in gm.graph.nodes])


def layout(p: hv.Partition) -> list[tuple]:
    return [(sg.tag, sg.backend, sg.is_acc, sg.nodes) for sg in p.subgraphs]


def run(module: torch.nn.Module, inputs: tuple) -> tuple:
    with torch.no_grad():
        out = module(*inputs)
    return out if isinstance(out, tuple) else (out,)


# ------------------------------------------------------------------------------ properties
@pytest.mark.slow  # over 5 s of CPU: left out of make check, run by make test
@PROFILE
@given(spec=graph_specs(), cfg=configs())
def test_partition_invariants(spec: GraphSpec, cfg: hv.Config) -> None:
    gm = build(spec)
    before = snapshot(gm)
    eligible = expected_eligibility(gm, cfg)
    callables = [n.name for n in gm.graph.nodes if n.op == "call_function"]

    if cfg.require_full_compilation and any(b == "torch" for b in eligible.values()):
        event("require_full_compilation refused")
        with pytest.raises(hv.ConfigError, match="require_full_compilation"):
            hv.partition(gm, config=cfg)
        assert snapshot(gm) == before
        return

    p = hv.partition(gm, config=cfg)
    nodes = {n.name: n for n in gm.graph.nodes}
    event(f"subgraphs: {min(len(p.subgraphs), 5)}{'+' if len(p.subgraphs) >= 5 else ''}")
    event(f"backends used: {len({sg.backend for sg in p.subgraphs})}")
    if any(p.reason_code_of(n) == "demoted" for n in callables):
        event("some nodes demoted")
    if any("tensor_meta" not in nodes[n].meta for n in callables if eligible[n] != "torch"):
        event("accelerated nodes without tensor_meta (fusion candidates)")

    # every callable node in exactly one subgraph
    members = [name for sg in p.subgraphs for name in sg.nodes]
    assert sorted(members) == sorted(callables)
    assert len(members) == len(set(members))

    # eligibility: first supporting backend in priority, torch_executed_ops excluded
    for name in callables:
        assert p.eligible_backend_of(name) == eligible[name], name

    # accelerated nodes are supported by their backend and not in torch_executed_ops;
    # nodes in PyTorch subgraphs are ineligible or were demoted
    for sg in p.subgraphs:
        for name in sg.nodes:
            node = nodes[name]
            if sg.is_acc:
                assert qualname(node.target) not in cfg.torch_executed_ops
                assert eligible[name] == sg.backend
                assert cfg.support_for(sg.backend).check(node)[0], (name, sg.backend)
            else:
                assert sg.backend == "torch"
                assert eligible[name] == "torch" or p.reason_code_of(name) == "demoted", name

    # no cycles: every edge between subgraphs goes forward in the subgraph list
    where = {name: k for k, sg in enumerate(p.subgraphs) for name in sg.nodes}
    for name in callables:
        for user in nodes[name].users:
            if user.op == "call_function":
                assert where[name] <= where[user.name], (name, user.name)

    # small accelerated subgraphs: upstream's rule (see the module docstring), then merging
    for sg in p.subgraphs:
        if sg.is_acc and not cfg.require_full_compilation:
            assert len(sg.nodes) >= cfg.min_block_size, sg
    unmerged = hv.partition(gm, config=cfg.replace(min_block_size=1, require_full_compilation=False))
    raw = [UpstreamSubgraph(sg.is_acc, sg.backend if sg.is_acc else "None", list(sg.nodes))
           for sg in unmerged.subgraphs]
    expected = upstream_remove_small_acc_subgraphs(raw, cfg.min_block_size, cfg.require_full_compilation)
    # the same nodes run in PyTorch; each final subgraph joins whole same-backend upstream subgraphs
    assert sorted(n for s in expected if not s.is_acc for n in s.nodes) == \
        sorted(n for sg in p.subgraphs if not sg.is_acc for n in sg.nodes)
    upstream_of = {n: k for k, s in enumerate(expected) for n in s.nodes}
    for sg in p.subgraphs:
        parts = {upstream_of[n] for n in sg.nodes}
        assert sorted(sg.nodes) == sorted(n for k in parts for n in expected[k].nodes), sg
        assert {expected[k].backend if expected[k].is_acc else "torch" for k in parts} == {sg.backend}, sg
    assert len(p.subgraphs) <= len(expected)
    assert [sg.tag for sg in p.subgraphs] == [
        f"_run_on_acc_{sg.backend}_{i}" if sg.is_acc else f"_run_on_gpu_{i}" for i, sg in enumerate(p.subgraphs)]

    # the split module: one submodule per subgraph, same outputs as the graph
    assert [name for name, _ in p.module.named_children()] == [sg.tag for sg in p.subgraphs]
    inputs = example_inputs(spec)
    torch.testing.assert_close(run(p.module, inputs), run(gm, inputs), rtol=0, atol=0, equal_nan=True)

    # the input graph is unchanged, and nothing was attached to its nodes
    assert snapshot(gm) == before
    assert not any(hasattr(n, "tag") or hasattr(n, "backend") for n in gm.graph.nodes)

    # determinism: again, and on a copy of the graph (new Node objects, new ids and hashes)
    assert layout(hv.partition(gm, config=cfg)) == layout(p)
    assert layout(hv.partition(copy_graph_module(gm), config=cfg)) == layout(p)


class GraphOrderSet(set):
    """A set of nodes that iterates in graph order."""

    def __iter__(self):
        nodes = set(set.__iter__(self))
        if not nodes:
            return iter(())
        graph = next(iter(nodes)).graph
        return iter([n for n in graph.nodes if n in nodes])


@PROFILE
@given(spec=graph_specs(), cfg=configs())
def test_fusion_groups_match_torch_fx(spec: GraphSpec, cfg: hv.Config) -> None:
    """hierviz's fusion groups are those torch.fx's FxNetAccFusionsFinder finds for the same
    accelerated nodes when it visits them in graph order. (Upstream hands it a Python set, so
    its seeds come in hash order and, when a failed group overlaps another, its groups change
    from run to run; hierviz always visits in graph order.)"""
    gm = build(spec)
    p = hv.partition(gm, config=cfg.replace(require_full_compilation=False))
    acc_nodes = GraphOrderSet(n for n in gm.graph.nodes
                              if n.op == "call_function" and p.eligible_backend_of(n.name) != "torch")
    theirs = FxNetAccFusionsFinder(gm, acc_nodes)()
    index = index_graph(gm)
    ours = fusions(index, [n in acc_nodes for n in index.nodes])
    assert {index.names[i]: sorted(index.names[j] for j in g) for i, g in ours.items()} == \
        {n.name: sorted(m.name for m in g) for n, g in theirs.items()}


def op_set_only(cfg: hv.Config) -> bool:
    return all(not cfg.support_for(b).per_node for b in cfg.priority)


@pytest.mark.slow  # over 5 s of CPU: left out of make check, run by make test
@PROFILE
@given(spec=graph_specs(), cfg=configs())
def test_eligibility_matches_upstream(spec: GraphSpec, cfg: hv.Config) -> None:
    """On op-set configs, every callable node's backend is the one upstream's partitioner
    gives it, except where hierviz keeps a getitem/view with its producer (upstream checks a
    view like any op and gives a getitem the backend of the node before it in graph order)
    and where a getitem is in torch_executed_ops (upstream ignores that for getitem)."""
    assume(op_set_only(cfg) and not cfg.require_full_compilation)
    gm = build(spec)
    ours = hv.partition(gm, config=cfg)
    theirs = hv.partition(gm, config=cfg, engine="torch_tensorrt")
    nodes = {n.name: n for n in gm.graph.nodes}
    kept = 0
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        mine = ours.eligible_backend_of(node.name)
        if mine != theirs.eligible_backend_of(node.name):
            assert is_non_compute(node), node.name
            if qualname(node.target) in cfg.torch_executed_ops:  # upstream ignores it for getitem
                assert qualname(node.target) == "_operator.getitem" and mine == "torch", node.name
                continue
            producer = next(a for a in node.all_input_nodes if a.op == "call_function")
            pb = ours.eligible_backend_of(producer.name)
            if mine == pb and ours.reason_code_of(node.name) in ("follows_producer", "demoted"):
                kept += 1
                continue
            # decided on its own: a getitem whose producer's backend does not take getitem
            # (upstream gives it the previous node's backend regardless)
            assert qualname(node.target) == "_operator.getitem" and pb != "torch", node.name
            assert not cfg.support_for(pb).check(node)[0], node.name
        if is_non_compute(node) and theirs.reason_code_of(node.name) != "torch_executed_ops":
            code = theirs.reason_code_of(node.name)
            if qualname(node.target) == "_operator.getitem":
                assert code in ("follows_producer", "demoted"), node.name
            else:  # upstream checks views like any op
                assert code in ("supported", "unsupported", "demoted"), node.name
    if kept:
        event("a getitem/view kept with its producer, unlike upstream")
    assert nodes  # the graph has nodes


QUALITY = settings(max_examples=60, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                          HealthCheck.filter_too_much])


@QUALITY
@given(spec=graph_specs(), cfg=configs())
def test_never_more_subgraphs_than_the_exhaustive_minimum(spec: GraphSpec, cfg: hv.Config) -> None:
    """On graphs of up to 12 callable nodes, with min_block_size 1 and no fusion groups (so
    the limit is the number of convex single-backend subgraphs), hierviz's count equals the
    exhaustive minimum, and the split module computes what the graph does."""
    gm = build(spec)
    callables = [n for n in gm.graph.nodes if n.op == "call_function"]
    assume(len(callables) <= 12)
    cfg = cfg.replace(min_block_size=1, skip_fusion=True, require_full_compilation=False)
    p = hv.partition(gm, config=cfg)
    best = partition_quality.exhaustive_minimum(partition_quality.labelled(p))
    event(f"exhaustive minimum {best}")
    assert len(p.subgraphs) == best
    inputs = example_inputs(spec)
    torch.testing.assert_close(run(p.module, inputs), run(gm, inputs), rtol=0, atol=0, equal_nan=True)
