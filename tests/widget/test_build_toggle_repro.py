"""The Explorer's "build engines" toggle with builds from `with_repros()`: the stats panel gives
each failed engine's smallest failing part (its headline) and how to save its repro, and the
diagram outlines its nodes."""

from __future__ import annotations

import pytest
import torch

from hierviz import trt
from hierviz.drawing.build_marks import REPRO
from hierviz.widget import Explorer, panels
from tests.building.models import FusedQKV, made

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")

REFUSED = "the builder refused aten.split <size 64>"  # an error with HTML's own characters in it


@pytest.fixture
def refusing_split(monkeypatch, tmp_path):
    """In this process, every graph holding aten.split fails at build (the rest is built for
    real), in a build cache of its own."""
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    real = trt.convert_and_build

    def fake(gm: torch.fx.GraphModule, settings: object = None, **options: object) -> trt.EngineBuild:
        if any(n.target is torch.ops.aten.split.Tensor for n in gm.graph.nodes):
            return trt.EngineBuild("build", 1, 0.0, 0.0, exception="RuntimeError", error=REFUSED)
        return real(gm, settings, **options)

    monkeypatch.setattr(trt, "convert_and_build", fake)


def test_builds_html_gives_each_repros_headline(refusing_split):
    import hierviz as hv

    part = hv.partition(*made(FusedQKV, 1, 16, 64), min_block_size=1)
    plain = part.build(fix=False)
    assert "smallest failing part" not in panels.builds_html(plain)
    builds = plain.with_repros()
    text = panels.builds_html(builds)
    found = builds.repro_for("_run_on_acc_tensorrt_0")
    assert found.headline().startswith("1 of 16 nodes of _run_on_acc_tensorrt_0 fail at build (the builder refused")
    assert (f'the smallest failing part of _run_on_acc_tensorrt_0</span>: {found.headline()}'
            .replace("<", "&lt;").replace(">", "&gt;").replace("&lt;/span&gt;", "</span>")) in text
    assert "(builds.repro(&#x27;_run_on_acc_tensorrt_0&#x27;).save(folder) writes a repro to file upstream)" in text
    assert text.count("the smallest failing part of") == 1


def test_the_build_toggle_shows_the_repro_and_outlines_its_nodes(refusing_split):
    model, x = made(FusedQKV, 1, 16, 64)
    ex = Explorer(model, x, min_block_size=1, debounce=0)
    try:
        # the builds as the worker answers them when it makes the repros (built here: the fake
        # refusal is this process's)
        builds = ex.partition.build(fix=False).with_repros()
        ex.controller.store.put("build", ex.partition.config, builds)
        ex.controls["build"].value = True  # stored: the toggle builds nothing, it shows them
        ex.flush()
        ex.build_thread.join(60)
        stats = ex.panels["stats"].value
        assert "0/1 engines built; _run_on_acc_tensorrt_0 failed at build" in stats
        assert "the smallest failing part of _run_on_acc_tensorrt_0</span>: 1 of 16 nodes" in stats
        ex.controls["view"].value = "full"
        ex.flush()
        assert REPRO.lower() in ex.panels["diagram"].value.lower()  # the split node's border
        assert not ex.errors and not ex.internal_errors
    finally:
        ex.close()
