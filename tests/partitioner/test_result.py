"""The Partition result: stats, ops(), summary(), reason_of, report(), recommend(), diff(),
Config and its errors, overrides, and leaving the input graph alone."""

from __future__ import annotations

import gc
import json
import math
import operator
import re
import weakref

import pytest
import torch
from torch.fx.passes.shape_prop import ShapeProp

import hierviz as hv
from hierviz import trt

aten = torch.ops.aten
A = "torch.ops.aten."


# ------------------------------------------------------------------------------ small graphs
def chain_graph() -> torch.fx.GraphModule:
    """x, y -> add, add, relu | frac (no TensorRT converter) | add, relu, mul, relu."""
    g = torch.fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(aten.add.Tensor, (x, y))
    b = g.call_function(aten.add.Tensor, (a, y))
    c = g.call_function(aten.relu.default, (b,))
    d = g.call_function(aten.frac.default, (c,))
    e = g.call_function(aten.add.Tensor, (d, x))
    f = g.call_function(aten.relu.default, (e,))
    h = g.call_function(aten.mul.Tensor, (f, f))
    k = g.call_function(aten.relu.default, (h,))
    g.output(k)
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    ShapeProp(gm).propagate(torch.randn(2, 3), torch.randn(2, 3))
    return gm


def validator_graph() -> torch.fx.GraphModule:
    """Ops whose TensorRT converter exists but whose capability validator rejects these nodes:
    bitwise_and on integers (bool only) and max.dim with both outputs used (one user only)."""
    g = torch.fx.Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(aten.bitwise_and.Tensor, (x, y))
    m = g.call_function(aten.max.dim, (x, 1))
    v = g.call_function(operator.getitem, (m, 0))
    i = g.call_function(operator.getitem, (m, 1))
    g.output((a, v, i))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    ShapeProp(gm).propagate(torch.randint(0, 5, (2, 3)), torch.randint(0, 5, (2, 3)))
    return gm


def snapshot(gm: torch.fx.GraphModule) -> tuple:
    return (gm.code, str(gm.graph), [(n.name, tuple(sorted(n.meta))) for n in gm.graph.nodes],
            [hasattr(n, "tag") or hasattr(n, "backend") for n in gm.graph.nodes])


# ------------------------------------------------------------------------------ stats, ops, summary
def test_stats_on_a_known_graph():
    p = hv.partition(chain_graph(), min_block_size=3)
    assert p.stats == {
        "nodes": 8, "compute_ops": 8, "supported_ops": 7, "coverage": 0.875,
        "accelerated_ops": 7, "accelerated_coverage": 0.875,
        "subgraphs": 3, "acc_subgraphs": 2,
        "subgraphs_by_backend": {"tensorrt": 2, "inductor": 0, "torch": 1},
        "boundary_tensors": 2,  # relu -> frac and frac -> add cross subgraphs
    }


def test_stats_leave_non_compute_nodes_out_of_op_counts(zoo_cache):
    p = hv.partition(zoo_cache.capture("tiny_conv"))  # conv, bn, getitem, relu, twice
    assert p.stats["nodes"] == 8
    assert p.stats["compute_ops"] == 6
    assert p.stats["supported_ops"] == 6 and p.stats["coverage"] == 1.0
    assert p.stats["subgraphs_by_backend"] == {"tensorrt": 1, "inductor": 0, "torch": 0}
    assert p.stats["boundary_tensors"] == 0


def test_ops_counts_every_node():
    """Real counts per op (upstream's overview stores 1 for every op), split by backend."""
    p = hv.partition(chain_graph(), min_block_size=3)
    ops = p.ops().set_index("op")
    assert ops.loc[A + "add.Tensor", "count"] == 3
    assert ops.loc[A + "relu.default", "count"] == 3
    assert ops.loc[A + "mul.Tensor", "count"] == 1
    assert ops.loc[A + "frac.default", "count"] == 1
    assert ops.loc[A + "add.Tensor", "tensorrt"] == 3
    assert ops.loc[A + "frac.default", "torch"] == 1
    assert ops.loc[A + "frac.default", "reason"] == "no support in any backend"
    assert ops.loc[A + "add.Tensor", "reason"] == "supported by tensorrt"
    assert list(p.ops()["op"])[:2] == [A + "add.Tensor", A + "relu.default"]  # most frequent first

    # at min_block_size 4 the first block (add, add, relu) is demoted: the same op in two places
    p4 = hv.partition(chain_graph(), min_block_size=4)
    ops4 = p4.ops().set_index("op")
    assert (ops4.loc[A + "add.Tensor", "tensorrt"], ops4.loc[A + "add.Tensor", "torch"]) == (1, 2)
    assert (ops4.loc[A + "relu.default", "tensorrt"], ops4.loc[A + "relu.default", "torch"]) == (2, 1)
    assert ops4.loc[A + "add.Tensor", "backend"] == "tensorrt, torch"
    assert "demoted" in ops4.loc[A + "add.Tensor", "reason"]


