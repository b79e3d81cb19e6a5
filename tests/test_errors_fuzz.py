"""Fuzz: wrong-typed and out-of-range arguments for every public function, method and CLI
subcommand. Each call says which values it must take and which it must refuse: a valid value
works, any other is refused with a hv.HiervizError that has a message (junk that is accepted
fails the test, as does any other exception); the CLI exits 0 or 2, and 2 comes with one line
and no traceback; and the user's model is untouched.

Small max_examples and a tiny model keep this fast; HIERVIZ_FUZZ_EXAMPLES raises the count.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any, Callable

import pytest
import torch
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import hierviz as hv
from hierviz.cli import commands as cli

EXAMPLES = int(os.environ.get("HIERVIZ_FUZZ_EXAMPLES", "12"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x)) * self.scale + torch.special.i0e(x)


class Opaque:
    """An object hierviz has never heard of."""

    def __repr__(self) -> str:
        return "<Opaque>"


# Values of the wrong type or out of range (some happen to be valid: those must simply work).
junk = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-10**9, max_value=10**9),
    st.sampled_from([0, -1, 2**63, 10**6]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.sampled_from(["", " ", "tensorrt", "TensorRT>inductor", "aten.relu.default", "torch.relu", "modules",
                     "focus", "../x", "a\nb", "inductor,inductor", "cpu", "cuda:9", "nope.svg", "x.gif"]),
    st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=6), st.none()), max_size=3),
    st.dictionaries(st.text(max_size=6), st.one_of(st.integers(-3, 3), st.text(max_size=4)), max_size=2),
    st.builds(Opaque),
    st.just(torch.zeros(2)), st.just(b"bytes"), st.just(object), st.just(print),
)


@pytest.fixture(scope="module")
def tiny() -> tuple[torch.nn.Module, tuple, torch.fx.GraphModule, hv.Partition]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = Tiny().eval()
        inputs = (torch.randn(2, 4),)
    gm = hv.capture(model, inputs)
    return model, inputs, gm, hv.partition(gm, min_block_size=1)


def snapshot(model: torch.nn.Module, gm: torch.fx.GraphModule, inputs: tuple) -> tuple:
    return ({k: v.clone() for k, v in model.state_dict().items()}, model.training, gm.code,
            [t.clone() for t in inputs])


def assert_untouched(before: tuple, model: torch.nn.Module, gm: torch.fx.GraphModule, inputs: tuple) -> None:
    state, training, code, args = before
    now = model.state_dict()
    assert now.keys() == state.keys()
    for k, v in state.items():
        assert torch.equal(now[k], v), f"the model's {k} changed"
    assert model.training == training and gm.code == code
    for a, b in zip(inputs, args):
        assert torch.equal(a, b), "the example inputs changed"


def expect(accept: bool, fn: Callable[[], Any], what: Any = "") -> None:
    """`fn()` works when `accept`; otherwise it is refused with a hv.HiervizError that has a
    message. Junk that is accepted fails, and so does a valid value refused."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn()
    except hv.HiervizError as exc:
        assert str(exc).strip(), f"{type(exc).__name__} with an empty message"
        assert not accept, f"{what!r:.80} is valid, yet refused: {exc}"
        return
    assert accept, f"{what!r:.80} was accepted: it must be refused with a hv.HiervizError"


def refused(fn: Callable[[], Any], what: Any = "") -> None:
    expect(False, fn, what)


