"""part.build() on bf16 and fp16 models: a small conv net and a transformer block (LayerNorm,
attention by F.scaled_dot_product_attention, an MLP) build every engine, and a new process
reads them back from the build cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import hierviz as hv
from hierviz import trt
from low_precision_models import BLOCK_SHAPE, CONV_SHAPE, Block, ConvNet, example, seeded

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")

TESTS = Path(__file__).parents[1]
MODELS = {"ConvNet": (ConvNet, CONV_SHAPE), "Block": (Block, BLOCK_SHAPE)}
CASES = [(name, dtype) for name in MODELS for dtype in ("bfloat16", "float16")]

BUILD_AGAIN = """
import json, torch
import hierviz as hv
from low_precision_models import {name}, {shape}, example, seeded
dtype = getattr(torch, {dtype!r})
df = hv.partition(seeded({name}, dtype), example({shape}, dtype), min_block_size=1).build().df
print(json.dumps({{"cached": df["cached"].tolist(), "stage": df["stage"].tolist()}}))
"""


def build(name: str, dtype: str) -> hv.Builds:
    cls, shape = MODELS[name]
    return hv.partition(seeded(cls, getattr(torch, dtype)), example(shape, getattr(torch, dtype)),
                        min_block_size=1).build()


def assert_all_built(builds: hv.Builds) -> None:
    df = builds.df
    assert len(df) >= 1
    assert builds.ok, df[["stage", "error"]].to_string()
    assert set(df["stage"]) == {"built"} and (df["engine_bytes"] > 0).all()


@pytest.mark.parametrize("name, dtype", CASES)
def test_a_low_precision_model_builds_every_engine(tmp_path, monkeypatch, name, dtype) -> None:
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    builds = build(name, dtype)
    assert_all_built(builds)
    assert not builds.df["cached"].any()


@pytest.mark.slow  # a fresh process builds again: seconds of CPU (make check leaves it out)
@pytest.mark.parametrize("name, dtype", CASES)
def test_a_new_process_reads_the_low_precision_engines_from_the_build_cache(run_python, tmp_path, monkeypatch,
                                                                           name, dtype) -> None:
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    assert_all_built(build(name, dtype))
    shape = "CONV_SHAPE" if name == "ConvNet" else "BLOCK_SHAPE"
    proc = run_python(BUILD_AGAIN.format(name=name, shape=shape, dtype=dtype), path_first=[TESTS],
                      env={"HIERVIZ_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr[-2000:]
    again = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(again["stage"]) == {"built"} and again["cached"] and all(again["cached"])
