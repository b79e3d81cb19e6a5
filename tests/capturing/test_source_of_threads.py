"""`source_of` (the model a graph was captured from) reads the process's capture cache while other
threads capture: it never fails with "dictionary changed size during iteration"."""

from __future__ import annotations

import threading
import weakref

import torch

import hierviz as hv
from hierviz.capturing import aten_capture

WAIT_S = 3.0  # how long the scan holds still for a capture in another thread


class Net(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + 1


class PausingCache(weakref.WeakKeyDictionary):
    """The capture cache, whose scan stops after its first entry until another thread has added a
    model (or WAIT_S passed: the other thread is kept out while the cache is read)."""

    def __init__(self) -> None:
        super().__init__()
        self.scanning, self.added = threading.Event(), threading.Event()

    def items(self):
        for n, pair in enumerate(super().items()):
            if n == 0:
                self.scanning.set()
                self.added.wait(WAIT_S)
            yield pair

    def setdefault(self, key, default=None):
        got = super().setdefault(key, default)
        self.added.set()
        return got


def test_source_of_while_another_thread_captures(monkeypatch) -> None:
    cache = PausingCache()
    monkeypatch.setattr(aten_capture, "_CACHE", cache)
    inputs = (torch.randn(2, 3),)
    first, second = Net(), Net()
    first_gm = hv.capture(first, inputs, cache=False)
    cache.added.clear()
    captured: dict = {}

    def capture_second() -> None:
        cache.scanning.wait(WAIT_S)
        captured["gm"] = hv.capture(second, inputs, cache=False)

    other = threading.Thread(target=capture_second)
    other.start()
    try:
        assert aten_capture.source_of(torch.fx.GraphModule(torch.nn.Module(), torch.fx.Graph())) is None
    finally:
        other.join(60)
    assert cache.scanning.is_set() and cache.added.is_set()  # the scan stopped, and the other thread added its model
    assert aten_capture.source_of(first_gm) is first and aten_capture.source_of(captured["gm"]) is second
