"""hv.zoo: built-in models with deterministic random weights, and synthetic aten graphs."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import zoo
from hierviz.support import sources as support
from hierviz.foundation.opnames import qualname

EXPECTED = ["tiny_conv", "resnet18", "resnet50", "mobilenet_v3_small", "efficientnet_b0",
            "vit_b_16", "bert", "gpt2", "llama"]


def test_names() -> None:
    assert zoo.names() == EXPECTED
    assert hv.zoo is zoo
    assert all(zoo.describe(name) for name in EXPECTED)


@pytest.mark.parametrize("name", EXPECTED)
def test_load_gives_eval_model_and_input_tuple(zoo_cache, name) -> None:
    model, inputs = zoo_cache.load(name)
    assert isinstance(model, torch.nn.Module)
    assert not any(m.training for m in model.modules())
    assert isinstance(inputs, tuple) and inputs
    assert all(isinstance(t, torch.Tensor) for t in inputs)
    out = zoo_cache.eager(name)
    assert isinstance(out, torch.Tensor)  # transformers models return a plain tensor
    assert torch.isfinite(out).all() and out.std() > 0


@pytest.mark.parametrize("name", EXPECTED)
def test_load_is_deterministic(zoo_cache, name) -> None:
    model, inputs = zoo_cache.load(name)
    rng_before = torch.get_rng_state()
    again, again_inputs = zoo.load(name)
    assert torch.equal(torch.get_rng_state(), rng_before)  # the caller's RNG is left alone
    first, second = model.state_dict(), again.state_dict()
    assert list(first) == list(second)
    for key in first:
        assert torch.equal(first[key], second[key]), key
    assert len(inputs) == len(again_inputs)
    for a, b in zip(inputs, again_inputs):
        assert torch.equal(a, b)


def test_transformer_inputs_are_token_ids(zoo_cache) -> None:
    for name in ("bert", "gpt2", "llama"):
        (ids,) = zoo_cache.load(name)[1]
        assert ids.dtype == torch.long and ids.dim() == 2 and ids.shape[0] == 1


def test_unknown_name_lists_the_names() -> None:
    with pytest.raises(hv.ConfigError) as info:
        zoo.load("resnet1000")
    message = str(info.value)
    assert "resnet1000" in message
    assert all(name in message for name in EXPECTED)


def _signature(gm: torch.fx.GraphModule) -> list[tuple]:
    return [(n.op, n.name, qualname(n.target), tuple(str(a) for a in n.args)) for n in gm.graph.nodes]


def test_synthetic_runs_with_the_requested_size() -> None:
    gm = zoo.synthetic(1000)
    assert isinstance(gm, torch.fx.GraphModule)
    gm.graph.lint()
    assert len(gm.graph.nodes) == 1000
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    assert len(placeholders) == 2
    inputs = zoo.synthetic_inputs(gm)
    assert [tuple(t.shape) for t in inputs] == [zoo.SYNTHETIC_SHAPE] * 2
    out = gm(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    assert all(tuple(o.shape) == zoo.SYNTHETIC_SHAPE for o in outs)


def test_synthetic_graph_shape_and_metadata() -> None:
    gm = zoo.synthetic(1000, seed=1)
    compute = [n for n in gm.graph.nodes if n.op == "call_function"]
    assert all(isinstance(n.target, torch._ops.OpOverload) for n in compute)
    for n in gm.graph.nodes:
        if n.op != "output":
            assert tuple(n.meta["val"].shape) == zoo.SYNTHETIC_SHAPE
            assert n.meta["tensor_meta"].dtype == torch.float32
            assert n.users, f"{n.name} is dead"
    assert sum(len(n.users) > 1 for n in compute) > 50  # branches
    position = {n: i for i, n in enumerate(gm.graph.nodes)}
    assert max(position[n] - position[a] for n in compute for a in n.all_input_nodes) > 32  # skips


def test_synthetic_is_deterministic_per_seed() -> None:
    assert _signature(zoo.synthetic(1000, seed=5)) == _signature(zoo.synthetic(1000, seed=5))
    assert _signature(zoo.synthetic(1000, seed=5)) != _signature(zoo.synthetic(1000, seed=6))
    gm = zoo.synthetic(500, seed=5)
    inputs = zoo.synthetic_inputs(gm)
    torch.testing.assert_close(gm(*inputs), zoo.synthetic(500, seed=5)(*inputs), equal_nan=True)


def test_synthetic_has_nodes_tensorrt_cannot_take() -> None:
    gm = zoo.synthetic(1000)
    trt_support = support.tensorrt()
    names = [qualname(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    unsupported = {name for name in names if not trt_support.accepts_name(name)}
    assert unsupported and unsupported <= zoo.SYNTHETIC_UNSUPPORTED
    assert 0.01 < sum(name in unsupported for name in names) / len(names) < 0.2
    assert "torch.ops.aten.add.Tensor" in names and trt_support.accepts_name("torch.ops.aten.add.Tensor")


def test_synthetic_rejects_tiny_sizes() -> None:
    with pytest.raises(hv.ConfigError, match="at least 4"):
        zoo.synthetic(2)
    assert len(zoo.synthetic(4).graph.nodes) == 4
