"""A random op inside a TensorRT engine is evaluated once, when Torch-TensorRT builds the engine
(numpy.random in its converter, float64: it builds only with truncate_double=True); the build,
and the fix that adds truncate_double, say the engine's values are frozen (typed fields)."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.building.frozen_random import FrozenRandom

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")

RAND = FrozenRandom(subgraph="_run_on_acc_tensorrt_0", node="rand", op="torch.ops.aten.rand.default")
NOTE = ("_run_on_acc_tensorrt_0's engine holds aten.rand.default (node rand), which Torch-TensorRT evaluates once "
        "while it builds the engine: every run gives the values drawn then, where PyTorch draws new ones each call; "
        "to keep them random, add 'torch.ops.aten.rand.default' to torch_executed_ops")


class Noisy(torch.nn.Module):
    """Noise added as ViTMAE's random masking draws it: torch.rand in forward."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * 2 + torch.rand(x.shape[0], x.shape[1])


@pytest.fixture(scope="module")
def noisy() -> hv.Partition:
    return hv.partition(Noisy(), (torch.randn(2, 8),), min_block_size=1)


def test_the_fix_that_adds_truncate_double_says_the_noise_is_frozen(noisy) -> None:
    builds = noisy.build()
    assert builds.fix_settings == {"truncate_double": True} and builds.fix == frozenset()
    assert builds.fix_frozen_random == (RAND,) and builds.frozen_random == ()  # the engine failed: nothing frozen yet
    assert builds.fix_text.endswith("; " + NOTE)
    assert builds.rows[0].fix == builds.fix_text and builds.fix_text in "\n".join(builds.lines())


def test_an_engine_built_with_truncate_double_says_its_noise_is_frozen(noisy) -> None:
    builds = noisy.build(trt_settings={"truncate_double": True})
    assert builds.ok and builds.frozen_random == (RAND,)
    assert NOTE in builds.notes and NOTE in builds.lines()


def test_noise_left_in_pytorch_is_not_frozen(noisy) -> None:
    moved = hv.partition(noisy, torch_executed_ops={"aten.rand.default"})
    assert moved.backend_of("rand") == "torch"
    builds = moved.build(trt_settings={"truncate_double": True})
    assert builds.ok and builds.frozen_random == () and builds.fix_frozen_random == ()
    assert not [n for n in builds.notes if "evaluates once" in n]


@pytest.mark.slow  # torch.compile captures the model: seconds of CPU
def test_graph_by_graph_the_fix_and_the_build_name_the_graph() -> None:
    mp = hv.partition(Noisy(), (torch.randn(2, 8),), min_block_size=1, ir="torch_compile")
    in_g0 = FrozenRandom(RAND.subgraph, RAND.node, RAND.op, graph="g0")
    builds = mp.build()
    assert builds.fix_settings == {"truncate_double": True} and builds.fix_frozen_random == (in_g0,)
    assert builds.fix_text.endswith("; g0/" + NOTE)
    built = mp.build(trt_settings={"truncate_double": True})
    assert built.ok and built.frozen_random == (in_g0,) and "g0/" + NOTE in built.notes
