"""A tune trial in which nothing ran accelerated says so (issue 37): when every accelerated
subgraph falls back to eager PyTorch (TensorRT on a machine without CUDA, on_error="fallback"),
its status is "nothing accelerated" and its reason names the subgraphs, not a speed-up."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.compare.tune_trial import measure_trial
from hierviz.latency.measure_options import MeasureOptions


@pytest.mark.skipif(torch.cuda.is_available(), reason="TensorRT falls back only without CUDA")
def test_trial_whose_subgraphs_all_fell_back_accelerates_nothing(small):
    _, inputs, gm = small
    part = hv.partition(gm, min_block_size=1)  # TensorRT subgraphs: none can be built here
    tags = [sg.tag for sg in part.subgraphs if sg.is_acc]
    assert tags
    outcome = measure_trial(part, inputs, "cpu", MeasureOptions(on_error="fallback", warmup=0, iters=1))
    assert outcome.status == "nothing accelerated" and outcome.full is None
    assert outcome.error.startswith(f"nothing accelerated: every subgraph ran in eager PyTorch ({len(tags)} fell back)")
    assert tags[0] in outcome.error
