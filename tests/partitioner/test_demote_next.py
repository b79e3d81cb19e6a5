"""Issue 23: `Config(demote_to="next")`. An accelerated subgraph below min_block_size goes to
the next backend in priority that takes all its nodes, joins that backend's neighbours where
no cycle results, and is tested against min_block_size there; PyTorch only when no backend is
left. The default, "torch", is upstream's rule (tests/partitioner/test_properties.py)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import event, given, settings, HealthCheck
from torch.utils._pytree import tree_leaves

import hierviz as hv
from hierviz.partitioner.upstream.hierarchical import copy_graph_module

from .test_properties import GraphSpec, build, configs, example_inputs, graph_specs, layout, run

A = "torch.ops.aten."
LINEAR_ONLY = hv.support.ops([A + "linear.default", A + "mm.default", A + "addmm.default"])
DEMOTE = settings(max_examples=120, deadline=None, derandomize=True,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def accelerated_ops(p: hv.Partition) -> int:
    t = p.records
    return sum(1 for i in range(len(t.name)) if t.compute[i] and t.backend[i] not in ("torch", "graph"))


@pytest.fixture(scope="module")
def llama(zoo_cache):
    model, inputs = zoo_cache.load("llama")
    return zoo_cache.capture("llama"), inputs


def test_lone_linears_go_to_tensorrt_not_pytorch(llama) -> None:
    """The issue's case: inductor first taking only linear, min_block_size 5. Upstream's rule
    sends every lone linear to PyTorch although TensorRT takes it; "next" gives it to TensorRT."""
    gm, inputs = llama
    cfg = hv.Config(priority=("inductor", "tensorrt"), support={"inductor": LINEAR_ONLY}, min_block_size=5)
    torch_rule = hv.partition(gm, cfg)
    nxt = hv.partition(gm, cfg.replace(demote_to="next"))
    linears = [n for n in torch_rule.records.name if n.startswith("linear")]
    assert linears and {torch_rule.backend_of(n) for n in linears} == {"torch"}
    assert {nxt.backend_of(n) for n in linears} == {"tensorrt"}
    assert nxt.stats["subgraphs_by_backend"].get("torch", 0) == 0
    assert accelerated_ops(nxt) > accelerated_ops(torch_rule)
    assert len(nxt.subgraphs) < len(torch_rule.subgraphs)
    first = linears[0]
    assert nxt.reason_code_of(first) == "demoted_next"
    assert nxt.eligible_backend_of(first) == "inductor"
    size = torch_rule.reason_of(first).split("had ")[1].split(" node")[0]
    assert nxt.reason_of(first) == f"demoted from inductor to tensorrt: its inductor subgraph had {size} nodes < 5"
    assert nxt.records.short_reason(nxt.records.name.index(first)) == \
        "demoted from inductor (subgraph < min_block_size 5)"
    got, want = tree_leaves(nxt.module(*inputs)), tree_leaves(gm(*inputs))
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(got, want))
    # the report, the ops table and the diagram say so too
    ops = nxt.ops().set_index("op")
    assert ops.loc[A + "linear.default", "reason"] == "demoted from inductor (subgraph < min_block_size 5)"
    assert ops.loc[A + "linear.default", "backend"] == "tensorrt"
    assert "demoted to the next backend" in nxt.render("full").source


def test_one_node_block_reason_says_one_node() -> None:
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.relu(torch.relu(torch.relu(torch.special.i0e(torch.tanh(x)))))

    gm = hv.capture(M(), (torch.randn(4),))
    inductor = hv.support.ops([A + "tanh.default"])
    p = hv.partition(gm, priority=("inductor", "tensorrt"), support={"inductor": inductor}, min_block_size=5,
                     demote_to="next")
    # tanh alone: inductor (1 node < 5) -> tensorrt (still 1 node, no tensorrt neighbour across
    # i0e, which only PyTorch runs) -> PyTorch
    assert p.backend_of("tanh") == "torch"
    assert p.reason_of("tanh") == (
        "demoted from inductor to tensorrt: its inductor subgraph had 1 node < 5; then demoted to PyTorch: "
        "its tensorrt subgraph had 1 node(s) < min_block_size 5, and no later backend in priority takes all "
        "its nodes")
    assert hv.partition(gm, priority=("inductor", "tensorrt"), support={"inductor": inductor}, min_block_size=1,
                        demote_to="next").backend_of("tanh") == "inductor"


def test_recommend_re_partitions_with_the_same_rule(llama) -> None:
    gm, _ = llama
    cfg = hv.Config(priority=("inductor", "tensorrt"), support={"inductor": LINEAR_ONLY}, demote_to="next")
    rec = hv.partition(gm, cfg).recommend([1, 3, 8]).set_index("min_block_size")
    for size in (1, 3, 8):
        again = hv.partition(gm, cfg.replace(min_block_size=size))
        assert rec.loc[size, "subgraphs"] == len(again.subgraphs)


def test_config_field_text_and_cli(capsys) -> None:
    from hierviz.cli import commands as cli
    from hierviz.settings.config import parse_text

    assert hv.Config().demote_to == "torch"
    cfg = hv.Config(demote_to="Next")
    assert cfg.demote_to == "next" and cfg.to_dict()["demote_to"] == "next"
    assert hv.Config.from_dict(cfg.to_dict()) == cfg and "demote=next" in cfg.label()
    assert parse_text("demote_to", " torch ") == "torch"
    with pytest.raises(hv.ConfigError,
                       match=r"demote_to must be 'torch' \(upstream's rule.*or 'next'.*not str 'pytorch'"):
        hv.Config(demote_to="pytorch")
    args = cli.build_parser().parse_args(["report", "m", "--demote-to", "next"])
    assert cli.build_config(args).demote_to == "next"
    assert cli.main(["report", "tiny_conv", "--demote-to", "nxt"]) == 2
    assert "demote_to must be 'torch'" in capsys.readouterr().err


@DEMOTE
@given(spec=graph_specs(), cfg=configs())
def test_demote_to_next_invariants(spec: GraphSpec, cfg: hv.Config) -> None:
    cfg = cfg.replace(demote_to="next", require_full_compilation=False)
    gm = build(spec)
    p = hv.partition(gm, config=cfg)
    nodes = {n.name: n for n in gm.graph.nodes}
    callables = [n.name for n in gm.graph.nodes if n.op == "call_function"]
    moved = [n for n in callables if p.reason_code_of(n) == "demoted_next"]
    event(f"moved to a later backend: {'some' if moved else 'none'}")

    # every node once; accelerated nodes are taken by the backend they run in, which is their
    # eligible one or (moved) a later one in priority
    assert sorted(n for sg in p.subgraphs for n in sg.nodes) == sorted(callables)
    for sg in p.subgraphs:
        for name in sg.nodes:
            if sg.is_acc:
                assert cfg.support_for(sg.backend).check(nodes[name])[0], (name, sg.backend)
                eligible = p.eligible_backend_of(name)
                assert eligible == sg.backend or (
                    p.reason_code_of(name) == "demoted_next"
                    and cfg.priority.index(sg.backend) > cfg.priority.index(eligible)), name
    for name in moved:
        assert p.reason_of(name).startswith(f"demoted from {p.eligible_backend_of(name)} to ")
    # the size rule holds in the end
    for sg in p.subgraphs:
        if sg.is_acc:
            assert len(sg.nodes) >= cfg.min_block_size, sg
    # no cycles: every edge between subgraphs goes forward in the subgraph list
    where = {name: k for k, sg in enumerate(p.subgraphs) for name in sg.nodes}
    for name in callables:
        for user in nodes[name].users:
            if user.op == "call_function":
                assert where[name] <= where[user.name], (name, user.name)
    # the split module gives the graph's outputs
    inputs = example_inputs(spec)
    torch.testing.assert_close(run(p.module, inputs), run(gm, inputs), rtol=0, atol=0, equal_nan=True)
    # deterministic, also on a copy of the graph
    assert layout(hv.partition(gm, config=cfg)) == layout(p)
    assert layout(hv.partition(copy_graph_module(gm), config=cfg)) == layout(p)
    # with one backend there is nowhere to go: the same as upstream's rule
    if len(cfg.priority) == 1:
        assert layout(p) == layout(hv.partition(gm, config=cfg.replace(demote_to="torch")))
