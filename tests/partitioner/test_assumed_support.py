"""Partition.assumed: a what-if partition that puts into TensorRT an op Torch-TensorRT has no
converter for says so in its repr, its report's first lines and the explorer's stats line; a
partition with Torch-TensorRT's own support says nothing."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.widget.panels import stats_html

HISTC = "torch.ops.aten.histc.default"


class Histc(torch.nn.Module):
    """Two linears around a histc, which Torch-TensorRT has no converter for."""

    def __init__(self) -> None:
        super().__init__()
        self.l = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.l(x)
        return self.l(y) + torch.histc(y).sum()


def _plain() -> hv.Partition:
    return hv.partition(Histc(), (torch.randn(2, 8),), min_block_size=1)


def test_blockers_what_if_names_the_op_tensorrt_would_not_convert() -> None:
    p = _plain()
    q = hv.partition(p.graph, p.blockers().config[0])
    assert q.stats["subgraphs_by_backend"]["tensorrt"] == 1
    assert [(a.op, a.reason_code) for a in q.assumed] == [(HISTC, "unsupported")]
    assert q.backend_of(q.assumed[0].node) == "tensorrt"
    assert repr(q).endswith("ASSUMED: TensorRT converts histc (no converter in Torch-TensorRT)>")
    head = "\n".join(q.report().splitlines()[:4])
    assert "ASSUMED: TensorRT converts histc (no converter in Torch-TensorRT)" in head


def test_saved_what_if_keeps_its_marker(tmp_path) -> None:
    p = _plain()
    q = hv.partition(p.graph, p.blockers().config[0])
    loaded = hv.load_partition(q.save(tmp_path / "what_if.json"))
    assert [(a.node, a.op) for a in loaded.assumed] == [(a.node, a.op) for a in q.assumed]
    assert "ASSUMED: TensorRT converts histc (no converter in Torch-TensorRT), saved " in repr(loaded)
    assert hv.load_partition(p.save(tmp_path / "plain.json")).assumed == ()


def test_user_support_config_is_flagged_too() -> None:
    p = _plain()
    support = {"tensorrt": hv.support.any_chain(hv.support.tensorrt(), hv.support.ops([HISTC]))}
    q = hv.partition(p.graph, hv.Config(support=support, min_block_size=1))
    assert [a.op for a in q.assumed] == [HISTC]
    html = stats_html(q)
    assert "what-if: TensorRT is assumed to convert histc" in html
    assert "Torch-TensorRT would not run this partition" in html


def test_default_support_assumes_nothing() -> None:
    p = _plain()
    assert p.assumed == ()
    assert "ASSUMED" not in repr(p) and "ASSUMED" not in p.report()
    assert "what-if" not in stats_html(p)
    same = hv.partition(p.graph, hv.Config(support={"tensorrt": hv.support.tensorrt()}, min_block_size=1))
    assert same.assumed == ()


@pytest.mark.slow
@pytest.mark.skipif(not trt.available(), reason="validators need the live converter registry")
def test_validator_rejected_nodes_in_tensorrt_are_named() -> None:
    """squeezenet1_1's max_pool2d(ceil_mode=True) have a converter whose validator refuses them:
    op names only (and the Blockers what-if of that row) puts them in TensorRT."""
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    graph = hv.capture(torchvision.models.squeezenet1_1().eval(), (torch.randn(1, 3, 224, 224),))
    names_only = hv.partition(graph, support={"tensorrt": hv.support.tensorrt(validate=False)})
    pools = [n.name for n in names_only.nodes().itertuples() if n.op == "torch.ops.aten.max_pool2d.default"]
    assert len(pools) == 3
    assert [(a.node, a.reason_code) for a in names_only.assumed] == [(n, "validator_rejected") for n in pools]
    assert repr(names_only).endswith("ASSUMED: TensorRT converts max_pool2d (validator rejects it in Torch-TensorRT)>")
    default = hv.partition(graph)
    assert default.assumed == ()
    what_if = hv.partition(graph, default.blockers().config[0])
    assert [a.node for a in what_if.assumed] == pools
