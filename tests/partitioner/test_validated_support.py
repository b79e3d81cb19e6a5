"""Validated TensorRT support is the default: each converter's capability validator runs per
node, as torch_tensorrt.compile does, and its rejections carry their own reason."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz import trt

pytestmark = pytest.mark.skipif(not trt.available(), reason="validators need the live converter registry")

POOL = "torch.ops.aten.max_pool2d.default"


@pytest.fixture(scope="module")
def squeezenet() -> torch.fx.GraphModule:
    torchvision = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = torchvision.models.squeezenet1_1().eval()
    return hv.capture(model, (torch.randn(1, 3, 224, 224),))


def test_squeezenet_pools_are_validator_rejected_by_default(squeezenet) -> None:
    """squeezenet1_1's three max_pool2d(ceil_mode=True) have a converter whose validator
    refuses them: torch_tensorrt.compile makes 3 TensorRT engines, and so does the default."""
    p = hv.partition(squeezenet, priority=("tensorrt",))
    assert p.stats["subgraphs_by_backend"]["tensorrt"] == 3
    pools = [n for n in p.nodes().itertuples() if n.op == POOL]
    assert len(pools) == 3
    for row in pools:
        assert row.backend == "torch"
        assert row.reason_code == "validator_rejected"
        assert "converter exists, validator rejected this node" in p.reason_of(row.name)
    assert p.ops().set_index("op").loc[POOL, "reason"] == "validator rejected"
    assert "validator" in p.report()


def test_squeezenet_op_names_only_is_one_subgraph(squeezenet) -> None:
    p = hv.partition(squeezenet, priority=("tensorrt",),
                     support={"tensorrt": hv.support.tensorrt(validate=False)})
    assert p.stats["subgraphs_by_backend"] == {"tensorrt": 1, "torch": 0}
    pool = next(n.name for n in p.nodes().itertuples() if n.op == POOL)
    assert "op names only, validators not run" in p.reason_of(pool)


def test_default_support_is_validated_and_round_trips() -> None:
    default = hv.Config().support_for("tensorrt")
    assert default == hv.support.tensorrt() == hv.support.tensorrt(validate=True)
    assert default != hv.support.tensorrt(validate=False)
    assert default.per_node and default.validate
    cfg = hv.Config(support={"tensorrt": hv.support.tensorrt(validate=False)})
    assert hv.Config.from_dict(cfg.to_dict()) == cfg
    assert hv.Config.from_dict({"support": {"tensorrt": {"kind": "tensorrt"}}}).support_for("tensorrt") == default


def test_upstream_engine_checks_op_names(squeezenet) -> None:
    """Upstream's hierarchical partitioner checks op names only: with the default config it
    puts the pools on TensorRT, and its Partition's config says op names only."""
    p = hv.partition(squeezenet, priority=("tensorrt",), engine="torch_tensorrt")
    assert p.config.support_for("tensorrt") == hv.support.tensorrt(validate=False)
    pool = next(n.name for n in p.nodes().itertuples() if n.op == POOL)
    assert p.backend_of(pool) == "tensorrt"


def test_registry_state_is_restored(squeezenet) -> None:
    """Validating many nodes sets up the converter registry once and restores it after."""
    registry = trt.converter_registry()
    before = (registry.compilation_settings, registry.disallowed_targets, "validate_invariants" in vars(registry))
    hv.partition(squeezenet, priority=("tensorrt",), min_block_size=2)
    assert (registry.compilation_settings, registry.disallowed_targets,
            "validate_invariants" in vars(registry)) == before
