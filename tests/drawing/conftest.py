"""Fixtures for the render tests: the tiny conv net and a one-block transformer, captured
once per session, partitioned under the configs the golden files cover.

    pytest tests/drawing --regen-golden      # rewrite tests/golden/*.dot from the current code
    HIERVIZ_REGEN_GOLDEN=1 pytest tests/drawing
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import torch
from torch.fx import Graph, GraphModule

from hierviz.support import sources as hv_support
from hierviz.partitioner import Partition

from .models import tiny_transformer

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "render"


@pytest.fixture(scope="session")
def regen_golden(request: pytest.FixtureRequest) -> bool:
    return bool(request.config.getoption("--regen-golden") or os.environ.get("HIERVIZ_REGEN_GOLDEN"))


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS


@pytest.fixture(scope="session")
def has_dot() -> bool:
    return shutil.which("dot") is not None


@pytest.fixture
def needs_dot(has_dot: bool) -> None:
    if not has_dot:
        pytest.skip("graphviz `dot` is not installed")


@pytest.fixture(scope="session")
def conv_gm(zoo_cache) -> torch.fx.GraphModule:
    return zoo_cache.capture("tiny_conv")


@pytest.fixture(scope="session")
def transformer_gm() -> torch.fx.GraphModule:
    import hierviz as hv

    model, inputs = tiny_transformer()
    return hv.capture(model, inputs)


BAD = 'a<b>{c}|"d\\e\nf&amp;\\N\\l]]>\x01'
# Backend names must be identifiers (they name submodules), so the custom backend's oddity is
# in its support's description instead.
BACKEND = 'odd_Backend9'


@pytest.fixture(scope="session")
def bad_part() -> Partition:
    """A hand-built aten graph whose node names and support description hold every character
    DOT, SVG or HTML treat specially. (Op and backend names cannot: a graph that calls plain
    Python functions is captured first, and backend names must be identifiers.)"""
    import hierviz as hv

    g = Graph()
    x = g.placeholder("x")
    n1 = g.call_function(torch.ops.aten.add.Tensor, (x, 1))
    n2 = g.call_function(torch.ops.aten.relu.default, (n1,))
    n3 = g.call_function(torch.ops.aten.mul.Tensor, (n2, 2))
    n4 = g.call_function(torch.ops.aten.relu.default, (n3,))
    g.output(n4)
    for node, name in ((x, "in" + BAD), (n1, BAD), (n2, "relu" + BAD), (n3, "p\n" + BAD), (n4, 'r"2')):
        node.name = name
    for node in g.nodes:
        node.meta["val"] = torch.empty(2, 3)
    gm = GraphModule(torch.nn.Module(), g)
    return hv.partition(gm, priority=(BACKEND, "tensorrt"), min_block_size=1,
                        support={BACKEND: hv.support.where(lambda n: n.name == BAD, name='w<h>ere"\\'),
                                 "tensorrt": hv.support.ops(["torch.ops.aten.relu.default"])})


class TrtStandIn(hv_support.Support):
    """TensorRT stand-in for the 'fallback' config: a converter validator that rejects softmax
    (a rejection the engine labels validator_rejected), no support for clone, and the end of
    the MLP left to the custom backend."""

    per_node = True

    def __init__(self) -> None:
        super().__init__(("trt_stand_in",), "where(trt_stand_in)")

    def verdict(self, node: torch.fx.Node) -> hv_support.Verdict:
        from hierviz.foundation.opnames import qualname

        name = qualname(node.target)
        if name == "torch.ops.aten._softmax.default":
            return hv_support.refused("where(trt_stand_in) raised ValueError: converter validator rejected this "
                                      "softmax", hv_support.VALIDATOR)
        ok = name != "torch.ops.aten.clone.default" and node.name not in ("gelu", "linear_3", "add_1")
        return hv_support.ACCEPTED if ok else hv_support.refused(f"rejected by {self.description}")

    def to_dict(self) -> dict:
        return {"kind": "where", "name": self.description}


def conv_configs() -> dict:
    import hierviz as hv

    return {
        "default": {},
        # relu in TorchInductor, the rest in TensorRT
        "split": dict(priority=("inductor", "tensorrt"),
                      support={"inductor": hv.support.ops(["torch.ops.aten.relu.default"])}, min_block_size=1),
        # the first conv forced to PyTorch; the 3-node TensorRT blocks demoted
        "fallback": dict(torch_executed_ops={"torch.ops.aten.convolution.default"}, min_block_size=4),
    }


def transformer_configs() -> dict:
    import hierviz as hv

    trt_ops = ["torch.ops.aten.linear.default", "torch.ops.aten.matmul.default", "torch.ops.aten._softmax.default",
               "torch.ops.aten.permute.default", "torch.ops.aten._reshape_copy.default",
               "torch.ops.aten.clone.default", "torch.ops.aten.split.Tensor", "torch.ops.aten.embedding.default"]
    ind_ops = ["torch.ops.aten.native_layer_norm.default", "torch.ops.aten.add.Tensor",
               "torch.ops.aten.gelu.default", "torch.ops.aten.mul.Tensor"]
    return {
        "default": {},
        # an inductor/tensorrt split with embedding forced to PyTorch
        "split": dict(priority=("tensorrt", "inductor"),
                      support={"tensorrt": hv.support.ops(trt_ops), "inductor": hv.support.ops(ind_ops)},
                      torch_executed_ops={"torch.ops.aten.embedding.default"}, min_block_size=2),
        # every fallback reason, and a custom backend
        "fallback": dict(priority=("tensorrt", "my_backend"),
                         support={"tensorrt": TrtStandIn(),
                                  "my_backend": hv.support.ops(["torch.ops.aten.gelu.default",
                                                                "torch.ops.aten.linear.default",
                                                                "torch.ops.aten.add.Tensor"])},
                         torch_executed_ops={"torch.ops.aten.mul.Tensor"}, min_block_size=3),
    }


@pytest.fixture(scope="session")
def conv_parts(conv_gm) -> dict:
    import hierviz as hv

    return {name: hv.partition(conv_gm, **cfg) for name, cfg in conv_configs().items()}


@pytest.fixture(scope="session")
def transformer_parts(transformer_gm) -> dict:
    import hierviz as hv

    return {name: hv.partition(transformer_gm, **cfg) for name, cfg in transformer_configs().items()}