def test_ops_with_torch_executed_ops():
    p = hv.partition(chain_graph(), min_block_size=1, torch_executed_ops={aten.relu.default})
    ops = p.ops().set_index("op")
    assert ops.loc[A + "relu.default", "torch"] == 3
    assert ops.loc[A + "relu.default", "reason"] == "in torch_executed_ops"


def test_summary_on_a_known_graph():
    p = hv.partition(chain_graph(), min_block_size=3)
    s = p.summary()
    assert list(s["tag"]) == ["_run_on_acc_tensorrt_0", "_run_on_gpu_1", "_run_on_acc_tensorrt_2"]
    assert list(s["backend"]) == ["tensorrt", "torch", "tensorrt"]
    assert list(s["ops"]) == [3, 1, 4]
    assert list(s["inputs"]) == [2, 1, 2]
    assert list(s["outputs"]) == [1, 1, 1]
    assert s.loc[0, "input_shapes"] == "x: float32[2, 3]; y: float32[2, 3]"
    assert s.loc[0, "output_shapes"] == "relu_default: float32[2, 3]"
    assert s.loc[1, "top_ops"] == "aten.frac.default x1"
    assert s.loc[0, "top_ops"].startswith("aten.add.Tensor x2")


def test_subgraph_boundaries_carry_shapes_and_dtypes(zoo_cache):
    p = hv.partition(zoo_cache.capture("tiny_conv"), config=hv.Config(
        priority=("inductor", "tensorrt"), support={"inductor": hv.support.ops([A + "convolution.default"])},
        min_block_size=1))
    first = p.subgraphs[0]
    assert first.backend == "inductor" and first.nodes == ("convolution",)
    assert [(t.name, t.shape, t.dtype) for t in first.inputs] == [("x", (1, 3, 224, 224), "torch.float32")]
    assert [(t.name, t.shape) for t in first.outputs] == [("convolution", (1, 64, 224, 224))]


# ------------------------------------------------------------------------------ reasons
def test_reason_of_every_reason_code(zoo_cache):
    gm = chain_graph()
    p = hv.partition(gm, min_block_size=4, torch_executed_ops={aten.mul.Tensor})
    assert p.reason_code_of("x") == "not_callable"
    assert p.reason_of("x") == "graph input: not partitioned"
    assert p.reason_of("output") == "graph output: not partitioned"

    assert p.reason_code_of("add_tensor") == "demoted"
    assert p.reason_of("add_tensor") == "demoted to PyTorch: its tensorrt subgraph had 3 node(s) < min_block_size 4"

    upstream = hv.partition(gm, min_block_size=4, torch_executed_ops={aten.mul.Tensor}, engine="torch_tensorrt")
    # the upstream adapter reads the size of the subgraph upstream demoted from its split module
    assert upstream.reason_code_of("add_tensor") == "demoted"
    assert upstream.reason_of("add_tensor") == (
        "demoted to PyTorch: its tensorrt subgraph had 3 node(s) < min_block_size 4")

    assert p.reason_code_of("frac_default") == "unsupported"
    assert p.reason_of("frac_default") == (
        "runs in PyTorch: no support in any backend (tensorrt: no TensorRT converter; "
        "inductor: backend has no support set (Torch-TensorRT's default: no ops))")

    assert p.reason_code_of("mul_tensor") == "torch_executed_ops"
    assert p.reason_of("mul_tensor") == f"runs in PyTorch: {A}mul.Tensor is in torch_executed_ops"

    p1 = hv.partition(gm, min_block_size=1)
    assert p1.reason_code_of("add_tensor") == "supported"
    assert re.fullmatch(rf"runs in tensorrt: {A}add\.Tensor supported by Torch-TensorRT .*converter registry.*",
                        p1.reason_of("add_tensor"))
    # a lower-priority backend names what the higher one said
    p2 = hv.partition(gm, min_block_size=1, priority=("inductor", "tensorrt"),
                      support={"inductor": hv.support.ops([A + "frac.default"])})
    assert p2.reason_of("add_tensor").endswith("(skipped inductor: not in ops(1 ops))")
    assert p2.reason_of("frac_default") == f"runs in inductor: {A}frac.default supported by ops(1 ops)"

    conv = hv.partition(zoo_cache.capture("tiny_conv"))
    assert conv.reason_code_of("getitem") == "follows_producer"
    assert conv.reason_of("getitem") == (
        "non-compute node (_operator.getitem): follows its producer "
        "_native_batch_norm_legit_no_training, runs in tensorrt")

    with pytest.raises(hv.ConfigError, match="no node named 'nope'"):
        p.reason_of("nope")


