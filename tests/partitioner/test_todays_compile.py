"""compile_today's process-wide cache (hierviz.partitioner.upstream.todays_compile): an answer is
reused only for a partition whose compile today is the same answer."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.partitioner.upstream import todays_compile

needs_trt = pytest.mark.skipif(not trt.available(), reason="compile today runs torch_tensorrt's partitioner")
CUMMAX = "aten.cummax.default"  # no TensorRT converter: a what-if gives it one


class CummaxNet(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(x) + 1
        return torch.sin(torch.cummax(y, 0).values * 2) - 1


@pytest.fixture
def graph() -> torch.fx.GraphModule:
    todays_compile.clear_cache()
    return hv.capture(CummaxNet(), (torch.randn(4, 4),))


def _with_converter() -> dict:
    return {"tensorrt": hv.support.any_chain(hv.support.tensorrt(), hv.support.ops([CUMMAX]))}


@needs_trt
def test_a_what_if_converter_is_not_answered_by_the_plain_settings(graph) -> None:
    """A partition whose TensorRT support adds a converter (a blockers what-if): compile with
    that converter partitions differently, so the answer made for the plain settings is not its."""
    plain = hv.partition(graph, min_block_size=1)
    what_if = hv.partition(graph, min_block_size=1, support=_with_converter())
    fast_what_if = hv.partition(graph, engine="fast", min_block_size=1, support=_with_converter())
    assert plain.compile_today().stats["accelerated_ops"] == hv.partition(graph, engine="fast",
                                                                          min_block_size=1).stats["accelerated_ops"]
    assert what_if.compile_today(compute=False) is None
    today = what_if.compile_today()
    assert fast_what_if.compile_today().partition is fast_what_if
    assert [sg.nodes for sg in today.partition.subgraphs] == [sg.nodes for sg in fast_what_if.subgraphs]
    assert today.stats["accelerated_ops"] == plain.compile_today().stats["accelerated_ops"] + 1
    assert what_if.compile_today(compute=False) is today


@needs_trt
def test_settings_compile_ignores_share_one_answer(graph) -> None:
    """skip_fusion, demote_to, another backend's support: compile ignores them, one answer."""
    today = hv.partition(graph, min_block_size=1).compile_today()
    for overrides in ({"skip_fusion": True}, {"demote_to": "next"}, {"priority": ("inductor", "tensorrt")},
                      {"support": {"inductor": hv.support.ops([CUMMAX])}}):
        assert hv.partition(graph, min_block_size=1, **overrides).compile_today(compute=False) is today, overrides
    assert hv.partition(graph, min_block_size=2).compile_today(compute=False) is None
