"""Partition.compile: the compiled split model a user deploys (TorchInductor + eager on the
CPU), its outputs equal to the model's, saved to a folder and loaded back without compiling."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.latency.deploy import CompiledModel, load

RELU = "torch.ops.aten.relu.default"


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> dict:
        y = torch.relu(self.conv(x)) * 2
        return {"logits": self.fc(torch.sigmoid(y).mean((2, 3))), "features": y}


@pytest.fixture(scope="module")
def split():
    torch.manual_seed(0)
    model, inputs = Net().eval(), (torch.randn(1, 3, 8, 8),)
    part = hv.partition(model, inputs, priority=("inductor",), support={"inductor": hv.support.inductor()},
                        min_block_size=1, torch_executed_ops={RELU})
    return model, inputs, part


@pytest.mark.slow
def test_compiled_model_gives_the_models_outputs(split) -> None:
    model, inputs, part = split
    compiled = part.compile(example_inputs=inputs)
    assert isinstance(compiled, CompiledModel) and compiled.config == part.config
    ran = {tag: r.ran for tag, r in compiled.records.items()}
    assert sorted(set(ran.values())) == ["inductor", "torch"] and not compiled.fallbacks
    with torch.no_grad():
        want, got = model(*inputs), compiled(*inputs)
    assert set(got) == {"logits", "features"}          # the model's own output structure
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=1e-4, atol=1e-5)
    other = torch.randn(1, 3, 8, 8)                    # compiled once, runs on any input of that shape
    with torch.no_grad():
        torch.testing.assert_close(compiled(other)["logits"], model(other)["logits"], rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_save_and_load_without_compiling_again(split, tmp_path) -> None:
    model, inputs, part = split
    compiled = part.compile()                          # example inputs made from the graph's shapes
    folder = compiled.save(tmp_path / "net")
    assert {"graph.json", "weights.pt", "inputs.pt", "hierviz.json", "artifacts"} <= {p.name for p in folder.iterdir()}
    again = load(folder, trusted=True)                 # the folder is ours: its TorchInductor code may run
    status = {tag: r.status for tag, r in again.records.items()}
    assert [s for t, s in status.items() if t.startswith("_run_on_acc_inductor")] and \
        all(s == "cached" for t, s in status.items() if t.startswith("_run_on_acc_inductor"))  # from the folder
    assert again.config == part.config
    with torch.no_grad():
        torch.testing.assert_close(again(*inputs)["logits"], model(*inputs)["logits"], rtol=1e-4, atol=1e-5)


def test_load_of_a_wrong_folder_says_what_to_do(tmp_path) -> None:
    with pytest.raises(hv.SavedModelNotFoundError, match="no saved hierviz model"):
        load(tmp_path)


# ----------------------------------------------------------------------------- dynamic shapes
class ConvBN(torch.nn.Module):
    """Conv -> BN -> ReLU -> Conv (issue 21's repro)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 4, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(torch.relu(self.bn(self.conv(x))))


@pytest.fixture(scope="module")
def dynamic():
    with torch.random.fork_rng():
        torch.manual_seed(0)
        model, x = ConvBN().eval(), torch.randn(2, 3, 8, 8)
    batch = torch.export.Dim("batch", min=1, max=16)
    gm = hv.capture(model, (x,), dynamic_shapes=({0: batch},))
    part = hv.partition(gm, priority=("inductor",), support={"inductor": hv.support.inductor()}, min_block_size=1)
    return model, x, part


def _sizes_equal_eager(compiled, model, sizes=(1, 5, 16)) -> None:
    for b in sizes:
        x = torch.randn(b, 3, 8, 8, generator=torch.Generator().manual_seed(b))
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)


def _out_of_range(fn) -> str:
    with pytest.raises(hv.CaptureError) as info:
        fn(torch.randn(17, 3, 8, 8))
    return str(info.value)


def test_dynamic_capture_compiles_saves_and_loads_for_every_size_in_range(dynamic, tmp_path) -> None:
    from hierviz.latency import CompileCache

    model, x, part = dynamic
    compiled = part.compile(device="cpu", cache=CompileCache())  # example inputs from the capture's own sizes
    _sizes_equal_eager(compiled, model)
    # outside the declared range: the split module's own CaptureError, word for word
    message = _out_of_range(part.module)
    assert "outside the range 1..16 captured for the dynamic dimension Dim(\"batch\")" in message
    assert _out_of_range(compiled) == message
    again = load(compiled.save(tmp_path / "dyn"), trusted=True)
    assert all(r.status == "cached" for t, r in again.records.items() if t.startswith("_run_on_acc"))  # no recompile
    _sizes_equal_eager(again, model)
    assert _out_of_range(again) == message
    # hv.measure times the same dynamic model, at the example size
    m = hv.measure(part, (x,), warmup=0, iters=2, per_subgraph=False, cache=CompileCache())
    assert m.outputs_match and not m.fallbacks


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_dynamic_capture_tensorrt_profile_after_load(dynamic, tmp_path) -> None:
    from hierviz import trt

    if not trt.info().can_build:
        pytest.skip(f"TensorRT cannot build here: {trt.info().reason}")
    model, x, _ = dynamic
    model = model.cuda()
    batch = torch.export.Dim("batch", min=1, max=16)
    gm = hv.capture(model, (x.cuda(),), dynamic_shapes=({0: batch},))
    part = hv.partition(gm, priority=("tensorrt",), min_block_size=1)
    compiled = part.compile(device="cuda", example_inputs=(x.cuda(),))
    again = load(compiled.save(tmp_path / "trt"))
    # not trusted, and still every engine read from the folder (TensorRT engines are data): the checked
    # unpickler (hierviz.trt.engine_metadata) took each engine's settings and symbolic shapes, none built again
    engines = [r.status for t, r in again.records.items() if t.startswith("_run_on_acc")]
    assert engines and set(engines) == {"cached"}
    for b in (1, 5, 16):
        xb = torch.randn(b, 3, 8, 8, device="cuda")
        with torch.no_grad():
            torch.testing.assert_close(again(xb), model(xb), rtol=1e-3, atol=1e-3)
    with pytest.raises(hv.CaptureError, match="outside the range 1..16"):
        again(torch.randn(17, 3, 8, 8, device="cuda"))


@pytest.mark.slow
def test_save_lists_the_subgraphs_whose_artifact_was_not_written(split, tmp_path, monkeypatch) -> None:
    """CompiledSplit.unsaved (tag -> why) is what CompiledModel.save reports as compiled again
    at load: in its warning and in hierviz.json's recompiled_at_load."""
    import json

    from hierviz.latency.compiling import compile_cache
    from hierviz.latency.compiling.compile_cache import CompileCache
    from hierviz.latency.compiling.compiled_split import compile_split

    model, inputs, part = split
    monkeypatch.setattr(compile_cache, "save_entry", lambda *a, **k: "the disk is read-only")
    compiled = part.compile(example_inputs=inputs)
    with pytest.warns(hv.MeasureWarning, match="have no savable artifact") as caught:
        folder = compiled.save(tmp_path / "net")
    inductor = [t for t, r in compiled.records.items() if r.ran == "inductor"]
    assert inductor
    meta = json.loads((folder / "hierviz.json").read_text())
    assert meta["recompiled_at_load"] == [f"{t} was not written to the disk cache: the disk is read-only"
                                          for t in inductor]
    assert f"{len(inductor)} subgraph(s) have no savable artifact" in str(caught[0].message)
    split_again = compile_split(part, inputs, cache=CompileCache(), cache_dir=tmp_path / "cache")
    assert split_again.unsaved == {t: "the disk is read-only" for t in inductor}