def valid_mbs(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def count(value: Any) -> bool:
    """A non-negative int (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


BACKENDS = ("tensorrt", "inductor")
ENGINES = ("hierviz", "fast", "global", "torch_tensorrt", "hierarchical")
VIEWS = ("full", "collapsed", "modules", "auto")  # and "focus", which needs focus=
SAVE_SUFFIXES = (".svg", ".png", ".pdf", ".dot", ".json", ".html")


def valid_priority(value: Any) -> bool:
    """Known backends, each once: 'tensorrt>inductor' (any case, blanks around), or a list/tuple."""
    if isinstance(value, str):
        names = value.split(">")
    elif isinstance(value, (list, tuple)) and all(isinstance(n, str) for n in value):
        names = list(value)
    else:
        return False
    names = [n.strip().lower() for n in names if n.strip()]
    return bool(names) and set(names) <= set(BACKENDS) and len(set(names)) == len(names)


def real_op(name: Any) -> bool:
    """An op that exists in torch.ops: 'torch.ops.aten.relu.default', 'aten.relu.default',
    'relu.default' or 'relu'; torch-level functions ('torch.relu') are not ops."""
    if not isinstance(name, str):
        return False
    name = name.strip()
    if name.startswith("torch.") and not name.startswith("torch.ops."):
        return False
    path = name[len("torch.ops."):] if name.startswith("torch.ops.") else (
        name if name.startswith("aten.") else "aten." + name)
    obj: Any = torch.ops
    for part in path.split("."):
        try:
            obj = getattr(obj, part)
        except (AttributeError, RuntimeError):
            return False
    return isinstance(obj, (torch._ops.OpOverload, torch._ops.OpOverloadPacket))


def op_collection(value: Any) -> bool:
    """A list, tuple, set or mapping of real op names (possibly empty)."""
    return isinstance(value, (list, tuple, set, frozenset, dict)) and all(real_op(n) for n in value)


def valid_executed_ops(value: Any) -> bool:
    """torch_executed_ops: None, text of comma-separated real op names (none at all is fine),
    or a collection of them (a mapping is not one)."""
    if isinstance(value, str):
        return all(real_op(n) for n in value.split(",") if n.strip())
    return value is None or (op_collection(value) and not isinstance(value, dict))


def valid_field(field: str, value: Any) -> bool:
    """Whether Config field `field` takes `value`."""
    rules: dict[str, Callable[[Any], bool]] = {
        "priority": valid_priority,
        "support": lambda v: v is None or v == {},  # junk is never a hv.Support
        "min_block_size": valid_mbs,
        "torch_executed_ops": valid_executed_ops,
        "require_full_compilation": lambda v: isinstance(v, bool),
        "skip_fusion": lambda v: isinstance(v, bool),
        "demote_to": lambda v: isinstance(v, str) and v.strip().lower() in ("torch", "next"),
        "engine": lambda v: v is None or isinstance(v, str) and v.strip().lower() in ENGINES,
    }
    return field in rules and rules[field](value)


def valid_save_name(value: Any) -> bool:
    """A file name whose suffix says an export format (any case)."""
    return isinstance(value, str) and "\x00" not in value and os.path.splitext(value)[1].lower() in SAVE_SUFFIXES


# ---------------------------------------------------------------- functions
CONFIG_FIELDS = ("priority", "support", "min_block_size", "torch_executed_ops", "require_full_compilation",
                 "skip_fusion", "demote_to")


@FUZZ
@given(field=st.sampled_from(CONFIG_FIELDS + ("min_blok_size", "engine", "dynamic_shapes", "kwargs")),
       value=junk, positional=st.booleans())
def test_config_and_partition(tiny, field: str, value: Any, positional: bool) -> None:
    model, inputs, gm, _ = tiny
    before = snapshot(model, gm, inputs)
    if field in CONFIG_FIELDS + ("min_blok_size",):
        ok = valid_field(field, value)
        expect(ok, lambda: hv.Config(**{field: value}), value)
        expect(ok, lambda: hv.Config().replace(**{field: value}), value)
        expect(ok, lambda: hv.Config.from_dict({field: value}), value)
        if positional:
            expect(valid_priority(value), lambda: hv.Config(value), value)  # the first field
    if field == "min_block_size" and valid_mbs(value) and value > 10**4:
        return  # a legal but huge size: nothing left to check quickly (partitioning is linear anyway)
    target = gm if positional else model
    if field == "kwargs":  # the model's keyword inputs: Tiny has none; a captured graph takes none
        ok = value is None or (not positional and value == {})
    elif field == "dynamic_shapes":  # torch.export's form, for Tiny's one input x; a captured graph takes none
        ok = value is None or (not positional and (
            isinstance(value, (list, tuple)) and len(value) <= 1 and all(v is None for v in value)
            or isinstance(value, dict) and all(k == "x" and v is None for k, v in value.items())))
    else:  # Tiny's special_i0e has no TensorRT converter: it cannot be compiled in full
        ok = valid_field(field, value) and not (field == "require_full_compilation" and value is True)
    expect(ok, lambda: hv.partition(target, inputs, **{field: value}), value)
    assert_untouched(before, model, gm, inputs)


@FUZZ
@given(config=junk, inputs_junk=junk)
def test_partition_and_capture_positional(tiny, config: Any, inputs_junk: Any) -> None:
    model, inputs, gm, _ = tiny
    before = snapshot(model, gm, inputs)
    expect(config is None or config == {}, lambda: hv.partition(gm, None, config), config)  # never a hv.Config
    # junk is never Tiny's input (one float tensor of shape (., 4)), nor a model
    refused(lambda: hv.partition(model, inputs_junk), inputs_junk)
    refused(lambda: hv.capture(model, inputs_junk), inputs_junk)
    refused(lambda: hv.partition(inputs_junk, inputs), inputs_junk)
    assert_untouched(before, model, gm, inputs)


@FUZZ
@given(method=st.sampled_from(["recommend", "backend_of", "tag_of", "reason_of", "record", "subgraph",
                               "render_view", "render_focus", "render_max_nodes", "save", "diff",
                               "diff_first"]), value=junk)
def test_partition_methods(tiny, tmp_path_factory, method: str, value: Any) -> None:
    model, inputs, gm, p = tiny
    before = snapshot(model, gm, inputs)
    calls = {
        "recommend": lambda: p.recommend(value),
        "backend_of": lambda: p.backend_of(value),
        "tag_of": lambda: p.tag_of(value),
        "reason_of": lambda: p.reason_of(value),
        "record": lambda: p.record(value),
        "subgraph": lambda: p.subgraph(value),
        "render_view": lambda: p.render(view=value),
        "render_focus": lambda: p.render(view="focus", focus=value),
        "render_max_nodes": lambda: p.render(max_nodes=value),
        "save": lambda: p.save(tmp_path_factory.mktemp("save") / str(value)[:20] if isinstance(value, str)
                               else value),
        "diff": lambda: hv.diff(p, value),
        "diff_first": lambda: hv.diff(value, p),
    }
    if method == "recommend":
        assume(not (isinstance(value, list) and any(valid_mbs(v) and v > 10**4 for v in value)))
    names = set(p.records.name)
    tags = {sg.tag for sg in p.subgraphs}
    valid = {
        "recommend": lambda v: v is None or isinstance(v, (list, tuple)) and all(valid_mbs(s) for s in v),  # sizes
        "backend_of": lambda v: v in names, "tag_of": lambda v: v in names, "reason_of": lambda v: v in names,
        "record": lambda v: v in names, "subgraph": lambda v: v in tags,
        "render_view": lambda v: v in VIEWS,
        "render_focus": lambda v: v in names or v in tags or bool(v) and v in set(p.records.module_path),
        "render_max_nodes": lambda v: v is None or valid_mbs(v),
        "save": valid_save_name,
        "diff": lambda v: False, "diff_first": lambda v: False,  # junk is never a Partition
    }
    hashable = isinstance(value, str | int | float | None)  # what a lookup by name can be given
    expect(valid[method](value) if method == "recommend" else hashable and valid[method](value), calls[method], value)
    assert_untouched(before, model, gm, inputs)


@pytest.fixture(scope="module")
def by_graph() -> tuple[torch.nn.Module, tuple, hv.MultiGraphPartition]:
    from tests.dynamo_models import load

    model, inputs = load("prints")
    part = hv.partition(model, inputs, ir="torch_compile", min_block_size=1)
    assert isinstance(part, hv.MultiGraphPartition) and isinstance(part.capture, hv.DynamoCapture)
    assert part.breaks and all(isinstance(b, hv.GraphBreak) for b in part.breaks)
    return model, inputs, part


@FUZZ
@given(method=st.sampled_from(["reason_of", "backend_of", "tag_of", "locate", "left_whole", "render_view",
                               "render_max_nodes", "save", "blockers", "repartition", "capture_ir"]), value=junk)
def test_graph_by_graph_methods(by_graph, tmp_path_factory, method: str, value: Any) -> None:
    """The graph-by-graph partition (ir="torch_compile") takes wrong arguments as a Partition does."""
    model, inputs, part = by_graph
    state = {k: v.clone() for k, v in model.state_dict().items()}
    args = [t.clone() for t in inputs]
    calls = {
        "reason_of": lambda: part.reason_of(value),
        "backend_of": lambda: part.backend_of(value),
        "tag_of": lambda: part.tag_of(value),
        "locate": lambda: part.locate(value),
        "left_whole": lambda: part.left_whole(value),
        "render_view": lambda: part.render(view=value),
        "render_max_nodes": lambda: part.render(max_nodes=value),
        "save": lambda: part.save(tmp_path_factory.mktemp("save") / str(value)[:20] if isinstance(value, str)
                                  else value),
        "blockers": lambda: part.blockers(measure=value),
        "repartition": lambda: hv.partition(part.capture, min_block_size=value),
        "capture_ir": lambda: hv.capture(model, inputs, ir=value),
    }
    if method == "blockers":
        assume(value is not True)  # measuring for real is tested elsewhere
    names = {f"g{k}/{n}" for k, g in enumerate(part.graphs) for n in g.records.name}  # 'g0/addmm'
    valid = {
        "reason_of": lambda v: v in names, "backend_of": lambda v: v in names, "tag_of": lambda v: v in names,
        "locate": lambda v: v in names,
        "left_whole": lambda v: count(v) and v < len(part.graphs),
        "render_view": lambda v: v in VIEWS,
        "render_max_nodes": lambda v: v is None or valid_mbs(v),
        "save": valid_save_name,
        "blockers": lambda v: v is False,
        "repartition": valid_mbs,
        "capture_ir": lambda v: v in ("dynamo", "torch_compile"),
    }
    expect(isinstance(value, str | int | float | None) and valid[method](value), calls[method], value)
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    assert all(torch.equal(a, b) for a, b in zip(args, inputs))


@FUZZ
@given(what=st.sampled_from(["ops", "where", "tensorrt", "zoo_load", "zoo_synthetic", "grid", "grid_value",
                             "sweep_base", "sweep_measure", "sweep_executor", "plot_latency", "plot_subgraphs",
                             "engine", "grid_engine", "compare_engines", "compare_measure",
                             "source_ops", "source_ops_config"]),
       value=junk)
def test_support_zoo_sweep_and_plots(tiny, what: str, value: Any) -> None:
    model, inputs, gm, _ = tiny
    before = snapshot(model, gm, inputs)
    if what == "zoo_synthetic":
        assume(not (isinstance(value, int) and value > 2000))  # legal, just slow
    if what in ("sweep_measure", "compare_measure"):
        assume(value is not True and not isinstance(value, dict))  # would measure for real (tests/latency)
    if what == "sweep_executor":
        assume(not isinstance(value, str))  # a text executor is a Ray address (tests/compare/test_ray*)
    calls = {
        "ops": lambda: hv.support.ops(value),
        "where": lambda: hv.partition(gm, priority=("mine",), support={"mine": hv.support.where(value)}),
        "tensorrt": lambda: hv.support.tensorrt(validate=value),
        "zoo_load": lambda: hv.zoo.load(value),
        "zoo_synthetic": lambda: hv.zoo.synthetic(value),
        "grid": lambda: hv.sweep(gm, None, value, progress=False),
        "grid_value": lambda: hv.sweep(gm, None, {"min_block_size": [1, value]}, progress=False),
        "sweep_base": lambda: hv.sweep(gm, None, {"min_block_size": [1]}, base=value, progress=False),
        "sweep_measure": lambda: hv.sweep(gm, None, {"min_block_size": [1]}, measure=value, progress=False),
        "sweep_executor": lambda: hv.sweep(gm, None, {"min_block_size": [1]}, executor=value, progress=False),
        "source_ops": lambda: hv.partition(gm, torch_executed_ops=hv.source_ops(value)),
        "source_ops_config": lambda: hv.Config(torch_executed_ops={f"source:{value}"}),
        "plot_latency": lambda: hv.plot_latency(value),
        "plot_subgraphs": lambda: hv.plot_subgraphs(value),
        "engine": lambda: hv.partition(gm, engine=value),
        "grid_engine": lambda: hv.sweep(gm, None, {"engine": [value]}, progress=False),
        "compare_engines": lambda: hv.compare_engines(gm, None, value),
        "compare_measure": lambda: hv.compare_engines(gm, None, measure=value),
    }
    engine = valid_field("engine", value) and value is not None
    valid = {
        "ops": lambda v: real_op(v) if isinstance(v, str) else op_collection(v),  # text: one op name
        "where": callable,
        "tensorrt": lambda v: isinstance(v, bool),
        "zoo_load": lambda v: isinstance(v, str) and v in hv.zoo.names(),
        "zoo_synthetic": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 4,
        "grid": lambda v: v == {},  # junk keys are never Config fields
        "grid_value": valid_mbs,
        "sweep_base": lambda v: v is None or v == {},
        "sweep_measure": lambda v: v is None or v is False,
        "sweep_executor": lambda v: v is None,  # junk is never an Executor
        "source_ops": lambda v: real_op(v) if isinstance(v, str) else op_collection(v) and not isinstance(v, dict),
        "source_ops_config": lambda v: real_op(f"{v}"),
        "plot_latency": lambda v: False, "plot_subgraphs": lambda v: False,  # junk is never a result table
        "engine": lambda v: v is None or engine,
        "grid_engine": lambda v: engine,
        "compare_engines": lambda v: v is None or v == {},  # the config: junk is never a hv.Config
        "compare_measure": lambda v: v is None or v is False,
    }
    expect(bool(valid[what](value)), calls[what], value)
    assert_untouched(before, model, gm, inputs)


@FUZZ
@given(arg=st.sampled_from(["iters", "warmup", "device", "check", "on_error", "inputs", "partition"]), value=junk)
def test_measure_arguments(tiny, arg: str, value: Any) -> None:
    """Only wrong values: a valid one would compile and time for real (tests/latency does that)."""
    model, inputs, gm, p = tiny
    valid = {"iters": valid_mbs, "warmup": lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
             "device": lambda v: v is None or v in ("cpu", "cuda") or isinstance(v, str) and v.startswith("cuda"),
             "check": lambda v: isinstance(v, bool), "on_error": lambda v: v in ("raise", "fallback"),
             "inputs": lambda v: False, "partition": lambda v: False}
    assume(not valid[arg](value))
    before = snapshot(model, gm, inputs)
    kwargs: dict[str, Any] = {"device": "cpu", "iters": 1, "warmup": 0}
    if arg in ("iters", "warmup", "device", "check", "on_error"):
        kwargs[arg] = value
    target = value if arg == "partition" else p
    example = value if arg == "inputs" else inputs
    refused(lambda: hv.measure(target, example, **kwargs), value)
    assert_untouched(before, model, gm, inputs)


@FUZZ
@given(arg=st.sampled_from(["device", "on_error", "inputs", "partition", "reference", "rel_floor", "option"]),
       value=junk)
def test_numerics_arguments(tiny, arg: str, value: Any) -> None:
    """Only wrong values: a valid one would compile for real (tests/latency/test_numerics.py does that)."""
    model, inputs, gm, p = tiny
    valid = {"device": lambda v: v is None or v in ("cpu", "cuda") or isinstance(v, str) and v.startswith("cuda"),
             "on_error": lambda v: v in ("raise", "fallback"), "reference": lambda v: v == "eager",
             "rel_floor": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= 1,
             "inputs": lambda v: False, "partition": lambda v: False, "option": lambda v: False}
    assume(not valid[arg](value))
    before = snapshot(model, gm, inputs)
    kwargs: dict[str, Any] = {"device": "cpu"}
    if arg in ("device", "on_error", "reference", "rel_floor"):
        kwargs[arg] = value
    if arg == "option":
        kwargs["bogus_option"] = value
    target = value if arg == "partition" else p
    example = value if arg == "inputs" else inputs
    refused(lambda: hv.numerics(target, example, **kwargs), value)
    assert_untouched(before, model, gm, inputs)


@FUZZ
@given(arg=st.sampled_from(["budget", "seed", "timeout", "space", "base", "measure"]), value=junk)
def test_tune_arguments(tiny, arg: str, value: Any) -> None:
    """Only values of a wrong type (a valid one would run trials)."""
    model, inputs, gm, _ = tiny
    wrong_type = {"budget": lambda v: not isinstance(v, int) or isinstance(v, bool) or v < 1,
                  "seed": lambda v: not isinstance(v, int) or isinstance(v, bool),
                  "timeout": lambda v: not (v is None or isinstance(v, (int, float)) and not isinstance(v, bool)
                                            and math.isfinite(v) and v > 0),
                  "space": lambda v: not (v is None or isinstance(v, dict) and v),
                  "base": lambda v: v is not None and not isinstance(v, (dict, hv.Config)),
                  "measure": lambda v: v is not None and not isinstance(v, dict)}
    assume(wrong_type[arg](value))
    before = snapshot(model, gm, inputs)
    kwargs = {"budget": 1, "progress": False, arg: value}
    refused(lambda: hv.tune(model, inputs, **kwargs), value)
    assert_untouched(before, model, gm, inputs)


@FUZZ
@given(call=st.sampled_from(["render", "save", "compile", "recommend", "measure", "sweep", "tune", "capture",
                             "partition", "zoo_load", "deploy_load", "explore"]),
       name=st.text(alphabet="abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12), value=junk)
def test_unknown_keyword_arguments(tiny, tmp_path_factory, call: str, name: str, value: Any) -> None:
    """Any keyword a function does not take is a ConfigError naming the ones it does take."""
    import inspect

    from hierviz.latency import deploy

    model, inputs, gm, p = tiny
    functions = {"render": p.render, "save": p.save, "compile": p.compile, "recommend": p.recommend,
                 "measure": hv.measure, "sweep": hv.sweep, "tune": hv.tune, "capture": hv.capture,
                 "partition": hv.partition, "zoo_load": hv.zoo.load, "deploy_load": deploy.load,
                 "explore": hv.explore}
    known = set(inspect.signature(functions[call]).parameters) | set(CONFIG_FIELDS) | {
        "weights", "format", "timeout", "view", "on_error", "trt_settings", "inductor_options", "compilers",
        "tf32", "cache_dir", "kwargs", "engine", "example_inputs", "debounce", "output_dir", "max_nodes",
        "measure_options", "name", "measure", "focus", "radius", "depth", "measurement", "against"}
    assume(name not in known)
    before = snapshot(model, gm, inputs)
    folder = tmp_path_factory.mktemp("kw")
    calls = {"render": lambda: p.render(**{name: value}), "save": lambda: p.save(folder / "p.svg", **{name: value}),
             "compile": lambda: p.compile(device="cpu", **{name: value}),
             "recommend": lambda: p.recommend(**{name: value}),
             "measure": lambda: hv.measure(p, inputs, device="cpu", **{name: value}),
             "sweep": lambda: hv.sweep(gm, None, {"min_block_size": [1]}, progress=False, **{name: value}),
             "tune": lambda: hv.tune(model, inputs, budget=1, progress=False, **{name: value}),
             "capture": lambda: hv.capture(model, inputs, **{name: value}),
             "partition": lambda: hv.partition(gm, **{name: value}),
             "zoo_load": lambda: hv.zoo.load("tiny_conv", **{name: value}),
             "deploy_load": lambda: deploy.load(folder, **{name: value}),
             "explore": lambda: hv.explore(model, inputs, debounce=0, output_dir=folder, **{name: value})}
    with pytest.raises(hv.ConfigError) as info:
        calls[call]()
    assert repr(name) in str(info.value) or name in str(info.value)
    assert list(folder.iterdir()) == []
    assert_untouched(before, model, gm, inputs)


@FUZZ
@given(value=junk)
def test_deploy_load(tmp_path_factory, value: Any) -> None:
    """deploy.load on junk or a folder with nothing saved in it."""
    from hierviz.latency import deploy

    if isinstance(value, str):
        value = tmp_path_factory.mktemp("load") / (value.replace("/", "_").replace("\x00", "") or "x")
    refused(lambda: deploy.load(value, device="cpu"), value)  # junk, or a folder with nothing saved


@FUZZ
@given(limit=st.sampled_from(["max_subgraphs", "max_subgraphs_by_backend", "min_coverage", "max_boundary_tensors",
                              "like", "max_subgrafs"]), value=junk)
def test_check_limits(tiny, limit: str, value: Any) -> None:
    """hv.check with junk limits: a passing or failing check, or a one-line HiervizError."""
    model, inputs, gm, part = tiny
    before = snapshot(model, gm, inputs)
    valid = {
        "max_subgraphs": lambda v: v is None or count(v),
        "max_subgraphs_by_backend": lambda v: v is None or isinstance(v, dict) and all(
            k in BACKENDS + ("torch",) and count(n) for k, n in v.items()),
        "min_coverage": lambda v: v is None or isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1,
        "max_boundary_tensors": lambda v: v is None or count(v),
        "like": lambda v: v is None,  # junk is never a Partition
        "max_subgrafs": lambda v: False,
    }

    def run_check() -> None:
        try:
            hv.check(part, **{limit: value})
        except hv.PartitionCheckError:  # a limit it breaks: the check ran
            pass

    expect(valid[limit](value), run_check, value)
    refused(lambda: hv.check(value), value)
    assert_untouched(before, model, gm, inputs)


@FUZZ
@given(value=junk, content=st.sampled_from(["", "{}", "[1, 2]", "not json", '{"format": "hierviz-partition/99"}',
                                            '{"format": "something-else/1"}']))
def test_load_partition(tmp_path_factory, value: Any, content: str) -> None:
    """hv.load_partition on junk, a missing file, and files that are not saved partitions."""
    refused(lambda: hv.load_partition(value), value)  # junk, or a file that does not exist
    path = tmp_path_factory.mktemp("saved") / "x.json"
    path.write_text(content, encoding="utf-8")
    refused(lambda: hv.load_partition(path), content)


@FUZZ
@given(executor=st.one_of(st.text(max_size=20), st.sampled_from(["nosuch", "ray:/x", "host:", "ray://", "a b:1"])))
def test_text_executors_are_checked_up_front(tiny, executor: str) -> None:
    """tune and sweep refuse an executor text that is no Ray address before capturing."""
    from hierviz.compare.ray_executor import check_executor

    model, inputs, gm, _ = tiny
    try:
        check_executor(executor)
        valid = True
    except hv.ConfigError:
        valid = False
    assume(not valid)  # a valid address would start or reach Ray (tests/compare/test_ray*)
    before = snapshot(model, gm, inputs)
    with pytest.raises(hv.ConfigError, match="is not 'ray'"):
        hv.tune(model, inputs, budget=1, executor=executor, progress=False)
    with pytest.raises(hv.ConfigError, match="is not 'ray'"):
        hv.sweep(gm, None, {"min_block_size": [1]}, executor=executor, progress=False)
    assert_untouched(before, model, gm, inputs)


# ---------------------------------------------------------------- the Explorer
EXPLORE_OPTIONS = CONFIG_FIELDS + ("view", "focus", "debounce", "output_dir", "max_nodes", "measure_options",
                                   "name", "measure", "bogus")
CONTROLS = CONFIG_FIELDS + ("view", "focus")


@FUZZ
@given(option=st.sampled_from(EXPLORE_OPTIONS), value=junk)
def test_explore_options(tiny, tmp_path_factory, option: str, value: Any) -> None:
    model, inputs, gm, _ = tiny
    if option == "measure":
        assume(value is not True)  # measuring for real is tested elsewhere
    if option == "min_block_size":
        assume(not (valid_mbs(value) and value > 10**4))
    before = snapshot(model, gm, inputs)
    kwargs = {"debounce": 0, "output_dir": tmp_path_factory.mktemp("ex"), option: value}
    valid = {
        "view": lambda v: v in VIEWS + ("focus",),
        "focus": lambda v: v is None or isinstance(v, str),  # the widget says when nothing matches
        "debounce": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0,
        "output_dir": lambda v: isinstance(v, str),
        "max_nodes": lambda v: v is None or valid_mbs(v),
        "measure_options": lambda v: v is None or v == {},  # junk keys are never hv.measure's options
        "name": lambda v: v is None or isinstance(v, str),
        "measure": lambda v: v is False,
        "bogus": lambda v: False,
    }
    ok = valid[option](value) if option in valid else valid_field(option, value)

    def run() -> None:
        hv.explore(model, inputs, **kwargs).close()

    expect(ok, run, value)
    assert_untouched(before, model, gm, inputs)


def test_explore_refuses_unknown_measure_options(tiny, tmp_path) -> None:
    model, inputs, _, _ = tiny
    refused(lambda: hv.explore(model, inputs, debounce=0, output_dir=tmp_path, measure_options={"a": 1}).close(),
            {"a": 1})


@pytest.fixture(scope="module")
def explorer(tiny, tmp_path_factory):
    model, inputs, _, _ = tiny
    return hv.explore(model, inputs, debounce=0, output_dir=tmp_path_factory.mktemp("explorer"))


@FUZZ
@given(control=st.sampled_from(CONTROLS + ("box", "diff_against", "button")), value=junk)
def test_explorer_controls_never_raise(tiny, explorer, control: str, value: Any) -> None:
    model, inputs, gm, _ = tiny
    before = snapshot(model, gm, inputs)
    ex = explorer
    if control == "box":
        ex.min_block_size_box.value = value
    elif control == "diff_against":
        ex.diff_against.value = value
    elif control == "button":
        ex.buttons[sorted(ex.buttons)[hash(repr(value)) % len(ex.buttons)]].click()
    else:
        ex.controls[control].value = value  # never raises
    assert not ex.internal_errors, repr(ex.internal_errors[-1])
    assert "internal" not in ex.errors
    # either a valid partition or a message saying why not
    assert (ex.partition is not None) or ex.error
    assert_untouched(before, model, gm, inputs)


# ---------------------------------------------------------------- the command line
text = st.one_of(st.text(max_size=10), st.sampled_from(
    ["", "0", "-1", "2.5", "inf", "nan", "1e9", "tensortr", "tensorrt>inductor", "TensorRT", ",", "+", "none",
     "relu.default", "torch.relu", "aten.nope.default", "true", "maybe", "min_block_size=1,x",
     "min_block_size=1", "priority=tensorrt+tensorrt", "skip_fusion=yes", "/proc/zz/x.csv", ".", "x.html",
     "--debug", "-o", "resnt18", "tiny.py:fn"]))
SUBCOMMANDS = {
    "report": ["--min-block-size", "--priority", "--torch-executed-ops", "--inductor-support", "--engine",
               "--demote-to", "-o"],
    "sweep": ["--grid", "--min-block-size", "--priority", "--csv", "--iters", "--warmup", "--engine"],
    "tune": ["--budget", "--timeout", "--seed", "--csv", "--min-block-size", "--executor", "--inductor-support"],
    "zoo": [],
    "info": ["--check"],
    "blockers": ["--kind", "--top", "--min-block-size", "--engine", "--torch-executed-ops"],
    "check": ["--max-subgraphs", "--min-coverage", "--max-boundary-tensors", "--max-subgraphs-by-backend", "--like",
              "--min-block-size"],
    "diff": ["-o", "--view"],
    "cache": [],
}


@FUZZ
@given(command=st.sampled_from(sorted(SUBCOMMANDS)), data=st.data())
def test_cli_subcommands(tmp_path_factory, monkeypatch, capsys, command: str, data: st.DataObject) -> None:
    options = SUBCOMMANDS[command]
    argv = [command]
    if command in ("report", "sweep", "tune", "blockers", "check"):
        argv.append(data.draw(st.sampled_from(["tiny_conv", "resnt18", "x.py:fn", ""]) | text, label="MODEL"))
    if command == "diff":
        argv += data.draw(st.lists(st.sampled_from(["a.json", "missing.json", "tiny_conv"]) | text, min_size=0,
                                   max_size=3), label="FILES")
    if command == "cache":
        argv.append(data.draw(st.sampled_from(["info", "clear"]) | text, label="ACTION"))
    chosen = data.draw(st.lists(st.sampled_from(options), max_size=3, unique=True), label="options") if options else []
    for option in chosen:
        argv += [option] if option == "--check" else [option, data.draw(text, label=option)]
    if command == "tune" and "--budget" not in argv:
        argv += ["--budget", "0"]  # keep it from running trials; the other options are checked first
    if command == "sweep" and "--grid" in argv:
        argv += ["--measure", "--iters", "0"]  # never measure for real
    argv += data.draw(st.lists(text, max_size=2), label="extra")
    monkeypatch.chdir(tmp_path_factory.mktemp("cli"))
    if "--executor" in argv:  # only addresses the check refuses: a valid one would start Ray
        from hierviz.compare.ray_executor import check_executor

        try:
            check_executor(argv[argv.index("--executor") + 1])
            assume(False)
        except (hv.ConfigError, IndexError):
            pass
    try:
        code = cli.main(argv)
    except (cli.UsageError, hv.HiervizError):  # --debug (anywhere on the line) re-raises the mistake
        assert "--debug" in argv
        code = 2
    out, err = capsys.readouterr()
    assert code in ((0, 1, 2) if command == "check" else (0, 2)), (argv, code, err[-2000:])  # check: 1 = a limit broken
    assert "Traceback" not in out + err, (argv, err[-2000:])
    if code == 2:
        assert len(err.strip().splitlines()) <= 1 or "usage:" in err, (argv, err)


def fuzzed_names() -> set[str]:
    """The `hv.<name>`s that the fuzz tests above call or read (their source, parsed), plus the
    classes whose objects they receive (a Partition from hv.partition, an Explorer from hv.explore)."""
    import ast
    import inspect

    names: set[str] = set()
    tests = [f for n, f in globals().items() if n.startswith("test_") and n != "test_fuzz_covers_every_public_function"]
    for fn in (*tests, tiny, explorer, by_graph):
        src = inspect.getsource(getattr(fn, "__wrapped__", fn))
        names |= {n.attr for n in ast.walk(ast.parse(inspect.cleandoc("\n" + src)))
                  if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "hv"}
    received = {"partition": "Partition", "explore": "Explorer"}
    return names | {received[n] for n in names & set(received)}


def test_fuzz_covers_every_public_function() -> None:
    """Every public function and entry class of hv.__all__ is exercised above (a new one needs a
    fuzz case). Errors, value classes and results are what those cases raise and return."""
    returned = {"HiervizError", "ConfigError", "CaptureError", "RenderError", "MeasureError",
                "TensorRTUnavailableError", "SavedModelNotFoundError", "Support", "Subgraph", "Measurement",
                "TuneResult", "Numerics", "ConfigWarning", "CaptureWarning", "MeasureWarning",
                "PartitionCheckError", "SavedPartitionError", "Builds", "BuildError", "BuildRow", "Repro"}
    public = set(hv.__all__) - returned
    assert public - fuzzed_names() == set(), sorted(public - fuzzed_names())
    assert set(cli.build_parser().commands) - {"demo"} <= set(SUBCOMMANDS)  # demo: only --output-dir
