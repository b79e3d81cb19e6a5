"""The cost overlay: measured milliseconds on subgraphs and module boxes."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import torch
import pytest

import hierviz as hv
from hierviz.drawing import layout
from hierviz.drawing.time_overlay import ms_text

from .helpers import parse_svg
from .stack_models import captured, odd_partition
from .helpers import check_golden


def fake_measurement(p: hv.Partition, times: list[float]) -> SimpleNamespace:
    """What hv.measure reports per subgraph, with hand-picked times (for golden files)."""
    tags = [sg.tag for sg in p.subgraphs]
    total = sum(times)
    table = pd.DataFrame({"tag": tags, "backend": [sg.backend for sg in p.subgraphs], "median_ms": times,
                          "share": [t / total for t in times]})
    return SimpleNamespace(per_subgraph=table, device="cpu")


@pytest.fixture(scope="module")
def odd() -> hv.Partition:
    return odd_partition(captured())


@pytest.fixture(scope="module")
def fake(odd) -> SimpleNamespace:
    assert len(odd.subgraphs) == 3  # tensorrt | torch (blocks.2's relu) | tensorrt
    return fake_measurement(odd, [1.0, 0.25, 2.75])


def test_golden_collapsed_with_times(odd, fake, regen_golden):
    g = odd.render("collapsed", measurement=fake)
    check_golden(g.source, "overlay_stack_collapsed.dot", regen_golden)
    assert "<B>2.75 ms</B> · 69% of time" in g.source and "<B>0.25 ms</B> · 6% of time" in g.source
    # boundary edges carry their bytes: blocks.2's fc1 output, 2 x 32 float32, goes to PyTorch's relu
    assert 'xlabel="f32[2,32] · 256 B"' in g.source or 'label=" f32[2,32] · 256 B"' in g.source


def test_golden_modules_with_times(odd, fake, regen_golden):
    check_golden(odd.render("modules", depth=1, measurement=fake).source, "overlay_stack_modules.dot", regen_golden)


@pytest.mark.parametrize("depth", [1, 2])
def test_module_times_add_up_to_the_measured_total(odd, fake, depth):
    """Each box's time is its ops' share of their subgraphs' times: the boxes (not the
    clusters around them) sum to the total, rolled-up boxes counting every copy."""
    import re

    src = odd.render("modules", depth=depth, measurement=fake).source
    boxes = [line for line in src.splitlines() if re.match(r"\t+m\d+ \[", line)]
    times = [float(x) for line in boxes for x in re.findall(r"<B>([0-9.]+) ms</B>", line)]
    assert len(times) == len(boxes)
    assert sum(times) == pytest.approx(4.0, abs=0.03)


def test_full_view_clusters_carry_their_time(odd, fake, needs_dot):
    _, groups = parse_svg(layout(odd.render("full", measurement=fake), "svg").decode())
    labels = " ".join(" ".join(g.texts) for g in groups if g.kind == "node" and g.title.startswith("h"))
    assert "1.00 ms" in labels and "2.75 ms" in labels


def test_measurement_of_another_partition_is_refused(odd):
    other = hv.partition(captured(), min_block_size=1)
    wrong = fake_measurement(other, [1.0] * len(other.subgraphs))
    wrong.per_subgraph["tag"] = [f"_run_on_acc_tensorrt_{k + 10}" for k in range(len(other.subgraphs))]
    with pytest.raises(hv.RenderError, match="measurement of this partition"):
        odd.render("collapsed", measurement=wrong)
    with pytest.raises(hv.RenderError, match="hv.Measurement"):
        odd.render("modules", measurement="fast")


def test_ms_text():
    assert [ms_text(x) for x in (0.0421, 3.214, 12.54)] == ["0.042 ms", "3.21 ms", "12.5 ms"]


@pytest.mark.slow
def test_real_cpu_measurement_with_inductor_and_torch_subgraphs(needs_dot):
    """hv.measure on CPU: linears in TorchInductor, the rest in PyTorch; the overlay shows
    each subgraph's measured median."""
    from .stack_models import stack

    model, inputs = stack()
    p = hv.partition(captured(), priority=("inductor",), min_block_size=1,
                     support={"inductor": hv.support.ops(["torch.ops.aten.linear.default"])})
    assert {sg.backend for sg in p.subgraphs} == {"inductor", "torch"}
    m = hv.measure(p, inputs, device="cpu", warmup=1, iters=3)
    g = p.render("collapsed", measurement=m)
    for tag, ms in zip(m.per_subgraph["tag"], m.per_subgraph["median_ms"]):
        assert ms_text(float(ms)) in g.source, tag
    svg = layout(p.render("modules", measurement=m), "svg").decode()
    assert "of time" in svg


def test_boxes_of_several_subgraphs_carry_their_sum(odd, fake):
    """With max_nodes below the subgraph count, the collapsed view groups subgraphs; each box
    shows the sum of its subgraphs' times."""
    g = odd.render("collapsed", max_nodes=1, measurement=fake)
    assert g.info["grouped"]
    import re

    times = [float(x) for x in re.findall(r"<B>([0-9.]+) ms</B>", g.source)]
    assert sum(times) == pytest.approx(4.0, abs=0.03) and len(times) == g.info["boxes"]


class _ConvBN(torch.nn.Module):
    """One subgraph holding a convolution and the BatchNorm after it (which has a getitem)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.conv(x))


def test_a_subgraphs_time_is_split_by_estimated_work_not_evenly(needs_dot):
    """Issue 21: the BatchNorm's extra getitem must not give it twice the convolution's share."""
    import re

    from hierviz.drawing.work_estimate import node_work

    model = _ConvBN().eval()
    x = (torch.randn(1, 8, 16, 16),)
    p = hv.partition(model, x, priority=("inductor",), support={"inductor": hv.support.inductor()},
                     min_block_size=1)
    assert len(p.subgraphs) == 1
    t = p.records
    work = node_work(t)
    assert all(work[i] == 0 for i in range(len(t)) if not t.compute[i])  # getitem, views: no work of their own
    src = p.render("modules", measurement=fake_measurement(p, [10.0])).source
    share = {}
    for line in src.splitlines():
        found = re.search(r"<B>([0-9.]+) ms</B> · (\d+)% of time", line)
        name = re.search(r">(conv|bn)<", line) or re.search(r"\b(conv|bn)\b", line)
        if found and name:
            share[name.group(1)] = int(found.group(2))
    assert set(share) == {"conv", "bn"} and share["conv"] > share["bn"], share
    assert share["conv"] + share["bn"] in (99, 100, 101)


def test_views_read_overlays_only_through_the_interface():
    """Every view, the legend and the Model Explorer export reach the time, numerics and diff
    overlays through `overlays.Overlay` (context.make_overlays builds them), never by class."""
    from pathlib import Path

    import hierviz.drawing as drawing

    folder = Path(drawing.__file__).parent
    for name in ("graph", "collapsed", "focus", "modules", "legend", "views", "model_explorer"):
        text = (folder / f"{name}.py").read_text()
        for concrete in ("TimeOverlay", "NumericsMarks", "Difference", "drawing.accuracy", "drawing.difference"):
            assert concrete not in text, f"{name}.py names {concrete}"
    assert "overlays" in (folder / "graph.py").read_text() and "Overlay" in (folder / "modules.py").read_text()
