"""Nested inputs (dicts, lists, tuples) are checked like flat ones: a call structured unlike the
capture (a missing or surplus dict key, a list for a dict, a tuple of the wrong length) is a
CaptureError naming the path, from the split module, the compiled model and a loaded one (a
MeasureError from hv.measure)."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.latency.deploy import load


class DictNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.l = torch.nn.Linear(4, 4)

    def forward(self, d: dict, pair: tuple) -> torch.Tensor:
        return self.l(d["a"]) + d["b"] + pair[0] * pair[1][0] - pair[1][1]


class StarNet(torch.nn.Module):
    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return args[0] + args[1][0] * args[1][1]


T = torch.ones(2, 4)
GOOD = ({"a": T, "b": T}, (T, (T, T)))
BAD = [
    (({"a": T}, (T, (T, T))), 'd["b"] is missing'),
    (({"a": T, "b": T, "c": T}, (T, (T, T))), 'd["c"] was not in the captured inputs and would be ignored'),
    (([T, T], (T, (T, T))), "d is a list of 2, but the graph was captured with a dict with keys \"a\", \"b\" there"),
    (({"a": T, "b": T}, (T,)), "pair is a tuple of 1, but the graph was captured with a tuple of 2 there"),
    (({"a": T, "b": T}, [T, (T, T), T]), "pair is a list of 3, but the graph was captured with a tuple of 2 there"),
    (({"a": T, "b": T}, (T, (T,))), "pair[1] is a tuple of 1, but the graph was captured with a tuple of 2 there"),
    (({"a": T, "b": T}, ((T, T), (T, T))), "pair[0] is a tuple of 2, but the graph was captured with a single value"),
]


@pytest.fixture(scope="module")
def part():
    torch.manual_seed(0)
    model = DictNet().eval()
    return model, hv.partition(model, GOOD, priority=("inductor",), support={"inductor": hv.support.inductor()},
                               min_block_size=1)


@pytest.mark.parametrize(("inputs", "problem"), BAD)
def test_split_module_names_the_path_that_differs(part, inputs, problem) -> None:
    _, p = part
    with pytest.raises(hv.CaptureError) as info:
        p.module(*inputs)
    assert str(info.value).startswith(f"Partition.module: {problem}")
    assert "Call it with inputs structured like the example inputs." in str(info.value)


@pytest.mark.parametrize(("inputs", "problem"), BAD)
def test_measure_names_the_path_that_differs(part, inputs, problem) -> None:
    """hv.measure checks nested inputs before compiling anything, naming the path like the split
    module (it said '1 input(s) were given, the graph takes 2' for a missing dict key)."""
    _, p = part
    with pytest.raises(hv.MeasureError) as info:
        hv.measure(p, inputs, device="cpu", iters=1, warmup=0)
    assert str(info.value).startswith(f"hv.measure: {problem}")


def test_split_module_still_computes_the_model_on_captured_structure(part) -> None:
    model, p = part
    torch.testing.assert_close(p.module(*GOOD), model(*GOOD))
    torch.testing.assert_close(p.module(d={"b": T, "a": T}, pair=[T, [T, T]]), model(*GOOD))  # key order, lists


def test_star_args_paths_are_numbered() -> None:
    p = hv.partition(StarNet(), (T, (T, T)))
    with pytest.raises(hv.CaptureError, match=r"^Partition.module: args\[1\] is a tuple of 1, but the graph was "
                                              r"captured with a tuple of 2 there"):
        p.module(T, (T,))
    with pytest.raises(hv.CaptureError, match=r"^Partition.module: args\[1\]\[0\] is a tuple of 1, but the graph was "
                                              r"captured with a single value there"):
        p.module(T, ((T,), T))


@pytest.mark.slow
def test_compiled_and_loaded_models_check_structure_alike(part, tmp_path) -> None:
    model, p = part
    compiled = p.compile(device="cpu", example_inputs=GOOD)
    torch.testing.assert_close(compiled(*GOOD), model(*GOOD))
    again = load(compiled.save(tmp_path / "nested"))
    for module in (compiled, again):
        for inputs, problem in BAD:
            with pytest.raises(hv.CaptureError) as info:
                module(*inputs)
            assert str(info.value).startswith(f"CompiledModel: {problem}")
