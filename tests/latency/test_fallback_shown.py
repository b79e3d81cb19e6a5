"""A measured fallback is shown as what ran (issue 37): every view, the HTML report, the
Model Explorer export, `report(measurement=)` and the explorer's panel draw or say that a
subgraph whose backend could not compile it ran in eager PyTorch, and why; one MeasureWarning
per measurement names each such subgraph once; a measurement where nothing ran accelerated
says so. On a machine without CUDA, TensorRT subgraphs fall back (on_error="fallback")."""

from __future__ import annotations

import json
import re
import warnings

import pytest
import torch

import hierviz as hv
from hierviz.drawing import palette
from hierviz.latency import CompileCache, MeasureWarning

ADD = "torch.ops.aten.add.Tensor"
pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="TensorRT falls back only without CUDA")


@pytest.fixture(scope="module")
def fell(resnet18):
    """resnet18 with add forced to PyTorch (the issue's setting), measured on the CPU: every
    TensorRT subgraph falls back; (partition, measurement, the warnings it gave)."""
    _, x, gm = resnet18
    part = hv.partition(gm, torch_executed_ops={ADD})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = hv.measure(part, x, device="cpu", on_error="fallback", warmup=0, iters=1, cache=CompileCache())
    return part, m, [w for w in caught if issubclass(w.category, MeasureWarning)]


def trt_tags(part):
    return [sg.tag for sg in part.subgraphs if sg.backend == "tensorrt"]


def test_one_warning_per_measurement_naming_each_fallback_once(fell):
    part, m, caught = fell
    tags = trt_tags(part)
    assert len(tags) == 8 and list(m.fallbacks) == tags
    assert len(caught) == 1
    text = str(caught[0].message)
    for tag in tags:  # each named once (tag _..._1 is not a prefix of _..._10: names end at " (")
        assert text.count(f"{tag} (") == 1, tag
    assert text.count("no CUDA device is available here") == 1  # the explanation once
    notes = [w for w in m.warnings if "fell back" in w]
    assert len(notes) == 1 and notes[0].startswith(f"{len(tags)} of {len(part.subgraphs)} subgraph(s) fell back")


def test_nothing_accelerated_in_repr_and_verdict(fell):
    _, m, _ = fell
    assert m.accelerated == 0 and m.nothing_accelerated
    assert "NOTHING ACCELERATED: every subgraph ran in eager PyTorch (8 fell back)" in repr(m)
    assert m.verdict.startswith("nothing accelerated")
    row = m.to_dict()
    assert row["accelerated"] == 0 and row["verdict"].startswith("nothing accelerated")


def test_collapsed_svg_draws_fallbacks_as_pytorch(fell, tmp_path):
    part, m, _ = fell
    svg = part.save(tmp_path / "x.svg", view="collapsed", measurement=m).read_text()
    n = len(trt_tags(part))
    assert svg.count("FELL BACK") == n
    assert svg.count('class="node hv&#45;subgraph&#45;box hv&#45;tensorrt hv&#45;fell&#45;back"') == n
    assert svg.count("ran in PyTorch (eager)") == n and "tensorrt fell back" in svg
    assert "8 of 16 subgraphs fell back to eager PyTorch" in svg  # the title
    assert svg.count(palette.fill("tensorrt").lower()) <= 1  # only the legend's swatch keeps TensorRT's fill
    before = part.save(tmp_path / "plain.svg", view="collapsed").read_text()
    assert "FELL BACK" not in before and before.count(palette.fill("tensorrt").lower()) > n


def test_full_and_module_views_draw_fallbacks(fell, tmp_path):
    part, m, _ = fell
    full = part.save(tmp_path / "full.svg", view="full", measurement=m).read_text()
    assert full.count('class="cluster hv&#45;subgraph hv&#45;tensorrt hv&#45;fell&#45;back"') == 8
    assert "ran in: eager PyTorch when measured" in full  # each node's tooltip
    modules = part.render(view="modules", measurement=m).source
    shares = re.findall(r"(tensorrt|torch) (\d+)%", modules)
    assert shares and all(b == "torch" for b, _ in shares)  # every module's ops ran in PyTorch


def test_html_report_and_report_text_say_what_ran(fell, tmp_path):
    part, m, _ = fell
    page = part.save(tmp_path / "x.html", view="collapsed", measurement=m).read_text()
    assert "8 subgraph(s) fell back to eager PyTorch" in page
    assert "Nothing accelerated: every subgraph ran in eager PyTorch" in page
    assert page.count("FELL BACK when measured") == 8  # the text report, per engine
    text = part.report(measurement=m)
    assert text.count("FELL BACK when measured: ran in eager PyTorch (tensorrt could not compile it") == 8
    assert "Nothing accelerated: every subgraph ran in eager PyTorch (8 fell back)." in text
    assert "FELL BACK" not in part.report()


def test_model_explorer_export_marks_fallbacks(fell, tmp_path):
    part, m, _ = fell
    doc = json.loads(part.save(tmp_path / "me.json", format="model_explorer", measurement=m).read_text())
    fallen = set(trt_tags(part))
    graph = next(g for g in doc["graphs"] if g["id"] == "subgraphs")
    seen = 0
    for node in graph["nodes"]:
        attrs = {a["key"]: a["value"] for a in node["attrs"]}
        if attrs.get("tag") in fallen:
            seen += 1
            assert attrs["backend"] == "tensorrt" and attrs["ran"].startswith("torch (eager PyTorch; fell back")
            assert "no CUDA device" in attrs["fell_back"]
            assert node["style"]["backgroundColor"] == palette.fill("torch")
        else:
            assert "ran" not in attrs
    assert seen == sum(len(sg.nodes) for sg in part.subgraphs if sg.tag in fallen)
    groups = {c["namespaceRegex"]: c["backgroundColor"] for c in graph["groupNodeConfigs"]}
    assert all(groups[f"^{tag}$"] == palette.cluster_fill("torch") for tag in fallen)


def test_explorer_panel_says_what_fell_back(fell):
    from hierviz.widget import panels

    part, m, _ = fell
    text = panels.stats_html(part, m)
    assert "8 subgraph(s) fell back to eager PyTorch" in text and "nothing accelerated" in text


def test_report_refuses_another_partitions_measurement(fell, tiny_conv):
    part, m, _ = fell
    other = hv.partition(tiny_conv[2], min_block_size=1)
    with pytest.raises(hv.ConfigError, match="measurement of this partition"):
        other.report(measurement=m)


def test_tensorrt_unavailable_advice_works(tiny_conv):
    _, x, gm = tiny_conv
    with pytest.raises(hv.TensorRTUnavailableError) as info:
        hv.measure(hv.partition(gm, min_block_size=1), x, device="cpu", cache=CompileCache(), warmup=0, iters=1)
    advice = 'priority=("inductor",), support={"inductor": hv.support.inductor()}'
    assert advice in str(info.value)
    followed = hv.partition(gm, min_block_size=1, priority=("inductor",), support={"inductor": hv.support.inductor()})
    assert followed.stats["acc_subgraphs"] >= 1 and followed.stats["accelerated_coverage"] == 1.0
    # priority alone takes nothing (inductor's support is empty by default): the measurement says so
    bare = hv.partition(gm, min_block_size=1, priority=("inductor",))
    m = hv.measure(bare, x, device="cpu", warmup=0, iters=1, cache=CompileCache())
    assert "NOTHING ACCELERATED: every subgraph ran in eager PyTorch (the partition has no accelerated" in repr(m)
