"""hv.capture(..., ir="torch_compile"): dynamo's graphs in execution order, each lowered as
Torch-TensorRT's torch.compile backend lowers it, with the breaks between them (dynamo's reason,
type, hints and the user's line); the model untouched and not left compiled; clear errors."""

from __future__ import annotations

import copy

import pytest
import torch

import hierviz as hv
from hierviz.capturing import aten_capture
from dynamo_models import IfOnSum, ItemArith, NoBreak, Prints, DetachOnly, break_line, load

EXPECTED = {  # model -> (its class, the break's gb_type starts with, the marked line)
    "if_on_sum": (IfOnSum, "Data-dependent branching", "if"),
    "prints": (Prints, "Failed to trace builtin operator", "print"),
    "item_arith": (ItemArith, "Unsupported Tensor.item() call", "item"),
}


@pytest.fixture(scope="module")
def captured() -> dict:
    """Each toy's model, inputs, state before capture, and its capture (once per module)."""
    out = {}
    for name in EXPECTED:
        model, inputs = load(name)
        state = copy.deepcopy(model.state_dict())
        out[name] = (model, inputs, state, hv.capture(model, inputs, ir="torch_compile"))
    return out


@pytest.mark.parametrize("name", list(EXPECTED))
def test_one_break_between_two_graphs_at_the_users_line(captured, name) -> None:
    cls, gb_type, mark = EXPECTED[name]
    _, _, _, cap = captured[name]
    assert isinstance(cap, hv.DynamoCapture)
    assert [g.index for g in cap.graphs] == [0, 1]
    assert len(cap.breaks) == 1
    b = cap.breaks[0]
    assert isinstance(b, hv.GraphBreak)
    assert (b.after_graph, b.ended_graph) == (0, True)
    assert b.gb_type.startswith(gb_type)
    assert b.explanation and b.hints  # dynamo's explanation and at least one hint
    assert b.file == __import__("dynamo_models").__file__
    assert b.line == break_line(cls, mark)
    assert f"# break: {mark}" in b.code
    assert b.function == "forward"
    assert cap.graphs[0].ended_by is b and cap.graphs[1].ended_by is None
    assert all(g.calls == 1 for g in cap.graphs)


def test_graphs_hold_the_ops_and_values_of_each_side(captured) -> None:
    _, inputs, _, cap = captured["prints"]
    first, second = cap.graphs
    # the first graph: Linear, GELU, Linear, LayerNorm; the second: Linear, ReLU, Linear, softmax
    assert "torch.ops.aten.gelu.default" in first.ops and "torch.ops.aten.gelu.default" not in second.ops
    assert "torch.ops.aten._softmax.default" in second.ops and "torch.ops.aten._softmax.default" not in first.ops
    assert any(v.shape == (2, 16) and v.dtype == "float32" for v in first.inputs)  # the user's x
    assert [v.shape for v in first.outputs] == [(2, 32)]
    assert [v.shape for v in second.outputs] == [(2, 8)]
    # each graph's recorded first-call values run its aten graph: the second graph gives the model's output
    model = captured["prints"][0]
    with torch.no_grad():
        expected = model(*inputs)
        got = second.graph(*second.example_inputs)
    got = got[0] if isinstance(got, (list, tuple)) else got
    torch.testing.assert_close(got, expected)


def test_the_lowering_is_torch_tensorrts(captured) -> None:
    """Torch-TensorRT's lowering (post_lowering, its decompositions) ran on each graph: the
    graph is aten-level, and with torch_tensorrt the Linear's addmm/permute form is there."""
    for _, _, _, cap in captured.values():
        for g in cap.graphs:
            assert aten_capture.is_aten_graph(g.graph)
            assert g.ops and all(op.startswith("torch.ops.") or op.startswith("_operator.") for op in g.ops)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_model_untouched_and_not_left_compiled(captured, name) -> None:
    model, inputs, state, _ = captured[name]
    after = model.state_dict()
    assert after.keys() == state.keys()
    assert all(torch.equal(after[k], state[k]) for k in state)
    assert not model.training
    assert type(model).__name__ == EXPECTED[name][0].__name__
    from torch._C._dynamo.eval_frame import _debug_get_cache_entry_list

    assert _debug_get_cache_entry_list(type(model).forward.__code__) == []  # dynamo's caches reset