@pytest.mark.skipif(not trt.available(), reason="validators need the live converter registry")
def test_reason_of_validator_rejection():
    gm = validator_graph()
    p = hv.partition(gm, min_block_size=1, support={"tensorrt": hv.support.tensorrt(validate=True)})
    for name in ("bitwise_and_tensor", "max_dim"):
        assert p.reason_code_of(name) == "validator_rejected"
        assert "tensorrt: converter exists, validator rejected this node" in p.reason_of(name)
        assert p.backend_of(name) == "torch"
    assert "validator rejected" in p.ops().set_index("op").loc[A + "max.dim", "reason"]
    # the default validates too
    assert hv.partition(gm, min_block_size=1).reason_code_of("max_dim") == "validator_rejected"
    # without validation the converters' existence is enough, as in upstream's partitioner
    plain = hv.partition(gm, min_block_size=1, support={"tensorrt": hv.support.tensorrt(validate=False)})
    assert plain.backend_of("max_dim") == "tensorrt"
    assert "op names only, validators not run" in plain.reason_of("max_dim")


# ------------------------------------------------------------------------------ report
RESNET50_CONFIG = dict(
    priority=("inductor", "tensorrt"), min_block_size=2,
    torch_executed_ops={A + "add.Tensor"},
)
BERT_CONFIG = dict(
    priority=("inductor", "tensorrt"), min_block_size=2,
    torch_executed_ops={A + "native_layer_norm.default"},
)


def report_config(model: str) -> hv.Config:
    registry = hv.support.tensorrt().names
    if model == "resnet50":
        return hv.Config(support={"inductor": hv.support.ops([A + "convolution.default"]),
                                  "tensorrt": hv.support.ops(registry - {A + "max_pool2d.default"})},
                         **RESNET50_CONFIG)
    return hv.Config(support={"inductor": hv.support.ops([A + "linear.default",
                                                          A + "scaled_dot_product_attention.default"]),
                              "tensorrt": hv.support.ops(registry - {A + "gelu.default"})},
                     **BERT_CONFIG)


def spec_text(specs) -> str:
    parts = [f"Tensor: ({', '.join(str(d) for d in t.shape)})@{t.dtype.replace('torch.', '')}" for t in specs]
    return parts[0] if len(parts) == 1 else "List[" + ", ".join(parts) + "]"


