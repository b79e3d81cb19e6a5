"""Partition.module (the split GraphModule) computes what the model computes, or says why not:
it checks each call's inputs against what was captured (shapes, dtypes, Python scalars,
dynamic-dimension ranges) and raises hv.CaptureError instead of a silently wrong answer."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn
from torch.export import Dim

import hierviz as hv
from inplace_models import EMA, DoublesInput
from hierviz import trt

needs_trt = pytest.mark.skipif(not trt.available(), reason="torch_tensorrt unusable here")


class _Flatten(nn.Module):
    """reshape(x.shape[0], -1) times an int argument: both are baked in by a static capture."""

    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        return torch.relu(x.reshape(x.shape[0], -1)) * n


@pytest.fixture(scope="module")
def static() -> hv.Partition:
    return hv.partition(_Flatten(), (torch.randn(2, 3, 4), 3), min_block_size=1)


@pytest.fixture(scope="module")
def dynamic() -> hv.Partition:
    gm = hv.capture(_Flatten(), (torch.randn(2, 3, 4), 3),
                    dynamic_shapes={"x": {0: Dim("batch", min=2, max=16)}, "n": None})
    return hv.partition(gm, min_block_size=1)


def test_split_module_matches_the_model_on_captured_inputs(static) -> None:
    x = torch.randn(2, 3, 4)
    out = static.module(x, 3)
    assert out.shape == (2, 12)
    torch.testing.assert_close(out, _Flatten()(x, 3), rtol=0, atol=0)


def test_other_batch_size_of_a_static_capture_raises(static) -> None:
    with pytest.raises(hv.CaptureError) as info:
        static.module(torch.randn(5, 3, 4), 3)
    assert str(info.value).startswith(
        "Partition.module: dim 0 of input 'x' is 5, but the graph was captured with 2 there (a static "
        "dimension). Captured inputs: x: float32[2, 3, 4], n: int = 3.")
    assert "dynamic_shapes" in str(info.value)


def test_other_int_argument_raises(static) -> None:
    with pytest.raises(hv.CaptureError) as info:
        static.module(torch.randn(2, 3, 4), 5)
    assert str(info.value).startswith(
        "Partition.module: input 'n' is int 5, but the graph was captured with n=3 and computes with that value.")
    with pytest.raises(hv.CaptureError, match="input 'n' is float 3.0, but the graph was captured with n=3"):
        static.module(torch.randn(2, 3, 4), 3.0)


DTYPE_FIX = "Cast it to float32 (.to(torch.float32)), or capture again with a float64 'x' to run in float64."
RANK_FIX = "Call it with 3 dimension(s) as captured, or capture again with a 2-dimension 'x'."


def test_other_dtype_or_rank_raises(static) -> None:
    """A dtype or a number of dimensions is not a size: the message says what fixes it (cast, or
    capture with that dtype or rank), never dynamic_shapes, which cannot."""
    with pytest.raises(hv.CaptureError) as info:
        static.module(torch.randn(2, 3, 4, dtype=torch.float64), 3)
    assert str(info.value) == ("Partition.module: input 'x' has dtype float64, but the graph was captured for "
                               "float32. Captured inputs: x: float32[2, 3, 4], n: int = 3. " + DTYPE_FIX)
    with pytest.raises(hv.CaptureError) as info:
        static.module(torch.randn(2, 12), 3)
    assert str(info.value) == ("Partition.module: input 'x' has 2 dimension(s) (2, 12), but the graph was captured "
                               "for 3: [2, 3, 4]. Captured inputs: x: float32[2, 3, 4], n: int = 3. " + RANK_FIX)
    with pytest.raises(hv.CaptureError) as info:
        static.module(torch.randn(2, 3, 4), 5)
    assert str(info.value).endswith("Pass n=3, or capture again with the value you want.")
    assert "dynamic_shapes" not in str(info.value)


class _Add(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + y


def test_dynamic_dimensions_outside_their_range_or_unequal_say_how_to_capture_them() -> None:
    batch = Dim("batch", min=2, max=16)
    gm = hv.capture(_Add(), (torch.randn(4, 3), torch.randn(4, 3)), dynamic_shapes={"x": {0: batch}, "y": {0: batch}})
    p = hv.partition(gm, min_block_size=1)
    with pytest.raises(hv.CaptureError) as info:
        p.module(torch.randn(17, 3), torch.randn(17, 3))
    assert str(info.value).endswith("Call it with sizes inside the captured ranges, or capture again with "
                                    "dynamic_shapes whose Dims allow these sizes "
                                    "(torch.export.Dim(name, min=..., max=...)).")
    with pytest.raises(hv.CaptureError) as info:
        p.module(torch.randn(5, 3), torch.randn(6, 3))
    assert "dim 0 of input 'y' is 6, but it must equal the other dimensions named batch (= 5 in this call)" in str(
        info.value)
    assert str(info.value).endswith("Call it with those dimensions equal, as captured, or capture again with "
                                    "dynamic_shapes giving each its own Dim.")


def test_compiled_loaded_and_measure_give_the_same_dtype_advice(tmp_path) -> None:
    """The compiled model, a loaded one and hv.measure say the same as the split module."""
    from hierviz.latency.deploy import load

    x = torch.randn(2, 3, 4)
    p = hv.partition(_Flatten(), (x, 3), min_block_size=1, priority=("inductor",),
                     support={"inductor": hv.support.inductor()})
    with pytest.raises(hv.MeasureError) as info:
        hv.measure(p, (x.double(), 3), device="cpu", iters=1, warmup=0)
    assert str(info.value).startswith("hv.measure: input 'x' has dtype float64") and str(info.value).endswith(DTYPE_FIX)
    compiled = p.compile(device="cpu", example_inputs=(x, 3))
    for module in (compiled, load(compiled.save(tmp_path / "flatten"))):
        for bad, fix in (((x.double(), 3), DTYPE_FIX), ((torch.randn(2, 12), 3), RANK_FIX)):
            with pytest.raises(hv.CaptureError) as info:
                module(*bad)
            assert str(info.value).endswith(fix) and "dynamic_shapes" not in str(info.value)


def test_missing_or_surplus_arguments_raise(static) -> None:
    with pytest.raises(hv.CaptureError) as info:
        static.module(torch.randn(2, 3, 4))
    assert str(info.value) == ("Partition.module: missing a required argument: 'n'. It takes the model's "
                               "inputs: x: float32[2, 3, 4], n: int = 3.")
    with pytest.raises(hv.CaptureError, match="Partition.module: too many positional arguments"):
        static.module(torch.randn(2, 3, 4), 3, 4)
    torch.testing.assert_close(static.module(torch.ones(2, 3, 4), n=3), torch.full((2, 12), 3.0))


def test_dynamic_batch_works_over_its_range_and_raises_outside(dynamic) -> None:
    model = _Flatten()
    for batch in (2, 5, 16):
        x = torch.randn(batch, 3, 4)
        out = dynamic.module(x, 3)
        assert out.shape == (batch, 12)
        torch.testing.assert_close(out, model(x, 3), rtol=0, atol=0)
    with pytest.raises(hv.CaptureError) as info:
        dynamic.module(torch.randn(17, 3, 4), 3)
    message = str(info.value)
    assert ("dim 0 of input 'x' is 17, outside the range 2..16 captured "
            "for the dynamic dimension Dim(\"batch\")") in message
    assert "Captured inputs: x: float32[batch, 3, 4], n: int = 3 with 2 <= batch <= 16" in message  # the user's name
    with pytest.raises(hv.CaptureError, match="dim 1 of input 'x' is 5, but the graph was captured with 3"):
        dynamic.module(torch.randn(4, 5, 4), 3)


def test_copies_saved_and_compiled_split_modules_keep_the_check(static, tmp_path) -> None:
    torch.save(static.module, tmp_path / "split.pt")  # unpickling re-traces the module's code
    copies = [copy.deepcopy(static.module), torch.load(tmp_path / "split.pt", weights_only=False),
              torch.compile(static.module, backend="eager")]
    for module in copies:
        torch.testing.assert_close(module(torch.ones(2, 3, 4), 3), torch.full((2, 12), 3.0))
        with pytest.raises(hv.CaptureError, match="dim 0 of input 'x' is 5"):
            module(torch.ones(5, 3, 4), 3)


class _Add(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


def test_dimensions_declared_equal_must_stay_equal() -> None:
    batch = Dim("batch", min=2, max=8)
    gm = hv.capture(_Add(), (torch.randn(2, 3), torch.randn(2, 3)),
                    dynamic_shapes={"x": {0: batch}, "y": {0: batch}})
    p = hv.partition(gm, min_block_size=1)
    torch.testing.assert_close(p.module(torch.ones(4, 3), torch.ones(4, 3)), torch.full((4, 3), 2.0))
    with pytest.raises(hv.CaptureError, match="dim 0 of input 'y' is 5, but it must equal the other dimensions "
                                              r"named batch \(= 4 in this call\)"):
        p.module(torch.ones(4, 3), torch.ones(5, 3))


class _Pairs(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x.reshape(-1, 2, 3)).sum(1)


def test_derived_dimension_is_solved_and_bounds_are_part_of_the_capture() -> None:
    model, x = _Pairs(), torch.randn(4, 3)
    small = hv.capture(model, (x,), dynamic_shapes={"x": {0: 2 * Dim("half", max=8)}})
    large = hv.capture(model, (x,), dynamic_shapes={"x": {0: 2 * Dim("half", max=16)}})
    assert small is not large  # the same repr, other bounds: not served from the cache
    p_small, p_large = hv.partition(small, min_block_size=1), hv.partition(large, min_block_size=1)
    x32 = torch.randn(32, 3)
    torch.testing.assert_close(p_large.module(x32), model(x32))
    with pytest.raises(hv.CaptureError, match=r"dim 0 of input 'x' is 32, so half = 16 in 2\*half, outside the "
                                              r"range 2\.\.8 captured for Dim\(\"half\"\)"):
        p_small.module(x32)
    with pytest.raises(hv.CaptureError, match=r"dim 0 of input 'x' is 7, but the graph was captured for sizes "
                                              r"2\*half with half an integer"):
        p_large.module(torch.randn(7, 3))


@needs_trt
def test_upstream_engine_split_module_checks_too() -> None:
    p = hv.partition(_Flatten(), (torch.randn(2, 3, 4), 3), min_block_size=1, engine="torch_tensorrt")
    torch.testing.assert_close(p.module(torch.ones(2, 3, 4), 3), torch.full((2, 12), 3.0))
    with pytest.raises(hv.CaptureError, match="dim 0 of input 'x' is 5"):
        p.module(torch.randn(5, 3, 4), 3)


def test_measure_checks_its_inputs_before_compiling(static) -> None:
    with pytest.raises(hv.MeasureError) as info:
        hv.measure(static, None, device="cpu")
    assert str(info.value).startswith(
        "hv.measure needs example inputs: pass the inputs the model was captured with, e.g. "
        "hv.measure(partition, example_inputs). The graph takes: x: float32[2, 3, 4], n: int = 3.")
    with pytest.raises(hv.MeasureError, match="hv.measure: dim 0 of input 'x' is 5, but the graph was captured with 2"):
        hv.measure(static, (torch.randn(5, 3, 4), 3), device="cpu")
    with pytest.raises(hv.MeasureError, match="hv.measure: input 'n' is int 4"):
        hv.measure(static, (torch.randn(2, 3, 4), 4), device="cpu")


def test_graph_without_metadata_is_split_without_a_check() -> None:
    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.ops.aten.relu.default, (graph.call_function(
        torch.ops.aten.neg.default, (x,)),)))
    gm = torch.fx.GraphModule(nn.Module(), graph)
    p = hv.partition(gm, min_block_size=1)
    assert "check_inputs" not in p.module.code
    for shape in ((2,), (3, 5)):
        x = torch.randn(*shape)
        torch.testing.assert_close(p.module(x), torch.relu(-x))


def test_zoo_models_split_modules_check_their_inputs(zoo_cache) -> None:
    for name in ("tiny_conv", "bert"):
        model, inputs = zoo_cache.load(name)
        p = hv.partition(zoo_cache.capture(name))
        with torch.no_grad():
            torch.testing.assert_close(p.module(*inputs), zoo_cache.eager(name))
        first = inputs[0]
        twice = torch.cat([first, first])
        with pytest.raises(hv.CaptureError, match="dim 0 of input '\\w+' is 2, but the graph was captured with 1"):
            p.module(twice, *inputs[1:])
    _, (ids, *rest) = zoo_cache.load("bert")
    with pytest.raises(hv.CaptureError, match="has dtype float32, but the graph was captured for int64"):
        hv.partition(zoo_cache.capture("bert")).module(ids.float(), *rest)


# ------------------------------------------------------------------ in-place updates (documented)
@needs_trt
def test_buffer_update_is_not_reproduced_and_the_model_is_untouched() -> None:
    model, x = EMA(), torch.randn(4, 3)
    fresh = copy.deepcopy(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = hv.partition(model, (x,), min_block_size=1)
    assert [str(w.message).split(" in place")[0] for w in caught] == [
        "hv.capture: EMA.forward updates buffer(s) 'ema'"]
    assert torch.equal(model.ema, torch.zeros(3))
    first = fresh(x)
    torch.testing.assert_close(p.module(x), first)
    torch.testing.assert_close(p.module(x), first)  # every call starts from the captured value
    assert not torch.allclose(fresh(x), first)  # while the model's second call differs, as warned


@needs_trt
def test_input_update_is_not_reproduced() -> None:
    x = torch.randn(4, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        p = hv.partition(DoublesInput(), (x,), min_block_size=1)
    assert any("writes into input(s) 'x' in place" in str(w.message) for w in caught)
    before = x.clone()
    torch.testing.assert_close(p.module(x), before * 2 + 1)
    assert torch.equal(x, before)


@pytest.mark.slow
def test_hugging_face_gpt2_with_dynamic_sequence_length() -> None:
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=256, n_positions=64,
                                     use_cache=False, bos_token_id=0, eos_token_id=0)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config).eval()
    gm = hv.capture(model, (torch.randint(0, 256, (1, 8)),),
                    dynamic_shapes={"input_ids": {1: Dim("seq", min=2, max=32)}})
    p = hv.partition(gm)
    for length in (8, 16, 32):
        ids = torch.randint(0, 256, (1, length))
        with torch.no_grad():
            got, expected = p.module(ids).logits, model(ids).logits
        assert got.shape == (1, length, 256)
        torch.testing.assert_close(got, expected)
    with pytest.raises(hv.CaptureError, match=r"dim 1 of input 'input_ids' is 40, outside the range 2\.\.32"):
        p.module(torch.randint(0, 256, (1, 40)))
    with pytest.raises(hv.CaptureError, match="dim 0 of input 'input_ids' is 2, but the graph was captured with 1"):
        p.module(torch.randint(0, 256, (2, 8)))


def test_without_torch_tensorrt_updates_are_dropped_the_same_way(monkeypatch) -> None:
    from hierviz.capturing.aten_capture import CaptureWarning

    monkeypatch.setattr(trt, "available", lambda: False)
    model, x = EMA(), torch.randn(4, 3)
    first = copy.deepcopy(model)(x)
    with pytest.warns(CaptureWarning, match="EMA.forward updates buffer\\(s\\) 'ema' in place"):
        p = hv.partition(model, (x,), min_block_size=1)
    assert "copy_" not in p.graph.code
    torch.testing.assert_close(p.module(x), first)
    torch.testing.assert_close(p.module(x), first)
    assert torch.equal(model.ema, torch.zeros(3))
    with pytest.warns(CaptureWarning, match="writes into input\\(s\\) 'x' in place"):
        p = hv.partition(DoublesInput(), (x,), min_block_size=1)
    before = x.clone()
    torch.testing.assert_close(p.module(x), before * 2 + 1)
    assert torch.equal(x, before)


def test_measure_leaves_a_self_updating_model_and_its_inputs_unchanged() -> None:
    no_backend = {"tensorrt": hv.support.ops([])}  # every subgraph eager: nothing to compile on a CPU
    model, x = EMA().eval(), torch.randn(4, 3)
    with pytest.warns(UserWarning):
        p = hv.partition(model, (x,), support=no_backend)
    m = hv.measure(p, (x,), device="cpu", warmup=1, iters=3, per_subgraph=False)
    assert m.outputs_match is True and m.baseline_ms is not None
    assert torch.equal(model.ema, torch.zeros(3))

    x_before = x.clone()
    with pytest.warns(UserWarning):
        p = hv.partition(DoublesInput(), (x,), support=no_backend)
    m = hv.measure(p, (x,), device="cpu", warmup=1, iters=3, per_subgraph=False)
    assert m.outputs_match is True and m.baseline_ms is not None
    assert torch.equal(x, x_before)


def test_dynamic_dimension_errors_name_the_users_dim() -> None:
    """Messages name Dim("seq") as the user declared it, not torch's symbol (s50), also for a
    name sympy would read as its own constant (E, N)."""
    model, x = _Pairs(), torch.randn(4, 3)
    gm = hv.capture(model, (x,), dynamic_shapes={"x": {0: 2 * Dim("E", max=8)}})
    p = hv.partition(gm, min_block_size=1)
    torch.testing.assert_close(p.module(torch.ones(6, 3)), model(torch.ones(6, 3)))
    with pytest.raises(hv.CaptureError) as info:
        p.module(torch.randn(32, 3))
    assert str(info.value).startswith(
        "Partition.module: dim 0 of input 'x' is 32, so E = 16 in 2*E, outside the range 2..8 captured for "
        "Dim(\"E\"). Captured inputs: x: float32[2*E, 3] with 2 <= E <= 8.")
    seq = hv.partition(_Add(), (torch.randn(4, 3), torch.randn(4, 3)),
                       dynamic_shapes={"x": {0: Dim("seq", max=16)}, "y": {0: Dim("seq", max=16)}})
    with pytest.raises(hv.CaptureError, match=r"^Partition.module: dim 0 of input 'x' is 17, outside the range "
                                              r"0\.\.16 captured for the dynamic dimension Dim\(\"seq\"\)\. "
                                              r"Captured inputs: x: float32\[seq, 3\], y: float32\[seq, 3\]"):
        seq.module(torch.randn(17, 3), torch.randn(17, 3))