def test_inputs_and_rng_left_as_they_were() -> None:
    model, (x,) = load("if_on_sum")
    model.train()  # batch norm updates its running stats in train mode: on the copy only
    before_x, before_stats = x.clone(), model.bn.running_mean.clone()
    torch.manual_seed(7)
    expected_draw = torch.rand(3)
    torch.manual_seed(7)
    hv.capture(model, (x,), ir="torch_compile")
    assert torch.equal(torch.rand(3), expected_draw)
    assert torch.equal(x, before_x)
    assert torch.equal(model.bn.running_mean, before_stats)
    assert model.training


def test_no_break_gives_one_graph() -> None:
    cap = hv.capture(NoBreak(), (torch.randn(2, 4),), ir="torch_compile")
    assert len(cap.graphs) == 1 and cap.breaks == ()
    assert cap.graphs[0].ended_by is None


def test_second_capture_comes_from_memory(captured) -> None:
    model, inputs, _, cap = captured["prints"]
    assert hv.capture(model, inputs, ir="torch_compile") is cap


def test_a_graph_with_nothing_to_partition_is_recorded() -> None:
    cap = hv.capture(DetachOnly(), (torch.randn(2, 4),), ir="torch_compile")
    assert len(cap.graphs) == 2 and len(cap.breaks) == 1
    assert not cap.graphs[0].has_compute and cap.graphs[0].ops == ()
    assert cap.graphs[1].has_compute


def test_wrong_ir_and_arguments_say_what_to_do() -> None:
    model, inputs = load("prints")
    with pytest.raises(hv.ConfigError, match="torch_compile"):
        hv.capture(model, inputs, ir="torchcompile")
    with pytest.raises(hv.ConfigError, match="dynamic=False"):
        hv.capture(model, inputs, ir="torch_compile", dynamic_shapes={"x": {0: torch.export.Dim("b")}})
    ep = torch.export.export(NoBreak(), (torch.randn(2, 4),))
    with pytest.raises(hv.CaptureError, match="nn.Module itself"):
        hv.capture(ep, (torch.randn(2, 4),), ir="torch_compile")


def test_a_model_that_fails_to_run_is_a_capture_error() -> None:
    model, _ = load("prints")
    with pytest.raises(hv.CaptureError, match="model must run on the example inputs"):
        hv.capture(model, (torch.randn(2, 5),), ir="torch_compile")  # wrong feature size


@pytest.mark.slow
def test_same_graphs_in_every_process(run_python) -> None:
    """Two fresh interpreters with different hash seeds capture the same graphs (code, ops,
    inputs, outputs) and the same breaks (one toy: each interpreter imports torch_tensorrt)."""
    code = """
        import hashlib, torch, hierviz as hv
        from dynamo_models import load
        for name in ("if_on_sum",):
            cap = hv.capture(*load(name), ir="torch_compile")
            for g in cap.graphs:
                text = g.graph.code + repr((g.ops, g.inputs, g.outputs, g.function, g.line, g.calls))
                print(name, g.index, hashlib.sha256(text.encode()).hexdigest())
            for b in cap.breaks:
                print(name, b.after_graph, b.ended_graph, b.gb_type, b.line, b.function, b.hints)
    """
    tests = str(__import__("pathlib").Path(__file__).parents[1])
    runs = [run_python(code, path_first=[tests], env={"PYTHONHASHSEED": seed}, timeout=600) for seed in ("1", "2")]
    for run in runs:
        assert run.returncode == 0, run.stderr[-2000:]
    assert runs[0].stdout == runs[1].stdout
    lines = [line for line in runs[0].stdout.splitlines() if line.split(" ")[0] in EXPECTED]
    assert len(lines) == 2 + 1  # two graphs and one break
