"""Issue 42, defect 3: where Torch-TensorRT's torch.compile backend fails on one graph, hierviz
answers as upstream does, by exception class (`_pretraced_backend` in its backends.py):
- an AssertionError, RuntimeError or TypeError (a subclass too: NotImplementedError is a
  RuntimeError) makes that one graph run eagerly, and compilation goes on: the capture keeps
  the graph, says "runs eagerly: Torch-TensorRT's backend failed on it (...)", counts none of its
  ops as accelerated, and the other graphs partition normally;
- any other exception leaves the backend, and the real torch.compile raises
  BackendCompilerFailed: hv.capture raises a CaptureError that says so.
The failure is made by making the lowering of the second graph raise."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import hierviz as hv
from hierviz.capturing.by_graph import dynamo_capture
from hierviz.capturing.target_device import DEFAULT_TARGET, lowering_for

sys.path.insert(0, str(Path(__file__).parents[1]))
from dynamo_models import Prints


def _failing_second_graph(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    real = dynamo_capture.lowered
    calls = {"n": 0}

    def lowered(gm, sample_inputs, target):
        calls["n"] += 1
        if calls["n"] == 2:
            raise exc
        return real(gm, sample_inputs, target)

    monkeypatch.setattr(dynamo_capture, "lowered", lowered)


def _model() -> tuple[torch.nn.Module, tuple]:
    torch.manual_seed(0)
    return Prints().eval(), (torch.randn(2, 16),)


@pytest.mark.parametrize("exc", [RuntimeError("no lowering for this op"), AssertionError("shape check failed"),
                                 TypeError("bad argument"), NotImplementedError("not implemented for Meta")],
                         ids=lambda e: type(e).__name__)
def test_a_caught_failure_runs_that_graph_eagerly_and_the_others_partition(monkeypatch, capsys, exc) -> None:
    _failing_second_graph(monkeypatch, exc)
    model, x = _model()
    mp = hv.partition(hv.capture(model, x, ir="torch_compile", cache=False))
    said = f"runs eagerly: Torch-TensorRT's backend failed on it ({type(exc).__name__}: {exc})"
    first, second = mp.capture.graphs
    assert (first.fell_back, second.fell_back) == ("", said)
    assert len(mp) == 2 and len(mp.breaks) == 1
    # the first graph partitions as it always does; the second accelerates nothing
    assert mp.graphs[0].stats["accelerated_ops"] > 0
    assert mp.graphs[1].stats["compute_ops"] > 0
    assert mp.graphs[1].stats["accelerated_ops"] == 0 and mp.graphs[1].stats["acc_subgraphs"] == 0
    s = mp.stats
    assert s["accelerated_ops"] == mp.graphs[0].stats["accelerated_ops"]
    assert s["graphs_run_eagerly"] == 1
    assert "1 graph runs eagerly (Torch-TensorRT's backend failed on g1)" in repr(mp)
    report = mp.report()
    assert f"g1 {said}" in report.replace("\n", " ") or said in report
    assert "Graphs run eagerly after Torch-TensorRT's backend failed: 1 (g1)" in report
    assert said in mp.graphs[1].report()  # the graph's own report says it too
    node = next(n for n in mp.nodes()["name"] if n.startswith("g1/") and mp.backend_of(n) == "torch")
    assert mp.reason_of(node) == said
    # no setting accelerates a graph run eagerly: its ops are no blocker; the picture draws both graphs
    table = mp.blockers()
    assert not any("g1" in str(g) for g, kind in zip(table["graph"], table["kind"]) if kind != "graph break")
    assert mp.graphs[1].blockers().empty
    assert "g1" in mp.render().source
    assert "capture" not in capsys.readouterr().err.lower()


def test_a_graph_run_eagerly_is_kept_in_a_saved_partition(monkeypatch, tmp_path) -> None:
    _failing_second_graph(monkeypatch, RuntimeError("no lowering for this op"))
    model, x = _model()
    mp = hv.partition(hv.capture(model, x, ir="torch_compile", cache=False))
    loaded = hv.load_partition(mp.save(tmp_path / "p.json"))
    said = "runs eagerly: Torch-TensorRT's backend failed on it (RuntimeError: no lowering for this op)"
    assert loaded.capture.graphs[1].fell_back == said
    assert loaded.stats["graphs_run_eagerly"] == 1
    assert "Graphs run eagerly after Torch-TensorRT's backend failed: 1 (g1)" in loaded.report()


@pytest.mark.parametrize("exc", [ValueError("Cannot view a tensor with shape (1, 2) "
                                            "as a tensor with shape (1, 32, 32)"),
                                 KeyError("missing"), ImportError("no module")],
                         ids=lambda e: type(e).__name__)
def test_any_other_failure_refuses_as_torch_compile_raises_backend_compiler_failed(monkeypatch, exc) -> None:
    _failing_second_graph(monkeypatch, exc)
    model, x = _model()
    with pytest.raises(hv.CaptureError) as info:
        hv.capture(model, x, ir="torch_compile", cache=False)
    text = str(info.value)
    first = text.splitlines()[0]
    assert first.startswith(f"Torch-TensorRT's backend failed on graph 1 of Prints: {type(exc).__name__}: ")
    assert "BackendCompilerFailed" in text
    assert "catches only AssertionError, RuntimeError, TypeError" in text
    assert "runs such a graph in PyTorch" not in text
    assert isinstance(info.value.__cause__, type(exc))


@pytest.mark.parametrize("exc", [RuntimeError, ValueError], ids=lambda e: e.__name__)
def test_the_real_torch_compile_answers_the_same(monkeypatch, exc) -> None:
    """Upstream's own backend (torch.compile(backend="torch_tensorrt"), hierviz.trt's reference
    run stopped at its partitioner) given the same failure in Torch-TensorRT's post_lowering:
    a RuntimeError runs the second graph eagerly (it never reaches the partitioner) and the run
    goes on; a ValueError is BackendCompilerFailed. hv.capture says the same."""
    from hierviz import trt

    if not trt.available():
        pytest.skip("needs torch_tensorrt: the reference is its own backend")
    import torch_tensorrt.dynamo.lowering as lowering
    from torch_tensorrt.dynamo.backend import backends

    real = lowering.post_lowering

    def post_lowering(gm, *args, **kwargs):
        if any("softmax" in str(n.target) for n in gm.graph.nodes):
            raise exc("this lowering refuses softmax")
        return real(gm, *args, **kwargs)

    monkeypatch.setattr(backends, "post_lowering", post_lowering)
    monkeypatch.setattr(lowering, "post_lowering", post_lowering)
    model, x = _model()
    if exc is RuntimeError:
        with trt.stopped_at_partitioner() as graphs:
            trt.compile_dryrun(model, x, lowering=lowering_for(DEFAULT_TARGET), min_block_size=1)
        assert [g.reached for g in graphs] == [True, False]
        cap = hv.capture(model, x, ir="torch_compile", cache=False)
        assert [g.fell_back for g in cap.graphs] == [
            "", "runs eagerly: Torch-TensorRT's backend failed on it (RuntimeError: this lowering refuses softmax)"]
    else:
        with pytest.raises(torch._dynamo.exc.BackendCompilerFailed), trt.stopped_at_partitioner():
            trt.compile_dryrun(model, x, lowering=lowering_for(DEFAULT_TARGET), min_block_size=1)
        with pytest.raises(hv.CaptureError, match="BackendCompilerFailed"):
            hv.capture(model, x, ir="torch_compile", cache=False)