@pytest.mark.parametrize("model,unsupported,excluded", [
    ("resnet50", {A + "max_pool2d.default": 1}, {A + "add.Tensor": 16}),
    ("bert", {A + "gelu.default": 2}, {A + "native_layer_norm.default": 5}),
])
def test_report_has_every_dryrun_field(zoo_cache, model, unsupported, excluded):
    gm = zoo_cache.capture(model)
    cfg = report_config(model)
    p = hv.partition(gm, config=cfg)
    text = p.report()
    lines = text.splitlines()
    s = p.stats

    # coverage: total, supported, percentage; and per backend
    assert (f"The graph consists of {s['compute_ops']} Total Operators, of which {s['supported_ops']} "
            f"operators are supported, {s['coverage'] * 100:.2f}% coverage") in text
    for b in cfg.priority:
        eligible = sum(1 for n in gm.graph.nodes if n.op == "call_function"
                       and n.target is not operator.getitem and p.eligible_backend_of(n.name) == b)
        assert f"  {b}: {eligible} operators eligible" in text
    # unsupported ops with counts, and excluded ones
    for op, c in unsupported.items():
        assert f" {op}: {c}  [unsupported]" in lines
    for op, c in excluded.items():
        assert f" {op}: {c}  [excluded (torch_executed_ops)]" in lines
    # every node set to run in Torch, with its location
    torch_nodes = [n for sg in p.subgraphs if sg.backend == "torch" for n in sg.nodes]
    assert torch_nodes
    for name in torch_nodes:
        assert any(line.startswith("Node: ") and f"with layer location: {name} " in line for line in lines), name
    # the settings
    assert f"Compiled with: {cfg.to_dict()}" in text
    # inputs -> engines (inputs, op count, outputs with shapes) -> outputs, in order
    graph_inputs = [_spec(n) for n in gm.graph.nodes if n.op == "placeholder"]
    position = lines.index(f"   Inputs: {spec_text(graph_inputs)}")
    for sg in p.subgraphs:
        header = next(k for k, line in enumerate(lines) if line.endswith(f"Submodule name: {sg.tag}"))
        assert header > position
        assert lines[header + 1] == f"     Engine Inputs: {spec_text(sg.inputs)}"
        assert lines[header + 2] == f"     Number of Operators in Engine: {sg.compute_ops}"
        assert lines[header + 3] == f"     Engine Outputs: {spec_text(sg.outputs)}"
        position = header
    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    assert lines.index(f"   Outputs: {spec_text([_spec(n) for n in output_node.all_input_nodes])}") > position

    # average / largest ops per engine and min_block_size recommendations, for each backend
    for b in cfg.priority:
        sizes = [sg.compute_ops for sg in p.subgraphs if sg.is_acc and sg.backend == b]
        assert sizes, f"{model}: the config should give {b} engines"
        assert f"   Number of {b} engines: {len(sizes)}" in lines
        assert f"   Average Number of Operators per {b} Engine: {round(sum(sizes) / len(sizes), 2)}" in lines
        assert f"   Most Operators in a {b} Engine: {max(sizes)}" in lines
        assert f"  ********** Recommendations: {b} **********" in lines
        recs = [line for line in lines if line.startswith("   - ") and f" {b} engine(s)" in line]
        assert recs and recs[0].startswith("   - For minimal graph segmentation")
        if math.ceil(sum(sizes) / len(sizes)) != max(sizes):
            assert any(r.startswith("   - For moderate graph segmentation") for r in recs)
        assert any(r.startswith("   - The current level of graph segmentation") for r in recs)
        # each recommendation is what re-partitioning at that size really gives
        for rec in recs:
            size, engines = map(int, re.search(r"min_block_size=(\d+) which (?:would )?generates? (\d+)", rec).groups())
            again = hv.partition(gm, config=cfg.replace(min_block_size=size))
            assert sum(1 for sg in again.subgraphs if sg.is_acc and sg.backend == b) == engines, rec


def _spec(node: torch.fx.Node):
    from hierviz.partitioner import tensor_spec

    return tensor_spec(node)


def test_report_without_engines_for_a_backend():
    text = hv.partition(chain_graph(), min_block_size=3).report()
    assert "Aggregate stats not available since no inductor engines were generated." in text
    assert "  PyTorch (no backend): 1 operators" in text


