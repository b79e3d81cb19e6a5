"""Fixtures for the measure tests: captured graphs (small inputs, so CPU runs stay quick),
partitions with inductor and eager subgraphs, and a counter of real TorchInductor compiles."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv

from _measure_helpers import load


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (none here)")
    for item in items:
        if "gpu" in item.keywords and "tests/latency" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def tiny_conv():
    """(model, inputs, graph): the tiny conv net on a 1x3x32x32 image."""
    model = load("tiny_conv")
    x = (torch.randn(1, 3, 32, 32, generator=torch.Generator().manual_seed(1)),)
    return model, x, hv.capture(model, x)


@pytest.fixture(scope="session")
def bert():
    if not _has("transformers"):
        pytest.skip("transformers missing")
    model, x = hv.zoo.load("bert")
    return model, x, hv.capture(model, x)


@pytest.fixture(scope="session")
def resnet18():
    if not _has("torchvision"):
        pytest.skip("torchvision missing")
    model = load("resnet18")
    x = (torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(2)),)
    return model, x, hv.capture(model, x)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


class CompileCounter:
    def __init__(self) -> None:
        self.calls = 0


@pytest.fixture
def inductor_compiles(monkeypatch):
    """Counts real TorchInductor compiles (torch._inductor.compile and standalone_compile)."""
    import torch._inductor

    counter = CompileCounter()
    for name in ("compile", "standalone_compile"):
        real = getattr(torch._inductor, name, None)
        if real is None:
            continue

        def counting(*args, _real=real, **kwargs):
            counter.calls += 1
            return _real(*args, **kwargs)

        monkeypatch.setattr(torch._inductor, name, counting)
    return counter


@pytest.fixture(scope="session")
def shared_cache():
    """A compile cache shared by the tests of one session, so a subgraph compiles once."""
    from hierviz.latency import CompileCache

    return CompileCache()
