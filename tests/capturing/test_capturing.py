"""hv.capture: the aten graph Torch-TensorRT itself would partition, outputs equal to the
model's, the model untouched, clear errors."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn

import hierviz as hv
from inplace_models import EMA, DoublesInput
from hierviz import trt, zoo
from hierviz.foundation.opnames import qualname

needs_trt = pytest.mark.skipif(not trt.available(), reason="torch_tensorrt unusable here")


def _ops(gm: torch.fx.GraphModule) -> list[tuple[str, str]]:
    """(op kind, qualified target) per node, without the `_guards_fn` capture removes."""
    return [(n.op, qualname(n.target) if n.op == "call_function" else "")
            for n in gm.graph.nodes if not str(n.target).startswith("_guards_fn")]


def _tensors(value) -> list[torch.Tensor]:
    leaves, _ = torch.utils._pytree.tree_flatten(value)
    return [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]


def _upstream_lowering(model: nn.Module, inputs: tuple) -> torch.fx.GraphModule:
    """Torch-TensorRT's compile front half, run here directly."""
    from torch_tensorrt.dynamo import CompilationSettings
    from torch_tensorrt.dynamo.lowering import get_decompositions, post_lowering, pre_export_lowering

    with trt.answer_cuda_queries():
        settings = CompilationSettings()
        ep = torch.export.export(model, inputs, strict=False)
        ep = pre_export_lowering(ep, settings)
        ep = ep.run_decompositions(get_decompositions(False))
        return post_lowering(ep.module(), settings)


@needs_trt
@pytest.mark.parametrize("name", ["tiny_conv", "resnet18", "bert"])
def test_same_graph_as_torch_tensorrt_lowering(zoo_cache, name) -> None:
    model, inputs = zoo_cache.load(name)
    ours = zoo_cache.capture(name)
    theirs = _upstream_lowering(model, inputs)
    assert len(_ops(ours)) == len(_ops(theirs))
    assert _ops(ours) == _ops(theirs)
    assert not any(str(n.target).startswith("_guards_fn") for n in ours.graph.nodes)
    assert not any(name.startswith("_guards_fn") for name, _ in ours.named_children())


@needs_trt
def test_no_max_pool_with_indices_after_capture(zoo_cache) -> None:
    names = {qualname(n.target) for n in zoo_cache.capture("resnet18").graph.nodes}
    assert not any("max_pool2d_with_indices" in n for n in names)
    assert "torch.ops.aten.max_pool2d.default" in names


# the biggest captures take over 5 s of CPU each: left out of make check, run by make test
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in ("vit_b_16", "mobilenet_v3_small")
                                  else n for n in zoo.names()])
