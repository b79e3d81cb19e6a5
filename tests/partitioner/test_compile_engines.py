"""engine="fast" / "global": the partition torch_tensorrt.compile makes, from the installed
Torch-TensorRT's own partitioners, as an ordinary Partition (reasons, report, views, diff)."""

from __future__ import annotations


import pytest
import torch
from torch.fx.passes.shape_prop import ShapeProp

import hierviz as hv
from hierviz import trt

needs_trt = pytest.mark.skipif(not trt.available(), reason="engine='fast' runs torch_tensorrt's partitioners")
aten = torch.ops.aten
A = "torch.ops.aten."


def _graph(build) -> torch.fx.GraphModule:
    g = torch.fx.Graph()
    x = g.placeholder("x")
    g.output(build(g, x))
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    ShapeProp(gm).propagate(torch.randn(4, 8))
    return gm


def chain() -> torch.fx.GraphModule:
    """relu, add, relu | frac (no converter) | relu, mul, relu, add."""
    def build(g, x):
        a = g.call_function(aten.relu.default, (x,))
        b = g.call_function(aten.add.Tensor, (a, x))
        c = g.call_function(aten.relu.default, (b,))
        d = g.call_function(aten.frac.default, (c,))
        e = g.call_function(aten.relu.default, (d,))
        f = g.call_function(aten.mul.Tensor, (e, e))
        h = g.call_function(aten.relu.default, (f,))
        return g.call_function(aten.add.Tensor, (h, x))
    return _graph(build)


def _acc_blocks(p: hv.Partition) -> list[tuple[str, ...]]:
    return [sg.nodes for sg in p.subgraphs if sg.is_acc]


@needs_trt
@pytest.mark.parametrize("engine", ["fast", "global"])
def test_chain_blocks_reasons_and_outputs(engine) -> None:
    gm = chain()
    p = hv.partition(gm, engine=engine, min_block_size=3)
    assert p.engine == engine
    assert _acc_blocks(p) == [("relu_default", "add_tensor", "relu_default_1"),
                              ("relu_default_2", "mul_tensor", "relu_default_3", "add_tensor_1")]
    assert p.backend_of("frac_default") == "torch" and p.reason_code_of("frac_default") == "unsupported"
    assert "no TensorRT converter" in p.reason_of("frac_default")
    x = torch.randn(4, 8)
    torch.testing.assert_close(p.module(x), gm(x))
    # a block below min_block_size is demoted, with the size its reason names
    small = hv.partition(gm, engine=engine, min_block_size=4)
    assert _acc_blocks(small) == [("relu_default_2", "mul_tensor", "relu_default_3", "add_tensor_1")]
    assert small.reason_code_of("relu_default") == "demoted"
    assert "min_block_size 4" in small.reason_of("relu_default")
    if engine == "fast":
        assert "subgraph had 3 node(s) < min_block_size 4" in small.reason_of("relu_default")
    torch.testing.assert_close(small.module(x), gm(x))
    # torch_executed_ops
    forced = hv.partition(gm, engine=engine, min_block_size=1, torch_executed_ops={A + "mul.Tensor"})
    assert forced.backend_of("mul_tensor") == "torch" and forced.reason_code_of("mul_tensor") == "torch_executed_ops"
    assert "hierarchical" not in p.report() and f"({engine} engine)" in p.report()
    assert repr(p).endswith(f"mbs=3, engine={engine}>")


@needs_trt
def test_early_return_leaves_the_whole_graph_in_pytorch() -> None:
    """Fewer supported ops than min_block_size: compile returns the graph unpartitioned."""
    p = hv.partition(chain(), engine="fast", min_block_size=8)
    assert p.stats["subgraphs_by_backend"]["tensorrt"] == 0 and p.stats["subgraphs"] == 1
    said = "only 7 supported nodes (torch_tensorrt.compile's count, getitem and views included) < min_block_size 8"
    assert said in p.notes[0]
    assert "leaves the whole graph in PyTorch" in p.reason_of("relu_default")
    assert f"Note: {said}" in p.report()


@needs_trt
def test_fast_falls_back_to_global_and_says_so(monkeypatch) -> None:
    from torch.fx.passes.splitter_base import FxNetSplitterInternalError
    from torch_tensorrt.dynamo import partitioning

    def failing(*args, **kwargs):
        raise FxNetSplitterInternalError("cycle in the split")

    monkeypatch.setattr(partitioning, "fast_partition", failing)
    p = hv.partition(chain(), engine="fast", min_block_size=3)
    assert p.notes and "FxNetSplitterInternalError: cycle in the split" in p.notes[0]
    assert "global partitioner" in p.notes[0]
    assert _acc_blocks(p) == _acc_blocks(hv.partition(chain(), engine="global", min_block_size=3))


@needs_trt
def test_dead_code_is_removed_as_compile_does() -> None:
    def build(g, x):
        a = g.call_function(aten.relu.default, (x,))
        g.call_function(aten.sigmoid.default, (x,))  # nobody uses it
        b = g.call_function(aten.add.Tensor, (a, x))
        return g.call_function(aten.mul.Tensor, (b, b))
    gm = _graph(build)
    p = hv.partition(gm, engine="fast", min_block_size=1)
    assert p.reason_code_of("sigmoid_default") == "dead_code" and p.backend_of("sigmoid_default") == "graph"
    assert len(gm.graph.nodes) == 6  # the input graph is untouched
    x = torch.randn(4, 8)
    torch.testing.assert_close(p.module(x), gm(x))


