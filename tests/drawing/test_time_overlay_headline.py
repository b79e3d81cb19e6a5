"""Issue 58 item 4: the time overlay's figures agree with the measurement's headline, and a
figure taken on a busy machine is marked as such in the picture."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

import hierviz as hv

from .stack_models import captured, odd_partition


@pytest.fixture(scope="module")
def odd() -> hv.Partition:
    return odd_partition(captured())


def measured(p: hv.Partition, times: list[float], median_ms: float, cv: float) -> SimpleNamespace:
    total = sum(times)
    table = pd.DataFrame({"tag": [sg.tag for sg in p.subgraphs], "backend": [sg.backend for sg in p.subgraphs],
                          "median_ms": times, "share": [t / total for t in times]})
    from hierviz.latency.timing import NOISY_CV

    return SimpleNamespace(per_subgraph=table, device="cpu", median_ms=median_ms, cv=cv, baseline_cv=None,
                           noisy=cv > NOISY_CV)  # as hv.Measurement.noisy says


def test_legend_gives_the_headline_beside_the_subgraphs_sum(odd) -> None:
    src = odd.render("collapsed", measurement=measured(odd, [1.0, 0.25, 2.75], median_ms=5.0, cv=0.01)).source
    assert "the whole model: 5.00 ms median" in src  # the number the stats panel heads with
    assert "sum 4.00 ms" in src and "total 4.00 ms" not in src  # never a second "total" beside it
    assert "busy" not in src


def test_a_noisy_measurement_is_marked_in_the_picture(odd) -> None:
    src = odd.render("collapsed", measurement=measured(odd, [1.0, 0.25, 2.75], median_ms=5.0, cv=2.83)).source
    assert "NOISY" in src and "cv 283%" in src and "busy" in src
    title = next(line for line in src.splitlines() if line.strip().startswith("graph [label="))
    assert "NOISY (cv 283%)" in title.split("</B>")[0]  # in the picture's bold title, not only the legend
