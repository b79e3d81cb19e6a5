"""What Builds.notes tells a user beyond the rows: an engine too big for the build cache."""

from __future__ import annotations

import pytest

import hierviz as hv
from hierviz import trt
from tests.building.models import ConvNet, made

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")


def test_an_engine_larger_than_the_cache_limit_is_said_and_not_kept(tmp_path, monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("HIERVIZ_CACHE_LIMIT", "4000")
    model, x = made(ConvNet, 1, 3, 8, 8)
    part = hv.partition(model, x, min_block_size=1)
    builds = part.build()
    assert builds.ok
    size = builds.engine_bytes
    assert size > 4000
    said = [n for n in builds.notes if "was not kept in the build cache" in n]
    assert len(said) == 1, builds.notes
    assert said[0].startswith("_run_on_acc_tensorrt_0's engine (")
    assert "it is larger than the cache limit (4000 bytes); set HIERVIZ_CACHE_LIMIT=<bytes> to keep it" in said[0]
    assert said[0] in "\n".join(builds.lines())
    again = part.build()
    assert list(again.df["cached"]) == [False]  # not kept, so built again