def test_zoo_model_captures_and_matches_eager(zoo_cache, name) -> None:
    model, inputs = zoo_cache.load(name)
    gm = zoo_cache.capture(name)
    assert isinstance(gm, torch.fx.GraphModule)
    assert all(isinstance(n.target, torch._ops.OpOverload) or n.target.__module__ == "_operator"
               for n in gm.graph.nodes if n.op == "call_function")
    assert not any(n.op == "call_module" for n in gm.graph.nodes)
    expected = _tensors(zoo_cache.eager(name))
    with torch.no_grad():
        got = _tensors(gm(*inputs))
    assert len(got) == len(expected) >= 1
    for g, e in zip(got, expected):
        scale = e.abs().max().item()
        assert scale > 0 and torch.isfinite(e).all()
        torch.testing.assert_close(g, e, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("name", zoo.names())
def test_capture_leaves_model_unchanged(zoo_cache, name) -> None:
    model, _ = zoo_cache.load(name)
    before = zoo_cache.state_before_capture(name)
    after = model.state_dict()
    assert list(after) == list(before)
    for key, value in after.items():
        assert torch.equal(value, before[key]), key
    assert not model.training and not any(m.training for m in model.modules())
    assert all(p.requires_grad for p in model.parameters())


def test_capture_leaves_parameters_unchanged_fresh_model() -> None:
    model, inputs = zoo.load("tiny_conv")
    params = {k: (p.detach().clone(), p.requires_grad, p.data_ptr()) for k, p in model.named_parameters()}
    buffers = {k: b.clone() for k, b in model.named_buffers()}
    hv.capture(model, inputs)
    for k, p in model.named_parameters():
        value, requires_grad, ptr = params[k]
        assert torch.equal(p, value) and p.requires_grad == requires_grad and p.data_ptr() == ptr
    for k, b in model.named_buffers():
        assert torch.equal(b, buffers[k]), k


class _Branchy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x * 2
        return x - 1


def test_data_dependent_control_flow_is_a_capture_error() -> None:
    with pytest.raises(hv.CaptureError, match="control flow") as info:
        hv.capture(_Branchy(), (torch.randn(2, 3),))
    assert "_Branchy" in str(info.value)
    assert "torch.cond" in str(info.value)


class _Result:
    def __init__(self, value: torch.Tensor) -> None:
        self.value = value


class _ReturnsObject(nn.Module):
    def forward(self, x: torch.Tensor) -> _Result:
        return _Result(x + 1)


def test_unexportable_output_is_a_capture_error_with_hint() -> None:
    with pytest.raises(hv.CaptureError) as info:
        hv.capture(_ReturnsObject(), (torch.randn(2, 3),))
    message = str(info.value)
    assert "_ReturnsObject" in message and "_Result" in message
    assert "Hint:" in message and "flatten" in message


def test_wrong_kinds_of_input_are_capture_errors() -> None:
    with pytest.raises(hv.CaptureError, match="nn.Module, ExportedProgram or GraphModule"):
        hv.capture("resnet18", (torch.randn(1),))
    with pytest.raises(hv.CaptureError, match="example_inputs"):
        hv.capture(zoo.TinyConv())


def test_second_capture_is_cached_without_re_export(monkeypatch) -> None:
    calls = []
    real_export = torch.export.export

    def counting_export(*args, **kwargs):
        calls.append(args[0])
        return real_export(*args, **kwargs)

    monkeypatch.setattr(torch.export, "export", counting_export)
    monkeypatch.setenv("HIERVIZ_CACHE", "0")  # the in-memory cache only (the disk's: test_capture_cache.py)
    model, inputs = zoo.load("tiny_conv")
    first = hv.capture(model, inputs)
    assert len(calls) == 1
    again = hv.capture(model, (torch.randn(1, 3, 224, 224),))  # same spec, other values
    assert again is first and len(calls) == 1
    other = hv.capture(model, (torch.randn(2, 3, 224, 224),))  # another spec: a new capture
    assert other is not first and len(calls) == 2


@needs_trt
def test_exported_program_is_accepted(zoo_cache) -> None:
    model, inputs = zoo_cache.load("tiny_conv")
    ep = torch.export.export(model, inputs, strict=False)
    nodes_before = [n.name for n in ep.graph.nodes]
    gm = hv.capture(ep)
    assert _ops(gm) == _ops(zoo_cache.capture("tiny_conv"))
    assert [n.name for n in ep.graph.nodes] == nodes_before  # lowered a copy, not ep itself
    with torch.no_grad():
        torch.testing.assert_close(gm(*inputs), zoo_cache.eager("tiny_conv"))


def test_aten_graph_module_is_accepted(zoo_cache) -> None:
    model, inputs = zoo_cache.load("tiny_conv")
    aten = zoo_cache.capture("tiny_conv")
    ops_before = _ops(aten)
    gm = hv.capture(aten, inputs)
    assert gm is not aten and _ops(gm) == ops_before
    assert _ops(aten) == ops_before
    with torch.no_grad():
        torch.testing.assert_close(gm(*inputs), zoo_cache.eager("tiny_conv"))


def test_synthetic_graph_is_accepted_as_is() -> None:
    graph = zoo.synthetic(300, seed=3)
    gm = hv.capture(graph, zoo.synthetic_inputs(graph))
    assert _ops(gm) == _ops(graph)
    inputs = zoo.synthetic_inputs(graph, seed=1)
    torch.testing.assert_close(gm(*inputs), graph(*inputs), equal_nan=True)


def test_traced_graph_module_is_exported_and_lowered() -> None:
    traced = torch.fx.symbolic_trace(zoo.TinyConv().eval())
    assert any(n.op == "call_module" for n in traced.graph.nodes)
    gm = hv.capture(traced, (torch.randn(1, 3, 32, 32),))
    assert not any(n.op == "call_module" for n in gm.graph.nodes)
    assert "torch.ops.aten.convolution.default" in {qualname(n.target) for n in gm.graph.nodes}


# ---------------------------------------------------------------- issue 11: the model is never changed
class _Counter(nn.Module):
    """Counts its calls in a buffer and in a Python attribute, as logging/caching code does."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("count", torch.zeros((), dtype=torch.long))
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.count += 1
        self.calls += 1
        return x * 2


def _bn_counter_model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Dropout(0.5), _Counter())


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_capture_leaves_buffers_rng_and_mode_exactly_as_they_were(mode) -> None:
    model = _bn_counter_model().train(mode == "train")
    state = {k: v.clone() for k, v in model.state_dict().items()}
    pointers = {k: p.data_ptr() for k, p in model.named_parameters()}
    flags = [m.training for m in model.modules()]
    x2, x3 = torch.randn(2, 3, 8, 8), torch.randn(3, 3, 8, 8)
    rng = torch.get_rng_state()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # train mode: BatchNorm's statistics updates are reported
        hv.capture(model, (x2,))
        hv.capture(model, (x3,))  # a second shape: a second export

    assert model[1].num_batches_tracked.item() == 0
    assert model[3].count.item() == 0 and model[3].calls == 0
    assert list(model.state_dict()) == list(state)
    for key, value in model.state_dict().items():
        assert value.dtype == state[key].dtype and torch.equal(value, state[key]), key
    assert {k: p.data_ptr() for k, p in model.named_parameters()} == pointers
    assert all(p.requires_grad for p in model.parameters())
    assert [m.training for m in model.modules()] == flags
    assert torch.equal(torch.get_rng_state(), rng)


def test_capture_follows_mode_and_weight_changes_of_the_same_model() -> None:
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).eval()
    x = torch.randn(2, 3, 8, 8)
    evaluated = hv.capture(model, (x,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        trained = hv.capture(model.train(), (x,))
    assert trained is not evaluated
    with torch.no_grad():
        torch.testing.assert_close(trained(x), copy.deepcopy(model)(x))  # batch statistics
    model.eval()
    with torch.no_grad():
        model[1].weight.add_(1.0)  # changed in place: captured again, not served from the cache
        again = hv.capture(model, (x,))
        assert again is not evaluated
        torch.testing.assert_close(again(x), model(x))


@needs_trt
def test_in_place_updates_warn_once_naming_the_buffer_or_input() -> None:
    from hierviz.capturing.aten_capture import CaptureWarning

    model, x = EMA(), torch.randn(4, 3)
    with pytest.warns(CaptureWarning) as record:
        hv.capture(model, (x,))
    assert len(record) == 1
    message = str(record[0].message)
    assert "EMA.forward updates buffer(s) 'ema' in place" in message
    assert "the first call matches the model and later calls of the model may differ" in message
    assert record[0].filename == __file__  # points at the user's call
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hv.capture(model, (torch.randn(4, 3),))  # cached: warned once
    assert torch.equal(model.ema, torch.zeros(3))

    with pytest.warns(CaptureWarning, match=r"DoublesInput.forward writes into input\(s\) 'x' in place"):
        hv.capture(DoublesInput(), (x,))


# ---------------------------------------------------------------- issue 11: GraphModules that are not aten
class _ConvRelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def test_symbolic_trace_is_captured_with_its_inputs_like_the_module() -> None:
    model, x = _ConvRelu().eval(), torch.randn(1, 3, 16, 16)
    traced = torch.fx.symbolic_trace(model)
    p = hv.partition(traced, (x,), min_block_size=1)
    direct = hv.partition(model, (x,), min_block_size=1)
    assert p.stats["coverage"] == direct.stats["coverage"] == 1.0
    assert [sg.nodes for sg in p.subgraphs] == [sg.nodes for sg in direct.subgraphs] == [("convolution", "relu")]
    assert not any(n.op in ("call_module", "call_method") for n in p.graph.graph.nodes)
    with torch.no_grad():
        torch.testing.assert_close(p.module(x), model(x))
    assert [n.op for n in traced.graph.nodes] == ["placeholder", "call_module", "call_function", "output"]


def test_graph_module_that_is_not_aten_needs_example_inputs() -> None:
    traced = torch.fx.symbolic_trace(_ConvRelu().eval())
    for call in (lambda: hv.partition(traced), lambda: hv.capture(traced)):
        with pytest.raises(hv.ConfigError) as info:
            call()
        assert "is not an aten-level graph" in str(info.value)
        assert "must be captured with example inputs: pass them, e.g. hv.partition(gm, (x,))" in str(info.value)


def test_exported_module_has_no_guards_subgraph() -> None:
    model, x = _ConvRelu().eval(), torch.randn(1, 3, 16, 16)
    exported = torch.export.export(model, (x,)).module()
    assert any(n.target == "_guards_fn" for n in exported.graph.nodes)
    p = hv.partition(exported, (x,), min_block_size=1)
    assert [(sg.backend, sg.nodes) for sg in p.subgraphs] == [("tensorrt", ("convolution", "relu"))]
    assert not any("_guards_fn" in str(n.target) for n in p.graph.graph.nodes)
    with torch.no_grad():
        torch.testing.assert_close(p.module(x), model(x))



class _InplaceDropout(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.drop = nn.Dropout(0.5, inplace=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(torch.relu(self.conv(x))).sum(1)


@pytest.mark.slow
@pytest.mark.skipif(torch.cuda.is_available(), reason="the CPU-only lowering path")
@pytest.mark.parametrize("name", ["inplace_dropout", "mobilenet_v3_small", "efficientnet_b0"])
def test_train_mode_inplace_dropout_captures_on_the_cpu(name, monkeypatch) -> None:
    """Torch-TensorRT's empty_permuted decomposition allocates on its default device: without a
    GPU that is the CPU, and capture never sees hierviz's answers to the CUDA queries."""
    if not trt.available():
        pytest.skip("Torch-TensorRT's lowering")
    if name == "inplace_dropout":
        model, inputs = _InplaceDropout().train(), (torch.randn(1, 3, 8, 8),)
    else:
        model, inputs = zoo.load(name)
        model = copy.deepcopy(model).train()
    asked = []
    real = torch.cuda.current_device
    monkeypatch.setattr(torch.cuda, "current_device", lambda: asked.append(1) or real())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CaptureWarning: BatchNorm's running statistics
        gm = hv.capture(model, inputs)
    assert not asked  # the lowering ran without the import-time answers
    devices = {str(n.meta["val"].device) for n in gm.graph.nodes if isinstance(n.meta.get("val"), torch.Tensor)}
    assert devices == {"cpu"}
    assert any("dropout" in str(n.target) or "bernoulli" in str(n.target) for n in gm.graph.nodes)
    assert gm(*inputs).shape == model(*inputs).shape


def test_one_dict_for_several_named_arguments_hints_kwargs():
    """T5's forward takes input_ids and decoder_input_ids: one dict given as example_inputs
    arrives as input_ids and fails inside torch; the error says to pass it as kwargs= (issue 37),
    and that advice works (on a small two-argument module, which captures fast)."""
    transformers = pytest.importorskip("transformers")
    cfg = transformers.T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_decoder_layers=1,
                                num_heads=2, use_cache=False)
    with torch.random.fork_rng():
        torch.manual_seed(0)
        t5 = transformers.T5Model(cfg).eval()
    ids, dec = torch.randint(0, 64, (1, 5)), torch.randint(0, 64, (1, 3))
    with pytest.raises(hv.CaptureError) as info:
        hv.capture(t5, {"input_ids": ids, "decoder_input_ids": dec}, cache=False)
    assert ("Hint: example_inputs is one dict, so T5Model.forward got it as its first argument ('input_ids'); pass "
            "its entries ('input_ids', 'decoder_input_ids') as keyword arguments: hv.partition(model, (), "
            "kwargs=inputs)") in str(info.value)

    class Two(torch.nn.Module):
        def forward(self, a, b):
            return a["x"] * 2 if isinstance(a, dict) else a + b

    inputs = {"a": torch.ones(2), "b": torch.arange(2.0)}
    with pytest.raises(hv.CaptureError, match="one dict, so Two.forward got it as its first argument"):
        hv.capture(Two(), inputs, cache=False)
    gm = hv.capture(Two(), (), kwargs=inputs, cache=False)
    out = gm(**inputs)
    torch.testing.assert_close(out[0] if isinstance(out, (tuple, list)) else out, inputs["a"] + inputs["b"])


@pytest.mark.parametrize("extra", [{"kwargs": ""}, {"kwargs": 0}, {"kwargs": []}, {"kwargs": torch.ones(1)},
                                   {"dynamic_shapes": "batch"}, {"dynamic_shapes": 3}])
def test_capture_refuses_extras_it_cannot_mean(extra) -> None:
    """hv.capture checks kwargs= and dynamic_shapes= as hv.partition does: a falsy or wrong value is
    a ConfigError naming the argument, never read as 'none' or left to torch.export."""
    model, x = nn.Linear(3, 2).eval(), (torch.rand(1, 3),)
    name = next(iter(extra))
    with pytest.raises(hv.ConfigError, match=f"{name}="):
        hv.capture(model, x, **extra)
