"""Support verdicts as values: `verdict(node)` is (ok, code, why), `check(node)` the same as a
pair, and sources compose with `chain` / `any_chain` as torch.fx's OperatorSupportBase does."""

from __future__ import annotations

import pytest

import hierviz as hv
from hierviz.support.sources import VALIDATOR, Verdict

CONV = "torch.ops.aten.convolution.default"
RELU = "torch.ops.aten.relu.default"


@pytest.fixture(scope="module")
def conv_graph():
    model, inputs = hv.zoo.load("tiny_conv")
    return hv.capture(model, inputs)



def backends(p, op):
    return {p.backend_of(n.name) for n in p.graph.graph.nodes
            if n.op == "call_function" and f"torch.ops.{n.target}" == op}


def test_verdict_and_check_say_the_same(conv_graph) -> None:
    sup = hv.support.ops([CONV])
    node = next(n for n in conv_graph.graph.nodes if n.op == "call_function" and f"torch.ops.{n.target}" == RELU)
    v = sup.verdict(node)
    assert v == Verdict(False, "unsupported", "not in ops(1 ops)")
    assert sup.check(node) == (False, "not in ops(1 ops)")


def test_chain_and_any_chain_partition_as_their_parts_say(conv_graph) -> None:
    conv, relu = hv.support.ops([CONV]), hv.support.ops([RELU])
    either = hv.partition(conv_graph, priority=("mine",), support={"mine": hv.support.any_chain(conv, relu)},
                          min_block_size=1)
    both = hv.partition(conv_graph, priority=("mine",), support={"mine": hv.support.chain(conv, relu)},
                        min_block_size=1)
    assert backends(either, CONV) == backends(either, RELU) == {"mine"}
    assert backends(both, CONV) == backends(both, RELU) == {"torch"}
    assert "no support in any backend" in both.reason_of(next(
        n.name for n in conv_graph.graph.nodes if n.op == "call_function" and f"torch.ops.{n.target}" == RELU))


def test_a_validator_refusal_inside_a_chain_keeps_its_code() -> None:
    class Refuses(hv.support.Support):
        def __init__(self) -> None:
            super().__init__(("refuses",), "refuses")

        def verdict(self, node):
            return hv.support.refused("converter exists, validator rejected this node", VALIDATOR)

    model, inputs = hv.zoo.load("tiny_conv")
    p = hv.partition(model, inputs, priority=("mine",), min_block_size=1,
                     support={"mine": hv.support.any_chain(Refuses(), hv.support.none())})
    codes = {r.reason_code for r in map(p.record, [n.name for n in p.graph.graph.nodes if n.op == "call_function"])}
    assert "validator_rejected" in codes and "unsupported" not in codes and "supported" not in codes


def test_composed_support_round_trips_through_to_dict() -> None:
    sup = hv.support.chain(hv.support.tensorrt(validate=False), hv.support.ops([RELU]))
    cfg = hv.Config(support={"tensorrt": sup})
    assert hv.Config.from_dict(cfg.to_dict()) == cfg


@pytest.mark.parametrize("bad", [(), ("relu",)])
def test_composing_what_is_not_a_support_says_what_to_pass(bad) -> None:
    with pytest.raises(hv.ConfigError, match="takes hv.Support sources"):
        hv.support.chain(*bad)