@needs_trt
def test_never_mutates_input_and_is_repeatable() -> None:
    gm = chain()
    before = [(n.name, n.op, str(n.target), dict(n.meta).keys()) for n in gm.graph.nodes]
    a = hv.partition(gm, engine="fast", min_block_size=3)
    b = hv.partition(gm, engine="fast", min_block_size=3)
    assert [(n.name, n.op, str(n.target), dict(n.meta).keys()) for n in gm.graph.nodes] == before
    assert not any(hasattr(n, "tag") for n in gm.graph.nodes)
    assert [sg.nodes for sg in a.subgraphs] == [sg.nodes for sg in b.subgraphs]
    assert [sg.tag for sg in a.subgraphs] == ["_run_on_acc_tensorrt_0", "_run_on_gpu_1", "_run_on_acc_tensorrt_2"]


@needs_trt
@pytest.mark.parametrize("setting, words", [
    (dict(priority=("inductor",)), "put 'tensorrt' in priority"),
    (dict(support={"inductor": hv.support.inductor()}),
     "priority also has 'inductor' with ops to take (its support); use priority=('tensorrt',) (--priority tensorrt)"),
    (dict(support={"tensorrt": hv.support.tensorrt(validate=False)}), "cannot use support['tensorrt']"),
    (dict(skip_fusion=True), "sets skip_fusion itself"),
])
def test_settings_these_partitioners_cannot_take(setting, words) -> None:
    with pytest.raises(hv.ConfigError, match="engine='global'") as info:
        hv.partition(chain(), engine="global", **setting)
    assert words in str(info.value)


@needs_trt
def test_require_full_compilation_is_a_config_error() -> None:
    with pytest.raises(hv.ConfigError, match="require_full_compilation"):
        hv.partition(chain(), engine="fast", require_full_compilation=True)


def test_unknown_engine_names_the_engines() -> None:
    with pytest.raises(hv.ConfigError, match=r"did you mean 'fast'\?") as info:
        hv.partition(chain(), engine="fats")
    assert "torch_tensorrt.compile" in str(info.value)


@needs_trt
def test_hierarchical_is_upstreams_hierarchical_partitioner() -> None:
    a = hv.partition(chain(), engine="hierarchical", min_block_size=3)
    b = hv.partition(chain(), engine="torch_tensorrt", min_block_size=3)
    assert a.engine == b.engine == "torch_tensorrt"
    assert [sg.nodes for sg in a.subgraphs] == [sg.nodes for sg in b.subgraphs]


def test_without_torch_tensorrt_fast_says_what_to_install(run_python) -> None:
    proc = run_python("""
        import sys
        sys.modules['torch_tensorrt'] = None
        import hierviz as hv
        m, x = hv.zoo.load('tiny_conv')
        try:
            hv.partition(m, x, engine='fast')
        except hv.ConfigError as exc:
            print('ERROR', exc)
    """)
    assert "ERROR engine='fast'" in proc.stdout, proc.stderr[-2000:]
    assert 'pip install "hierviz[tensorrt]"' in proc.stdout


@needs_trt
def test_resnet18_views_diff_and_recommend(zoo_cache) -> None:
    gm = zoo_cache.capture("resnet18")
    fast = hv.partition(gm, engine="fast", torch_executed_ops={A + "add.Tensor"})
    ours = hv.partition(gm, torch_executed_ops={A + "add.Tensor"})
    assert fast.stats["subgraphs_by_backend"]["tensorrt"] == 8
    assert all(fast.backend_of(n.name) == "torch" for n in gm.graph.nodes if n.target is aten.add.Tensor)
    for view in ("full", "collapsed", "modules"):
        assert "_run_on_acc_tensorrt_0" in fast.render(view).source
    d = hv.diff(fast, ours)
    assert list(d.columns)[:1] == ["node"] or "node" in d.columns
    counts = fast.recommend([1, 5])
    assert list(counts["min_block_size"]) == [1, 5]
    assert counts.set_index("min_block_size").loc[5, "tensorrt"] == 8


@needs_trt
def test_compile_and_measure_take_the_fast_partition() -> None:
    """Partition.compile and hv.measure run compile's partition like any other (TensorRT
    subgraphs through a stand-in compiler here: building engines needs a GPU)."""
    gm = chain()
    p = hv.partition(gm, engine="fast", min_block_size=3)
    built = []

    def stand_in(sub, inputs):
        built.append(len(sub.graph.nodes))
        return sub

    x = torch.randn(4, 8)
    compiled = p.compile("cpu", example_inputs=(x,), compilers={"tensorrt": stand_in})
    torch.testing.assert_close(compiled(x), gm(x))
    assert len(built) == 2  # one per TensorRT block
    m = hv.measure(p, (x,), device="cpu", warmup=0, iters=2, compilers={"tensorrt": stand_in})
    assert m.outputs_match is True
    assert sorted(m.per_subgraph["backend"]) == ["tensorrt", "tensorrt", "torch"]
