"""The run stage (hierviz.building.graph_run): the lowered graph runs once in PyTorch as its compiled
code, and only a graph that raises is run again node by node, to name the node that failed."""

from __future__ import annotations

import ctypes
import os

import pytest
import torch
from torch import nn

from hierviz.building.graph_run import first_failure, first_failure_in_profile

SLICE = ("RuntimeError: expected src to have a size equal to the slice of self. src size = [2, 1, 4], "
         "slice size = [2, 0, 4]")


class Runs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, scale: torch.Tensor | None = None) -> torch.Tensor:
        y = self.lin(x).relu()
        return y if scale is None else y * scale


class SliceScatterBreaks(nn.Module):
    """What Torch-TensorRT's select_scatter lowering makes of `h[:, -1] = ...`: slice_scatter(start=-1,
    end=0), which PyTorch refuses to run; the relu before it runs."""

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        h = torch.ops.aten.relu.default(h)
        src = torch.ops.aten.slice.Tensor(h, 1, 0, 1)
        out = torch.ops.aten.slice_scatter.default(h, src, 1, -1, 0)
        return torch.ops.aten.mul.Tensor(out, 2)


THREADS_SEEN: list[int] = []


@torch.fx.wrap
def threads_seen(x: torch.Tensor) -> torch.Tensor:
    """x, noting how many threads PyTorch's kernels would use here."""
    THREADS_SEEN.append(torch.get_num_threads())
    return x


class NotesThreads(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return threads_seen(x).relu()


class NotesThreadsThenBreaks(SliceScatterBreaks):
    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return super().forward(threads_seen(h))


@pytest.fixture
def interpreted(monkeypatch: pytest.MonkeyPatch) -> list[torch.nn.Module]:
    """The modules torch.fx's Interpreter ran, in order."""
    seen: list[torch.nn.Module] = []
    real = torch.fx.Interpreter.run

    def spy(self: torch.fx.Interpreter, *args: object, **kwargs: object) -> object:
        seen.append(self.module)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(torch.fx.Interpreter, "run", spy)
    return seen


def _exported(model: nn.Module, *args: torch.Tensor, **kwargs: torch.Tensor) -> torch.fx.GraphModule:
    """The graph torch.export makes (its forward takes the model's arguments, flattened by pytree)."""
    return torch.export.export(model, args, kwargs).module()


def test_a_graph_that_runs_is_never_interpreted_node_by_node(interpreted):
    x, scale = torch.randn(2, 4), torch.randn(2, 4)
    model = Runs().eval()
    for graph, inputs in ((_exported(model, x), [x]), (_exported(model, x, scale=scale), [x, scale]),
                          (torch.fx.symbolic_trace(model), [x, scale])):
        assert first_failure(graph, inputs) is None
        assert first_failure_in_profile(graph, inputs) is None
    assert interpreted == []


def test_a_graph_that_raises_names_the_first_node_that_failed(interpreted):
    graph = torch.fx.symbolic_trace(SliceScatterBreaks())
    failure = first_failure(graph, [torch.randn(2, 3, 4)])
    assert failure is not None
    assert (failure.node, failure.exception, failure.error) == ("slice_scatter_default", "RuntimeError", SLICE)
    assert interpreted == [graph]  # run again node by node only to name the node


def test_the_run_does_not_change_the_graph_or_its_inputs():
    graph = _exported(Runs().eval(), torch.randn(2, 4))
    code, x = graph.code, torch.randn(2, 4)
    before = x.clone()
    assert first_failure(graph, [x]) is None
    assert graph.code == code and torch.equal(x, before)


@pytest.mark.parametrize(("model", "fails"), [(NotesThreads(), False), (NotesThreadsThenBreaks(), True)])
def test_the_graph_runs_on_one_thread_and_leaves_pytorchs_threads_as_they_were(model, fails):
    """One pass whose cost on one thread is a tenth of the engine's build: PyTorch's threads on a
    busy machine wait for each other (resnet50: 0.25 s on one thread, 0.6 to 0.9 s on two)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        THREADS_SEEN.clear()
        failure = first_failure(torch.fx.symbolic_trace(model), [torch.randn(2, 3, 4)])
        assert (failure is not None) == fails
        assert THREADS_SEEN == ([1, 1] if fails else [1])  # the node-by-node run of a failure too
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def _mkl_dynamic() -> tuple[object, object]:
    """MKL's (get, set) of its dynamic threading, as linked into torch's CPU library."""
    path = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    try:
        lib = ctypes.CDLL(path)
        return lib.mkl_serv_get_dynamic, lib.MKL_Set_Dynamic
    except (OSError, AttributeError):
        pytest.skip("no MKL linked into torch's CPU library here")


@pytest.mark.parametrize(("model", "fails"), [(NotesThreads(), False), (NotesThreadsThenBreaks(), True)])
def test_the_run_leaves_mkls_dynamic_threading_on(model, fails):
    """torch.set_num_threads turns MKL's dynamic threading off for the whole process: after it,
    every small op MKL serves waits for MKL's other threads (on a busy machine, resnet50's
    batch-norm folding in Torch-TensorRT took 0.2-0.6 s instead of 0.02 s). The run is on one
    thread without it."""
    get, put = _mkl_dynamic()
    put(1)  # MKL's default
    THREADS_SEEN.clear()
    failure = first_failure(torch.fx.symbolic_trace(model), [torch.randn(2, 3, 4)])
    assert (failure is not None) == fails
    assert THREADS_SEEN == ([1, 1] if fails else [1])
    assert get() == 1
