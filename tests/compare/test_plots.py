"""The two plots, from real sweep DataFrames (latency from the fake measure)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pytest

import hierviz as hv
from hierviz.compare import plot_latency, plot_subgraphs, sweep

INDUCTOR = {"inductor": hv.support.inductor()}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_plot_latency_one_line_per_other_setting(small, fake_measure) -> None:
    model, inputs, _ = small
    df = sweep(model, inputs, {"priority": ["tensorrt>inductor", "inductor>tensorrt"], "min_block_size": [1, 2, 5]},
               base={"support": INDUCTOR}, measure=True, progress=False)
    ax = plot_latency(df)
    lines = [ln for ln in ax.get_lines() if ln.get_label() != "eager PyTorch"]
    assert sorted(ln.get_label() for ln in lines) == ["priority=inductor>tensorrt", "priority=tensorrt>inductor"]
    trt = next(ln for ln in lines if ln.get_label() == "priority=tensorrt>inductor")
    rows = df[df["priority"] == "tensorrt>inductor"].sort_values("min_block_size")
    assert list(trt.get_xdata()) == [1, 2, 5]
    assert np.allclose(trt.get_ydata(), rows["median_ms"])
    assert any(ln.get_label() == "eager PyTorch" for ln in ax.get_lines())
    assert len(ax.collections) == 2  # the p10-p90 bands
    assert ax.get_xlabel() == "min_block_size"


def test_plot_latency_needs_a_measured_sweep(small) -> None:
    model, inputs, _ = small
    df = sweep(model, inputs, {"min_block_size": [1, 2]}, progress=False)
    with pytest.raises(hv.ConfigError, match="measure=True"):
        plot_latency(df)


def test_plot_subgraphs_stacked_per_backend(small) -> None:
    model, inputs, _ = small
    df = sweep(model, inputs, {"min_block_size": [1, 3, 5, 8]}, progress=False)
    fig, ax = plt.subplots()
    out = plot_subgraphs(df, ax=ax)
    assert out is ax
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "3", "5", "8"]
    assert ax.get_xlabel() == "min_block_size"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["tensorrt", "inductor", "torch"]
    # bar heights stack to the subgraph count of each setting
    heights = np.zeros(4)
    for container in ax.containers:
        heights += [bar.get_height() for bar in container]
    assert list(heights) == list(df["subgraphs"])


def test_plot_subgraphs_with_several_settings_varying(small) -> None:
    model, inputs, _ = small
    df = sweep(model, inputs, {"min_block_size": [1, 5], "skip_fusion": [False, True],
                               "require_full_compilation": [False, True]}, progress=False)
    ax = plot_subgraphs(df)  # error rows (require_full_compilation=True) are left out
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == ["min_block_size=1 skip_fusion=False", "min_block_size=1 skip_fusion=True",
                      "min_block_size=5 skip_fusion=False", "min_block_size=5 skip_fusion=True"]
