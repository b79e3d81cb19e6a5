"""Issue 23's argument mistakes: an unknown keyword (or a missing / surplus argument) is a
hv.ConfigError naming the valid arguments, never a TypeError; CUDA asked for without one is
the same class from compile() as from hv.measure; a missing saved-model folder is a
FileNotFoundError-like hv.HiervizError naming the path."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.latency import deploy


@pytest.fixture(scope="module")
def tiny(zoo_cache):
    model, inputs = zoo_cache.load("tiny_conv")
    gm = zoo_cache.capture("tiny_conv")
    return model, inputs, gm, hv.partition(gm)


@pytest.mark.parametrize("call,expected", [
    (lambda p, m, x: p.render(view="full", colour="red"),
     "Partition.render: unknown argument(s) ['colour']. It takes view, focus, max_nodes, radius, weights"),
    (lambda p, m, x: p.render(wieghts=True), "unknown argument(s) ['wieghts']; did you mean 'weights'?"),
    (lambda p, m, x: p.save("x.svg", colour="red"), "Partition.save: unknown argument(s) ['colour']"),
    (lambda p, m, x: p.save("x.svg", fromat="png"), "did you mean 'format'?"),
    (lambda p, m, x: p.compile(device="cpu", on_eror="fallback"),
     "Partition.compile: unknown argument(s) ['on_eror']; did you mean 'on_error'?"),
    (lambda p, m, x: p.recommend(size=[1, 2]),
     "Partition.recommend: unknown argument(s) ['size']; did you mean 'sizes'?"),
    (lambda p, m, x: p.ops(1), "Partition.ops: too many positional arguments"),
    (lambda p, m, x: hv.measure(p, x, iter=3), "hv.measure: unknown argument(s) ['iter']; did you mean 'iters'?"),
    (lambda p, m, x: hv.measure(p), "hv.measure: missing a required argument: 'example_inputs'"),
    (lambda p, m, x: hv.sweep(m, x, {"min_block_size": [1]}, colour=1), "hv.sweep: unknown argument(s) ['colour']"),
    (lambda p, m, x: hv.tune(m, x, budgte=3), "hv.tune: unknown argument(s) ['budgte']; did you mean 'budget'?"),
    (lambda p, m, x: hv.capture(m, x, dynamic_shape=None), "did you mean 'dynamic_shapes'?"),
    (lambda p, m, x: hv.diff(p, p, p), "hv.diff: too many positional arguments"),
    (lambda p, m, x: hv.zoo.load("tiny_conv", "x"), "hv.zoo.load: too many positional arguments. It takes name."),
    (lambda p, m, x: hv.zoo.synthetic(10, sed=1), "hv.zoo.synthetic: unknown argument(s) ['sed']"),
    (lambda p, m, x: deploy.load("x", devise="cpu"), "hierviz.latency.deploy.load: unknown argument(s) ['devise']"),
])
def test_unknown_arguments_are_config_errors_naming_the_valid_ones(tiny, tmp_path, monkeypatch, call,
                                                                   expected) -> None:
    model, inputs, _, p = tiny
    monkeypatch.chdir(tmp_path)
    with pytest.raises(hv.ConfigError) as info:
        call(p, model, inputs)
    assert not isinstance(info.value, TypeError)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)
    assert list(tmp_path.iterdir()) == []  # nothing was written before the refusal


def test_valid_forwarded_arguments_still_work(tiny, tmp_path) -> None:
    _, _, _, p = tiny
    assert "digraph" in p.render("full", weights=True).source
    assert "collapsed view\ndigraph" in p.save(tmp_path / "p.dot", view="collapsed").read_text()


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_cuda_without_a_gpu_is_the_same_error_from_compile_and_measure(tiny) -> None:
    model, inputs, gm, p = tiny
    assert p.stats["subgraphs_by_backend"].get("tensorrt")
    errors = []
    for call in (lambda: p.compile(device="cuda"), lambda: hv.measure(p, inputs, device="cuda")):
        with pytest.raises(hv.TensorRTUnavailableError) as info:
            call()
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    assert "no CUDA device is available here; TensorRT engines need an NVIDIA GPU" in errors[0]
    assert issubclass(hv.TensorRTUnavailableError, hv.MeasureError)
    # no TensorRT subgraph: a plain MeasureError that says to use the CPU
    ind = hv.partition(gm, priority=("inductor",), support={"inductor": hv.support.inductor()})
    for call in (lambda: ind.compile(device="cuda"), lambda: hv.measure(ind, inputs, device="cuda")):
        with pytest.raises(hv.MeasureError) as info:
            call()
        assert not isinstance(info.value, hv.TensorRTUnavailableError)
        assert "use device='cpu'" in str(info.value)


def test_loading_a_missing_folder_names_the_path(tmp_path) -> None:
    missing = tmp_path / "no" / "such"
    with pytest.raises(FileNotFoundError) as info:
        deploy.load(missing)
    assert isinstance(info.value, hv.SavedModelNotFoundError) and isinstance(info.value, hv.HiervizError)
    assert not isinstance(info.value, hv.MeasureError)
    assert info.value.filename == str(missing)
    assert str(info.value) == (f"no saved hierviz model at {missing}: the folder does not exist; save one with "
                               "part.compile().save(folder).")
    with pytest.raises(hv.SavedModelNotFoundError, match="holds no saved hierviz model"):
        deploy.load(tmp_path)  # a folder, but nothing saved in it
    with pytest.raises(hv.ConfigError, match="not int"):
        deploy.load(5)
