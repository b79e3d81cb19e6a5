"""The converter registry is one object that validation and conversion both set up for their own
run (issue 43): validation swaps in its compilation settings and a lookup of its own, a
conversion sets the settings it converts with (as upstream's interpreter does). A validation in
one thread and a conversion in another take turns, and each sees its own settings throughout."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from hierviz import trt
from hierviz.trt import subgraph_engines

pytestmark = pytest.mark.skipif(not trt.available(), reason="needs the live converter registry")


def _tiny_graph() -> torch.fx.GraphModule:
    class M(torch.nn.Module):
        def forward(self, x):
            return torch.relu(x)

    return torch.fx.symbolic_trace(M())


def test_a_validation_and_a_conversion_in_two_threads_each_see_their_own_settings(monkeypatch) -> None:
    registry = trt.converter_registry()
    converting = trt.default_settings(min_block_size=7, torch_executed_ops={"torch.ops.aten.relu.default"})
    seen: dict[str, list] = {"validation": [], "conversion": []}
    started = threading.Event()

    def converts(gm, inputs, settings, name):  # upstream's convert_module sets the registry's settings, then converts
        registry.set_compilation_settings(settings)
        started.set()
        for _ in range(20):
            seen["conversion"].append(registry.compilation_settings is settings)
            time.sleep(0.005)
        return torch.nn.Identity()

    monkeypatch.setattr("torch_tensorrt.dynamo.conversion.convert_module", converts)
    monkeypatch.setattr(subgraph_engines, "submodule_inputs", lambda gm: [])

    def validate() -> None:
        started.wait(5)
        for _ in range(10):
            with trt.validating():
                mine = registry.compilation_settings
                for _ in range(4):
                    seen["validation"].append(registry.compilation_settings is mine and
                                              not mine.torch_executed_ops and registry.disallowed_targets == set())
                    time.sleep(0.002)

    before = registry.compilation_settings
    threads = [threading.Thread(target=validate),
               threading.Thread(target=lambda: subgraph_engines.compile_submodule(_tiny_graph(), converting))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(seen["conversion"]) == 20 and all(seen["conversion"]), seen["conversion"]
    assert len(seen["validation"]) == 40 and all(seen["validation"]), seen["validation"]
    assert registry.compilation_settings is before  # the conversion's settings did not stay behind


def test_without_the_lock_the_two_would_mix(monkeypatch) -> None:
    """Not vacuous: the same interleaving with the conversion outside the lock lets the
    validation see the conversion's settings."""
    registry = trt.converter_registry()
    converting = trt.default_settings(min_block_size=7)
    saved = registry.compilation_settings, registry.disallowed_targets
    mixed = []
    inside, changed = threading.Event(), threading.Event()

    def validate() -> None:
        with trt.validating():
            mine = registry.compilation_settings
            inside.set()
            changed.wait(10)  # the conversion below has set its settings (or failed to)
            mixed.append(registry.compilation_settings is not mine)

    t = threading.Thread(target=validate)
    t.start()
    assert inside.wait(10)
    try:
        registry.set_compilation_settings(converting)  # a conversion that skips registry_held()
    finally:
        changed.set()
        t.join(10)
        registry.compilation_settings, registry.disallowed_targets = saved
    assert mixed == [True]