# ------------------------------------------------------------------------------ recommend
@pytest.mark.parametrize("case", ["chain", "tiny_conv", "resnet18_inductor", "bert_torch_executed"])
def test_recommend_matches_repartitioning(zoo_cache, case):
    if case == "chain":
        gm, cfg = chain_graph(), hv.Config(min_block_size=3)
    elif case == "tiny_conv":
        gm = zoo_cache.capture("tiny_conv")
        cfg = hv.Config(priority=("inductor", "tensorrt"),
                        support={"inductor": hv.support.ops([A + "convolution.default"])},
                        torch_executed_ops={A + "_native_batch_norm_legit_no_training.default"})
    elif case == "resnet18_inductor":
        gm = zoo_cache.capture("resnet18")
        cfg = hv.Config(priority=("inductor", "tensorrt"),
                        support={"inductor": hv.support.ops([A + "convolution.default"])}, min_block_size=2)
    else:
        gm = zoo_cache.capture("bert")
        cfg = hv.Config(torch_executed_ops={A + "native_layer_norm.default", A + "gelu.default"})
    p = hv.partition(gm, config=cfg)
    table = p.recommend()
    assert cfg.min_block_size in set(table["min_block_size"])
    assert list(table["min_block_size"]) == sorted(table["min_block_size"])
    explicit = p.recommend(sizes=[1, 4, 7, 40])
    for frame in (table, explicit):
        for row in frame.to_dict("records"):
            again = hv.partition(gm, config=cfg.replace(min_block_size=row["min_block_size"]))
            s = again.stats
            assert row["subgraphs"] == s["subgraphs"]
            assert row["acc_subgraphs"] == s["acc_subgraphs"]
            for b in (*cfg.priority, "torch"):
                assert row[b] == s["subgraphs_by_backend"][b], (row, b)
            assert row["accelerated_nodes"] == sum(len(sg.nodes) for sg in again.subgraphs if sg.is_acc)
    with pytest.raises(hv.ConfigError, match=">= 1"):
        p.recommend(sizes=[0])


# ------------------------------------------------------------------------------ diff
def test_diff():
    gm = chain_graph()
    a = hv.partition(gm, min_block_size=3)
    b = hv.partition(gm, min_block_size=4)
    d = hv.diff(a, b)
    assert list(d.columns) == ["node", "op", "change", "backend_a", "backend_b", "tag_a", "tag_b",
                               "reason_a", "reason_b"]
    # the first block is demoted at 4 and joins frac's PyTorch subgraph: those 4 nodes differ
    assert list(d["node"]) == ["add_tensor", "add_tensor_1", "relu_default", "frac_default"]
    row = d.set_index("node").loc["add_tensor"]
    assert (row["backend_a"], row["backend_b"]) == ("tensorrt", "torch")
    assert row["reason_b"].startswith("demoted")
    frac = d.set_index("node").loc["frac_default"]
    assert frac["backend_a"] == frac["backend_b"] == "torch"  # same backend, different subgraph
    assert frac["change"] == "merged" and row["change"] == "backend"  # frac's subgraph gained the block
    assert hv.diff(a, hv.partition(gm, min_block_size=3)).empty
    with pytest.raises(hv.ConfigError, match="no op node in common"):
        hv.diff(a, hv.partition(validator_graph()))


# ------------------------------------------------------------------------------ config and errors
def test_unknown_op_names_suggest_the_closest():
    with pytest.raises(hv.ConfigError) as err:
        hv.Config(torch_executed_ops={"torch.ops.aten.relu.defualt"})
    assert "unknown op name 'torch.ops.aten.relu.defualt'" in str(err.value)
    assert "'torch.ops.aten.relu.default'" in str(err.value)
    with pytest.raises(hv.ConfigError, match="convolution.default"):
        hv.support.ops(["torch.ops.aten.convolutoin.default"])
    with pytest.raises(hv.ConfigError, match="unknown op name"):
        hv.partition(chain_graph(), torch_executed_ops={"aten.not_an_op.default"})


@pytest.mark.parametrize("kwargs,match", [
    (dict(priority=()), "priority is empty"),
    (dict(priority=("tensorrt", "tensorrt")), "twice"),
    (dict(priority=("tensorrt", "torch")), "fallback"),
    (dict(priority=("custom",)), "no support set"),
    (dict(min_block_size=0), r"min_block_size must be >= 1"),
    (dict(min_block_size=-3), r"min_block_size must be >= 1"),
    (dict(min_block_size="five"), "integer"),
    (dict(support={"tensorrt": {"torch.ops.aten.add.Tensor"}}), "hv.Support"),
])
def test_config_errors(kwargs, match):
    with pytest.raises(hv.ConfigError, match=match):
        hv.Config(**kwargs)


def test_require_full_compilation_with_unsupported_ops_is_a_config_error():
    gm = chain_graph()
    with pytest.raises(hv.ConfigError) as err:
        hv.partition(gm, require_full_compilation=True)
    assert not isinstance(err.value, AssertionError)
    msg = str(err.value)
    assert "1 node(s) would run in PyTorch" in msg and f"{A}frac.default x1" in msg
    with pytest.raises(hv.ConfigError, match=r"mul\.Tensor x1"):
        hv.partition(gm, require_full_compilation=True, torch_executed_ops={aten.mul.Tensor},
                     priority=("tensorrt", "inductor"), support={"inductor": hv.support.ops([A + "frac.default"])})
    # upstream: a bare AssertionError, through engine="torch_tensorrt" a ConfigError too
    with pytest.raises(hv.ConfigError, match="upstream partitioner"):
        hv.partition(gm, require_full_compilation=True, engine="torch_tensorrt")


