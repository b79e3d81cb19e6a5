"""hv.measure and Partition.compile say, as the build does (hierviz.building.frozen_random), which
random ops a TensorRT engine holds: Torch-TensorRT evaluates aten.rand/randn/randperm once while
it builds the engine, so every run gives the same values. No GPU here: a stand-in compiler for
the tensorrt backend compiles the subgraphs (what is said comes from the plan, not from
TensorRT's messages)."""

from __future__ import annotations

import warnings

import pytest
import torch

import hierviz as hv
from hierviz.building.frozen_random import FrozenRandom
from hierviz.latency import CompileCache, MeasureWarning

from tests.building.test_frozen_random import NOTE, RAND, Noisy  # the model and the words the build says


def stand_in() -> hv.latency.Compiler:
    """Compiles a 'tensorrt' subgraph on the CPU: the graph as it is (weights baked, as TensorRT's)."""
    return hv.latency.Compiler(backend="tensorrt", compile=lambda gm, inputs, options, persist: gm,
                               lifts_weights=False)


X = (torch.randn(2, 8),)
RUN = dict(device="cpu", warmup=0, iters=1, per_subgraph=False, baseline=False, check=False)


@pytest.fixture(scope="module")
def noisy() -> hv.Partition:
    return hv.partition(Noisy(), X, min_block_size=1)


def test_measure_names_the_random_op_a_tensorrt_engine_freezes(noisy) -> None:
    assert noisy.backend_of("rand") == "tensorrt"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = hv.measure(noisy, X, trt_settings={"truncate_double": True}, compilers={"tensorrt": stand_in()},
                       cache=CompileCache(), **RUN)
    assert m.frozen_random == (RAND,)
    assert NOTE in m.warnings
    said = [str(w.message) for w in caught if issubclass(w.category, MeasureWarning)]
    assert len(said) == 1 and NOTE in said[0]


def test_the_compiled_split_and_compiled_model_name_it(noisy) -> None:
    from hierviz.latency.compiling.compiled_split import compile_split

    split = compile_split(noisy, X, "cpu", compilers={"tensorrt": stand_in()}, cache=CompileCache())
    assert split.frozen_random == (RAND,) and NOTE in split.warnings
    model = noisy.compile("cpu", example_inputs=X, compilers={"tensorrt": stand_in()}, cache=CompileCache())
    assert model.frozen_random == (RAND,)


def test_random_op_left_in_pytorch_or_fallen_back_is_not_named(noisy) -> None:
    moved = hv.partition(noisy, torch_executed_ops={"aten.rand.default"})
    m = hv.measure(moved, X, compilers={"tensorrt": stand_in()}, cache=CompileCache(), **RUN)
    assert m.frozen_random == () and not [w for w in m.warnings if "evaluates once" in w]

    def refuse(gm, inputs, options, persist):
        raise RuntimeError("no engine")

    failing = hv.latency.Compiler(backend="tensorrt", compile=refuse, lifts_weights=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeasureWarning)
        fell = hv.measure(noisy, X, compilers={"tensorrt": failing}, cache=CompileCache(), on_error="fallback", **RUN)
    assert fell.fallbacks == ("_run_on_acc_tensorrt_0",) and fell.frozen_random == ()


def test_a_saved_compiled_model_records_them_and_says_so_when_loaded(noisy, tmp_path, monkeypatch) -> None:
    import json

    from hierviz.latency import deploy
    from hierviz.latency.compiling import backend_compilers

    monkeypatch.setitem(backend_compilers._REGISTRY, "tensorrt", stand_in())  # save and load compile by name
    model = noisy.compile("cpu", example_inputs=X, cache=CompileCache())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeasureWarning)  # the stand-in writes no artifact: compiled again at load
        folder = model.save(tmp_path / "noisy")
    saved = json.loads((folder / "hierviz.json").read_text())
    assert saved["frozen_random"] == [{"subgraph": RAND.subgraph, "node": "rand", "op": RAND.op, "graph": ""}]
    assert deploy.load(folder, "cpu").frozen_random == (RAND,)


@pytest.mark.slow  # torch.compile captures and compiles the model: seconds of CPU
def test_graph_by_graph_the_measurement_names_the_graph() -> None:
    mp = hv.partition(Noisy(), X, min_block_size=1, ir="torch_compile")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MeasureWarning)
        m = hv.measure(mp, X, compilers={"tensorrt": stand_in()}, cache=CompileCache(), **RUN)
    in_g0 = FrozenRandom(RAND.subgraph, RAND.node, RAND.op, graph="g0")
    assert m.frozen_random == (in_g0,)
    assert "g0/" + NOTE in m.warnings and f"graph g0: {NOTE}" not in m.warnings
