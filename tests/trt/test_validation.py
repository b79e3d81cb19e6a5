"""The fast validator (hierviz.trt.Validator) answers exactly what `node in registry` answers,
and partitions made with it have the same tags, reason codes and reasons as partitions that
ask the registry node by node: on zoo models, on random graphs of validator-sensitive ops, on
a dynamic-shape capture, and with settings that change verdicts (immutable_weights,
assume_dynamic_shape_support)."""

from __future__ import annotations

import contextlib
import logging
import operator

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch.fx.passes.shape_prop import _extract_tensor_metadata

import hierviz as hv
from hierviz import trt

pytestmark = pytest.mark.skipif(not trt.available(), reason="validators need the live converter registry")

log = logging.getLogger(__name__)
aten = torch.ops.aten
SHAPE = (2, 4, 3, 3)
PROFILE = settings(max_examples=60, deadline=None, derandomize=True,
                   suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
SETTINGS = [{}, {"immutable_weights": False}, {"assume_dynamic_shape_support": True},
            {"immutable_weights": False, "assume_dynamic_shape_support": True}]


@contextlib.contextmanager
def registry_settings(**overrides):
    """The registry with these CompilationSettings (and no disallowed targets), restored after."""
    registry = trt.converter_registry()
    saved = registry.compilation_settings, registry.disallowed_targets
    with trt.answer_cuda_queries():
        registry.compilation_settings = trt.default_settings(**overrides)
        registry.disallowed_targets = set()
        try:
            yield registry
        finally:
            registry.compilation_settings, registry.disallowed_targets = saved


def answers(registry, validator, node):
    """(accepted, exception type) from the registry and from the validator."""
    def ask(fn):
        try:
            return fn(node), None
        # upstream's capability validators may raise anything: a crashing validator must crash
        # both ways, so the exception's type is compared (and its traceback kept in the log)
        except Exception as exc:
            log.debug("%s raised on %s", fn, node.format_node(), exc_info=True)
            return None, type(exc)
    return ask(lambda n: n in registry), ask(validator.accepts)


def assert_same_verdicts(gm: torch.fx.GraphModule) -> int:
    """Every call_function node: the validator says what the registry says, under each of
    SETTINGS. Returns how many nodes the settings made a difference for (for the caller)."""
    changed = set()
    first = {}
    for overrides in SETTINGS:
        with registry_settings(**overrides) as registry:
            validator = trt.Validator(registry)
            for node in gm.graph.nodes:
                if node.op != "call_function":
                    continue
                expected, got = answers(registry, validator, node)
                assert got == expected, (node.format_node(), overrides)
                if first.setdefault(node, expected) != expected:
                    changed.add(node)
    return len(changed)


@contextlib.contextmanager
def asking_the_registry_per_node():
    """Validated support without the Validator's kept verdicts: `node in registry` per node."""
    original = trt.Validator.accepts
    trt.Validator.accepts = lambda self, node: node in self.registry
    try:
        yield
    finally:
        trt.Validator.accepts = original


def facts(p: hv.Partition) -> list[tuple]:
    return [(n.name, p.tag_of(n.name), p.record(n.name).reason_code, p.reason_of(n.name))
            for n in p.graph.graph.nodes]


def assert_same_partitions(gm: torch.fx.GraphModule, **config) -> None:
    fast = hv.partition(gm, **config)
    with asking_the_registry_per_node():
        slow = hv.partition(gm, **config)
    assert facts(fast) == facts(slow)
    assert [(s.tag, s.nodes) for s in fast.subgraphs] == [(s.tag, s.nodes) for s in slow.subgraphs]


# ------------------------------------------------------------------ zoo models and a dynamic capture
@pytest.mark.parametrize("name", ["tiny_conv", "resnet18", "mobilenet_v3_small", "bert", "llama"])
def test_zoo_models_have_the_same_verdicts_and_partitions(zoo_cache, name) -> None:
    gm = zoo_cache.capture(name)
    assert_same_verdicts(gm)
    assert_same_partitions(gm)
    assert_same_partitions(gm, priority=("tensorrt",), min_block_size=1)
    assert_same_partitions(gm, priority=("inductor", "tensorrt"), demote_to="next")


class Pooled(torch.nn.Module):
    """Ops whose validators look at users, producers, settings and dynamic shapes."""

    def __init__(self, nonzero: bool = True) -> None:
        super().__init__()
        self.nonzero = nonzero  # its output size is data-dependent: a symbol even in a static capture
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.MaxPool2d(2, ceil_mode=True)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        y = self.pool(torch.relu(self.bn(self.conv(x))))
        values, indices = y.max(dim=1)
        flat = y.flatten(1)
        picked = torch.gather(flat, 1, indices.flatten(1)[:, :4])  # no dynamic-shape support: log1p, gather
        out = (values.cumsum(1).log1p(), indices, flat.clone() * 2, picked)
        return out + (torch.nonzero(flat > 0),) if self.nonzero else out


@pytest.fixture(scope="module")
def dynamic_capture() -> torch.fx.GraphModule:
    batch = torch.export.Dim("batch", min=2, max=64)
    return hv.capture(Pooled().eval(), (torch.randn(4, 3, 9, 9),), dynamic_shapes={"x": {0: batch}})


def test_a_dynamic_shape_capture_has_the_same_verdicts_and_partitions(dynamic_capture) -> None:
    assert not trt.Validator(trt.converter_registry()).static(dynamic_capture.graph)
    assert assert_same_verdicts(dynamic_capture) > 0  # assume_dynamic_shape_support changes verdicts here
    assert_same_partitions(dynamic_capture)
    assert_same_partitions(dynamic_capture, priority=("tensorrt",), min_block_size=1)


def test_a_static_capture_is_static_and_settings_change_its_verdicts() -> None:
    validator = trt.Validator(trt.converter_registry())
    assert not validator.static(hv.capture(Pooled().eval(), (torch.randn(4, 3, 9, 9),)).graph)
    gm = hv.capture(Pooled(nonzero=False).eval(), (torch.randn(4, 3, 9, 9),))
    assert validator.static(gm.graph)
    assert_same_verdicts(gm)
    assert_same_partitions(gm, min_block_size=1)


# ------------------------------------------------------------------ random graphs
def _unary(x, shape):
    return [(aten.relu.default, (x,)), (aten.sigmoid.default, (x,)), (aten.clone.default, (x,)),
            (aten.frac.default, (x,)), (aten.cumsum.default, (x, 1)), (aten.view.default, (x, list(shape)))]


@st.composite
def validator_graphs(draw) -> torch.fx.GraphModule:
    """A random DAG over ops whose verdicts depend on users (max.dim, batch norm, clone), on the
    producer (getitem), on settings (cumsum) or on nothing (relu), and ops with no converter.
    Values are (2, 4, 3, 3) or, after a max over dim 1, (2, 1, 3, 3)."""
    graph = torch.fx.Graph()
    values = [(graph.placeholder("x"), SHAPE), (graph.placeholder("y"), SHAPE)]
    weight = graph.placeholder("w")
    for _ in range(draw(st.integers(3, 14))):
        kind = draw(st.sampled_from(["unary", "binary", "max", "batch_norm", "sort"]))
        x, shape = draw(st.sampled_from(values))
        if kind == "unary":
            target, args = draw(st.sampled_from(_unary(x, shape)))
            values.append((graph.call_function(target, args), shape))
        elif kind == "binary":
            other, other_shape = draw(st.sampled_from(values))
            op = draw(st.sampled_from([aten.add.Tensor, aten.mul.Tensor]))
            values.append((graph.call_function(op, (x, other)), max(shape, other_shape)))
        else:
            if kind == "max":
                multi, out_shape = graph.call_function(aten.max.dim, (x, 1, True)), shape[:1] + (1,) + shape[2:]
            elif kind == "sort":
                multi, out_shape = graph.call_function(aten.sort.default, (x, 1)), shape
            elif shape == SHAPE:
                multi, out_shape = graph.call_function(aten._native_batch_norm_legit_no_training.default,
                                                       (x, weight, weight, weight, weight, 0.1, 1e-5)), shape
            else:
                continue
            outputs = draw(st.sampled_from([[0], [0, 1], [1]] if kind != "batch_norm" else [[0], [0, 1, 2]]))
            for k in outputs:
                item = graph.call_function(operator.getitem, (multi, k))
                if k == 0:
                    values.append((item, out_shape))
                elif draw(st.booleans()):  # indices and saved statistics: used by a clone, or only output
                    graph.call_function(aten.clone.default, (item,))
    graph.output(tuple(n for n in graph.nodes if n.op == "call_function" and not n.users))
    gm = torch.fx.GraphModule(torch.nn.Module(), graph)
    _propagate(gm, (torch.randn(SHAPE), torch.randn(SHAPE), torch.rand(SHAPE[1]) + 0.5))
    return gm


def _propagate(gm: torch.fx.GraphModule, inputs: tuple) -> None:
    """meta["val"] and meta["tensor_meta"] of every node, from running it."""
    class Recorder(torch.fx.Interpreter):
        def run_node(self, n):
            result = super().run_node(n)
            n.meta["val"] = result
            if isinstance(result, torch.Tensor):
                n.meta["tensor_meta"] = _extract_tensor_metadata(result)
            return result

    Recorder(gm).run(*inputs)


@PROFILE
@given(gm=validator_graphs(), min_block_size=st.integers(1, 4), only_tensorrt=st.booleans())
def test_random_graphs_have_the_same_verdicts_and_partitions(gm, min_block_size, only_tensorrt) -> None:
    assert_same_verdicts(gm)
    priority = ("tensorrt",) if only_tensorrt else ("tensorrt", "inductor")
    assert_same_partitions(gm, priority=priority, min_block_size=min_block_size)