def test_require_full_compilation_with_two_backends(zoo_cache):
    """Every op supported by one of two backends: it succeeds (upstream always fails here),
    and no subgraph is demoted whatever min_block_size says."""
    gm = zoo_cache.capture("tiny_conv")
    cfg = hv.Config(priority=("inductor", "tensorrt"),
                    support={"inductor": hv.support.ops([A + "convolution.default"])}, require_full_compilation=True)
    p = hv.partition(gm, config=cfg)
    assert [sg.backend for sg in p.subgraphs] == ["inductor", "tensorrt", "inductor", "tensorrt"]
    assert all(sg.is_acc for sg in p.subgraphs)
    with torch.no_grad():
        x = zoo_cache.load("tiny_conv")[1]
        torch.testing.assert_close(p.module(*x), gm(*x), rtol=0, atol=0)
    with pytest.raises(hv.ConfigError, match="upstream partitioner"):
        hv.partition(gm, config=cfg, engine="torch_tensorrt")


def test_config_round_trips_and_hashes():
    cfg = hv.Config(priority=("inductor", "tensorrt"),
                    support={"inductor": hv.support.ops([aten.relu.default, A + "add.Tensor"]),
                             "tensorrt": hv.support.tensorrt()},
                    min_block_size=3, torch_executed_ops={aten.mul.Tensor, "aten.sub.Tensor"},
                    skip_fusion=True)
    d = cfg.to_dict()
    assert json.loads(json.dumps(d)) == d
    assert d["torch_executed_ops"] == [A + "mul.Tensor", A + "sub.Tensor"]  # names, sorted
    assert d["support"]["inductor"] == {"kind": "ops", "ops": [A + "add.Tensor", A + "relu.default"]}
    back = hv.Config.from_dict(d)
    assert back == cfg and hash(back) == hash(cfg)
    assert len({cfg, back, cfg.replace(min_block_size=4)}) == 2
    assert cfg.replace(min_block_size=4).min_block_size == 4
    assert cfg.replace(min_block_size=4).priority == cfg.priority
    assert hv.Config() == hv.Config.from_dict(hv.Config().to_dict())
    assert hv.Config().to_dict() == {"priority": ["tensorrt", "inductor"], "support": None, "min_block_size": 5,
                                      "torch_executed_ops": [], "require_full_compilation": False,
                                      "skip_fusion": False, "demote_to": "torch", "engine": "hierviz"}
    with pytest.raises(hv.ConfigError, match="unknown Config field"):
        cfg.replace(min_blocksize=4)
    with pytest.raises(hv.ConfigError, match="unknown Config field"):
        hv.Config.from_dict({"min_blocksize": 4})


def test_torch_executed_ops_forms():
    """OpOverloads, qualified names, 'aten.' short names and packets (every overload) all work."""
    gm = chain_graph()
    by_overload = hv.partition(gm, min_block_size=1, torch_executed_ops={aten.add.Tensor})
    by_name = hv.partition(gm, min_block_size=1, torch_executed_ops={A + "add.Tensor"})
    by_short = hv.partition(gm, min_block_size=1, torch_executed_ops={"aten.add.Tensor"})
    by_packet = hv.partition(gm, min_block_size=1, torch_executed_ops={"torch.ops.aten.add"})
    for p in (by_overload, by_name, by_short, by_packet):
        assert [p.backend_of(n) for n in ("add_tensor", "add_tensor_1", "add_tensor_2")] == ["torch"] * 3
        assert p.backend_of("relu_default") == "tensorrt"


def test_overrides():
    gm = chain_graph()
    assert hv.partition(gm, min_block_size=3).config.min_block_size == 3
    base = hv.Config(min_block_size=2, skip_fusion=True)
    p = hv.partition(gm, config=base, min_block_size=4)
    assert (p.config.min_block_size, p.config.skip_fusion) == (4, True)
    assert hv.partition(gm, base).config == base  # a Config given second is the config
    assert hv.partition(gm, config=base.to_dict()).config == base
    with pytest.raises(hv.ConfigError, match="unknown Config field"):
        hv.partition(gm, min_blocksize=3)
    with pytest.raises(hv.ConfigError, match="engine must be one of"):
        hv.partition(gm, engine="tensorrt")


