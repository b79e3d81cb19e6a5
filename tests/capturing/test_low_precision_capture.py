"""The capture cache in bf16 and fp16: a second process takes a low-precision model's capture
from the disk cache (its check against the model allows the few ulps by which the lowered graph
and the model run eagerly differ in that dtype), and a cached graph that computes something else
is still stale."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import torch

import hierviz as hv
from hierviz.capturing.cached_capture_check import output_tolerance
from hierviz.capturing.disk_cache import CaptureStore
from low_precision_models import MLP_SHAPE, Mlp, example, seeded

FROM_CACHE = "from the disk cache"
STALE = "differed from the model's"
TESTS = Path(__file__).parents[1]

PARTITION_NOTES = """
import json, torch
import hierviz as hv
from low_precision_models import MLP_SHAPE, Mlp, example, seeded
dtype = getattr(torch, {dtype!r})
print(json.dumps(list(hv.partition(seeded(Mlp, dtype), example(MLP_SHAPE, dtype)).notes)))
"""


@pytest.mark.slow  # two fresh processes
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_low_precision_capture_comes_from_the_cache_in_a_new_process(run_python, tmp_path, dtype) -> None:
    notes = []
    for _ in range(2):
        proc = run_python(PARTITION_NOTES.format(dtype=dtype), path_first=[TESTS],
                          env={"HIERVIZ_CACHE_DIR": str(tmp_path), "HIERVIZ_CACHE": "1"})
        assert proc.returncode == 0, proc.stderr[-2000:]
        notes.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert not any(FROM_CACHE in n for n in notes[0])
    assert any(FROM_CACHE in n for n in notes[1]), notes[1]
    assert not any(STALE in n for n in notes[1])


def test_a_bf16_cached_graph_that_computes_something_else_is_stale(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("HIERVIZ_CACHE", raising=False)
    x = example(MLP_SHAPE, torch.bfloat16)
    hv.capture(seeded(Mlp, torch.bfloat16), x)
    (path, _, _), = CaptureStore().entries()
    entry = pickle.loads(path.read_bytes())
    assert "layers.2.down.weight" in entry["graph"]["attrs"]  # a reference to the model's weight
    changed = seeded(Mlp, torch.bfloat16).layers[2].down.weight.detach().clone()
    changed[0] += 0.25  # one output channel of the last layer (weights ~0.06): no longer the model's
    entry["graph"]["attrs"]["layers.2.down.weight"] = changed
    CaptureStore()._write(entry["key"], entry)  # a sound file holding a graph that is not the model's
    p = hv.partition(seeded(Mlp, torch.bfloat16), x)
    assert any(STALE in n for n in p.notes)
    want = seeded(Mlp, torch.bfloat16)(*x)
    rtol, atol = output_tolerance(want)  # the model's outputs, up to bf16's rounding
    torch.testing.assert_close(p.module(*x), want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype, rtol", [(torch.bfloat16, 2 ** -4), (torch.float16, 1e-2), (torch.float32, 1e-2),
                                         (torch.float64, 1e-2), (torch.complex64, 1e-2)])
def test_the_tolerance_follows_the_dtype_and_the_output_scale(dtype, rtol) -> None:
    small = torch.full((3,), 0.5, dtype=dtype)
    assert output_tolerance(small) == (rtol, max(1e-3, 0.5 * 8 * torch.finfo(dtype.to_real()).eps))
    assert output_tolerance(small * 100)[1] == max(1e-3, 50 * 8 * torch.finfo(dtype.to_real()).eps)


@pytest.mark.parametrize("value", [torch.arange(3), torch.tensor([True, False])])
def test_integer_and_bool_outputs_are_compared_exactly(value) -> None:
    assert output_tolerance(value) is None