# ------------------------------------------------------------------------------ the input graph
def test_input_graph_untouched_and_partition_repeats(zoo_cache):
    gm = zoo_cache.capture("tiny_conv")
    before = snapshot(gm)
    first = hv.partition(gm, min_block_size=1)
    second = hv.partition(gm, min_block_size=1)
    up1 = hv.partition(gm, min_block_size=1, engine="torch_tensorrt")
    up2 = hv.partition(gm, min_block_size=1, engine="torch_tensorrt")
    assert snapshot(gm) == before
    assert [sg.nodes for sg in first.subgraphs] == [sg.nodes for sg in second.subgraphs]
    assert up1.stats["subgraphs"] == up2.stats["subgraphs"] == first.stats["subgraphs"]
    assert first.graph is gm


def test_partitioning_does_not_keep_graphs_alive():
    """Nothing hierviz caches holds on to a graph once its partitions are gone."""
    gm = chain_graph()
    graph = weakref.ref(gm.graph)
    p = hv.partition(gm, min_block_size=1)
    again = hv.partition(gm, min_block_size=2)
    assert again._result.index is p._result.index  # the graph index is shared while both live
    p.module, p.subgraphs, p.report()
    del p, again, gm
    gc.collect()
    assert graph() is None


@pytest.mark.skipif(not trt.available(), reason="needs torch_tensorrt")
def test_upstream_itself_mutates_and_refuses_a_second_call():
    """What engine='hierviz' fixes: upstream's partitioner tags the nodes of the graph it is
    given and fails when it meets them again."""
    gm = chain_graph()
    trt.run_upstream_partitioner(gm, min_block_size=1)
    assert all(hasattr(n, "tag") for n in gm.graph.nodes if n.op == "call_function")
    with pytest.raises(Exception, match="already tagged"):
        trt.run_upstream_partitioner(gm, min_block_size=1)


# ------------------------------------------------------------------------------ the per-node record
class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)
        self.act = torch.nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.proj(x)) + x


class _Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.ModuleList([_Block(), _Block()])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.layer:
            x = block(x)
        return x.frac()


def test_nodes_record_one_row_per_node():
    """Partition.nodes(): every graph node once, in graph order, with where it runs, why,
    its innermost nn.Module and its value's dtype and shape."""
    model = torch.nn.Sequential()
    model.add_module("encoder", _Encoder())
    p = hv.partition(model, (torch.randn(2, 4),), min_block_size=1, torch_executed_ops={A + "sub.Tensor"})
    df = p.nodes()
    assert list(df.columns) == ["name", "op", "kind", "compute", "eligible_backend", "backend", "tag", "reason_code",
                                "reason", "module_path", "module_class", "dtype", "shape"]
    assert list(df["name"]) == [n.name for n in p.graph.graph.nodes]
    by = df.set_index("name")
    linears = df[df["op"] == A + "linear.default"]
    assert list(linears["module_path"]) == ["encoder.layer.0.proj", "encoder.layer.1.proj"]
    assert set(linears["module_class"]) == {"Linear"}
    assert set(linears["shape"]) == {(2, 4)} and set(linears["dtype"]) == {"torch.float32"}
    relus = df[df["op"] == A + "relu.default"]
    assert list(relus["module_path"]) == ["encoder.layer.0.act", "encoder.layer.1.act"]
    adds = df[df["op"] == A + "add.Tensor"]
    assert list(adds["module_path"]) == ["encoder.layer.0", "encoder.layer.1"]
    assert set(adds["module_class"]) == {"_Block"}
    sub = by.loc[df.loc[df["op"] == A + "sub.Tensor", "name"].item()]  # frac() = x - trunc(x)
    assert (sub["backend"], sub["eligible_backend"], sub["reason_code"], sub["tag"]) == (
        "torch", "torch", "torch_executed_ops", p.tag_of(sub.name))
    assert sub["module_path"] == "encoder" and sub["module_class"] == "_Encoder"
    x = df[df["kind"] == "placeholder"].iloc[0]
    assert (x["backend"], x["reason_code"], x["reason"]) == ("graph", "not_callable", "graph input: not partitioned")
    assert x["eligible_backend"] is None or x["eligible_backend"] != x["eligible_backend"]  # None / NaN
    for name in df["name"]:
        row = by.loc[name]
        assert row["backend"] == p.backend_of(name) and row["reason"] == p.reason_of(name)
        assert row["reason_code"] == p.reason_code_of(name)


def test_record_and_node_table_agree():
    gm = chain_graph()
    p = hv.partition(gm, min_block_size=4, torch_executed_ops={aten.mul.Tensor})
    t = p.records
    assert len(t) == len(gm.graph.nodes) and t is p.records  # built once
    rec = p.record("add_tensor")
    assert isinstance(rec, hv.partitioner.NodeRecord)
    assert (rec.name, rec.op, rec.kind, rec.backend, rec.eligible_backend, rec.reason_code) == (
        "add_tensor", A + "add.Tensor", "call_function", "torch", "tensorrt", "demoted")
    assert rec.inputs == ("x", "y") and rec.users == ("add_tensor_1",)
    assert (rec.dtype, rec.shape, rec.module_path, rec.module_class) == ("torch.float32", (2, 3), "", "")
    assert rec == t[t.position["add_tensor"]]
    assert [r.name for r in t] == list(t.name)
    mul = p.record("mul_tensor")
    assert (mul.reason_code, mul.reason) == ("torch_executed_ops",
                                             f"runs in PyTorch: {A}mul.Tensor is in torch_executed_ops")
    members = [tuple(t.name[i] for i in m) for m in t.subgraph_members]
    assert members == [sg.nodes for sg in p.subgraphs]
    assert list(t.subgraph_tag) == [sg.tag for sg in p.subgraphs]
    with pytest.raises(hv.ConfigError, match="no node named 'nope'"):
        p.record("nope")


def test_nodes_of_a_graph_without_metadata():
    """A hand-built graph has no meta['val']: dtype and shape are None, nothing fails."""
    g = torch.fx.Graph()
    x = g.placeholder("x")
    g.output(g.call_function(aten.relu.default, (x,)))
    p = hv.partition(torch.fx.GraphModule(torch.nn.Module(), g), min_block_size=1)
    df = p.nodes()
    assert df["dtype"].isna().all() and df["shape"].isna().all()
    assert list(df["backend"]) == ["graph", "tensorrt", "graph"]


@pytest.mark.skipif(not trt.available(), reason="needs torch_tensorrt")
def test_dead_code_removed_by_upstream_in_the_record():
    """engine='torch_tensorrt' drops a node nobody uses (upstream's dead-code elimination): the
    record says so, and stats, tables, diff and the diagram take it."""
    import pandas as pd

    g = torch.fx.Graph()
    x = g.placeholder("x")
    a = g.call_function(aten.relu.default, (x,))
    g.call_function(aten.neg.default, (x,))  # unused
    b = g.call_function(aten.add.Tensor, (a, a))
    g.output(b)
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    ShapeProp(gm).propagate(torch.randn(2, 3))
    up = hv.partition(gm, min_block_size=1, engine="torch_tensorrt")
    mine = hv.partition(gm, min_block_size=1)
    rec = up.record("neg_default")
    assert (rec.reason_code, rec.backend, rec.tag) == ("dead_code", "graph", None)
    assert rec.reason == "removed by upstream's dead-code elimination; runs nowhere"
    assert up.stats["nodes"] == 3 and up.stats["subgraphs"] == 1
    row = up.ops().set_index("op").loc[A + "neg.default"]
    assert row["count"] == 1 and row["reason"] == "dead code (removed)"
    d = hv.diff(mine, up).set_index("node")
    # hierviz keeps neg in the one tensorrt subgraph, so every member's subgraph differs
    assert list(d.index) == ["relu_default", "neg_default", "add_tensor"]
    assert set(d["tag_a"]) == {mine.tag_of("add_tensor")}
    assert (d.loc["neg_default", "backend_a"], d.loc["neg_default", "backend_b"]) == ("tensorrt", "graph")
    assert pd.isna(d.loc["neg_default", "tag_b"])  # no subgraph
    source = up.render("full").source
    assert "hv-dead_code" in source and "removed by upstream" in source
