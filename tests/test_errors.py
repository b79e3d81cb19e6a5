"""Issue 12's catalogue of user mistakes: each one raises a hv.HiervizError subclass whose one
line says what is wrong and what to write instead (suggestions name the right thing), and the
one settings parser reads text the same way in Config, hv.sweep and the tables.
docs/errors.md lists the same inputs and messages."""

from __future__ import annotations

import warnings

import pytest
import torch

import hierviz as hv
from hierviz.settings.config import config_from_text, parse_config, parse_text
from hierviz.errors import ConfigWarning

A = "torch.ops.aten."


@pytest.fixture(scope="module")
def tiny(zoo_cache):
    model, inputs = zoo_cache.load("tiny_conv")
    gm = zoo_cache.capture("tiny_conv")
    return model, inputs, gm, hv.partition(gm)


def one_line(exc: BaseException) -> str:
    text = str(exc)
    assert "\n" not in text.strip(), text
    return text


# ---------------------------------------------------------------- raw errors that are ConfigErrors now
@pytest.mark.parametrize("kwargs,expected", [
    (dict(torch_executed_ops=5), ["torch_executed_ops must be a set of op names", "not int 5"]),
    (dict(torch_executed_ops=[5]), ["op names are strings", "not int 5"]),
    (dict(torch_executed_ops=[None]), ["op names are strings", "NoneType None"]),
    (dict(min_block_size=float("inf")), ["min_block_size must be an integer >= 1", "inf"]),
    (dict(min_block_size=float("nan")), ["min_block_size must be an integer >= 1", "nan"]),
    (dict(min_block_size=2.7), ["min_block_size must be an integer >= 1", "2.7"]),
    (dict(min_block_size=5.0), ["must be an int, not the float 5.0", "write 5"]),
    (dict(min_block_size=True), ["min_block_size must be an integer >= 1", "bool True"]),
    (dict(min_block_size=0), ["min_block_size must be >= 1 (got 0)"]),
    (dict(require_full_compilation="no"), ["require_full_compilation is True or False", "'no'"]),
    (dict(skip_fusion=1), ["skip_fusion is True or False", "int 1"]),
    (dict(priority=5), ["priority must be backend names", "'tensorrt>inductor'"]),
    (dict(priority=("tensorrt", 5)), ["backend names are strings", "int 5"]),
    (dict(priority=("tensortr",)), ["unknown backend 'tensortr', did you mean 'tensorrt'?"]),
    (dict(priority=("indutcor", "tensorrt")), ["unknown backend 'indutcor', did you mean 'inductor'?"]),
    (dict(priority="my.backend", support={"my.backend": hv.support.none()}),
     ["backend name 'my.backend' is not usable", "letters, digits and '_'"]),
    (dict(priority=("tensorrt", "torch")), ["'torch' is not a backend", "fallback"]),
    (dict(priority=("tensorrt", "TensorRT")), ["lists a backend twice"]),
    (dict(support=5), ["support must map backend name -> hv.support"]),
    (dict(support={"inductor": "all"}), ["support['inductor'] must be a hv.Support", "not str"]),
    (dict(dynamic_shapes={"x": None}), ["dynamic_shapes is an argument of capturing", "hv.capture"]),
    (dict(min_blok_size=3), ["unknown Config field(s) ['min_blok_size']", "did you mean 'min_block_size'?"]),
])
def test_wrong_config_values_are_one_line_config_errors(tiny, kwargs, expected) -> None:
    _, _, gm, _ = tiny
    calls = [lambda: hv.Config(**kwargs), lambda: hv.Config().replace(**kwargs)]
    if "dynamic_shapes" not in kwargs:  # hv.partition takes that one (see below)
        calls.append(lambda: hv.partition(gm, **kwargs))
    for call in calls:
        with pytest.raises(hv.ConfigError) as info:
            call()
        text = one_line(info.value)
        for part in expected:
            assert part in text, (kwargs, text)


def test_torch_level_op_names_point_to_the_aten_ops_they_lower_to() -> None:
    with pytest.raises(hv.ConfigError) as info:
        hv.Config(torch_executed_ops={"torch.relu"})
    text = one_line(info.value)
    assert "never match" in text and f"'{A}relu.default'" in text
    with pytest.raises(hv.ConfigError, match=rf"'{A}special_i0e.default'"):
        hv.Config(torch_executed_ops={"torch.special.i0e"})
    with pytest.raises(hv.ConfigError, match=rf"'{A}gelu.default'"):
        hv.Config(torch_executed_ops={torch.nn.functional.gelu})  # the function object, too
    # misspelled aten names get the closest real ones
    with pytest.raises(hv.ConfigError, match=rf"Did you mean .*'{A}relu.default'"):
        hv.Config(torch_executed_ops={"aten.relu.defalt"})


def test_recommend_and_diff_validate_their_arguments(tiny) -> None:
    _, _, gm, p = tiny
    with pytest.raises(hv.ConfigError) as info:
        p.recommend(5)
    assert "p.recommend([1, 3, 5])" in one_line(info.value)
    with pytest.raises(hv.ConfigError, match=r"recommend: min_block_size must be an integer >= 1.*'a'"):
        p.recommend(["a"])
    with pytest.raises(hv.ConfigError, match=r"recommend: min_block_size must be >= 1 \(got 0\)"):
        p.recommend([3, 0])
    assert list(p.recommend([2, 4])["min_block_size"]) == [2, 4]
    with pytest.raises(hv.ConfigError) as info:
        hv.diff(p, 5)
    assert "hv.diff takes two hv.Partition" in one_line(info.value) and "second is int 5" in str(info.value)
    with pytest.raises(hv.ConfigError, match="the first is str"):
        hv.diff("p", p)


def test_partition_forwards_capture_arguments(tiny) -> None:
    _, _, gm, _ = tiny
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU()).eval()
    inputs = (torch.randn(4, 8),)
    dim = torch.export.Dim("batch", min=2, max=64)
    q = hv.partition(model, inputs, dynamic_shapes=({0: dim},), min_block_size=1)
    shape = next(n for n in q.graph.graph.nodes if n.op == "placeholder").meta["val"].shape
    assert not isinstance(shape[0], int)  # the batch is symbolic: dynamic_shapes reached hv.capture
    assert isinstance(hv.partition(model, inputs, min_block_size=1).graph.graph.find_nodes(op="placeholder")[0]
                      .meta["val"].shape[0], int)
    with pytest.raises(hv.ConfigError, match=r"already captured.*hv.capture"):
        hv.partition(gm, dynamic_shapes=({0: dim},))


def test_support_for_a_backend_not_in_priority_warns() -> None:
    with pytest.warns(ConfigWarning, match=r"'onnx', which is not in priority .* ignored.*priority=\('onnx', "):
        hv.Config(support={"onnx": hv.support.none()})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hv.Config(priority=("onnx", "tensorrt"), support={"onnx": hv.support.none()})  # used: no warning
        hv.Config(priority=("tensorrt",), support={"inductor": hv.support.inductor()})  # built-in switched off


# ---------------------------------------------------------------- one parser, every text form
@pytest.mark.parametrize("text", ["tensorrt>inductor", "tensorrt,inductor", "TensorRT > Inductor",
                                  "tensorrt+inductor", " tensorrt , inductor "])
def test_priority_text_forms_mean_the_same_everywhere(text: str) -> None:
    expected = ("tensorrt", "inductor")
    assert hv.Config(priority=text).priority == expected
    assert parse_text("priority", text) == expected
    assert parse_config({"priority": text}).priority == expected
    assert hv.Config.from_dict({"priority": text}).priority == expected
    assert hv.Config().replace(priority=text).priority == expected


def test_op_name_text_forms() -> None:
    want = frozenset({A + "relu.default", A + "add.Tensor"})
    for value in ("relu.default, add.Tensor", "aten.relu.default,aten.add.Tensor",
                  [A + "relu.default", "add.Tensor"], {torch.ops.aten.relu.default, torch.ops.aten.add.Tensor}):
        assert hv.Config(torch_executed_ops=value).torch_executed_ops == want, value
    assert parse_text("torch_executed_ops", "relu.default+aten.add.Tensor") == want
    assert parse_text("torch_executed_ops", "none") == frozenset()


@pytest.mark.parametrize("name,text,value", [
    ("min_block_size", "3", 3), ("skip_fusion", "yes", True), ("skip_fusion", "False", False),
    ("require_full_compilation", "1", True), ("require_full_compilation", "off", False),
])
def test_text_for_typed_fields(name: str, text: str, value) -> None:
    assert parse_text(name, text) == value
    assert type(parse_text(name, text)) is type(value)


def test_config_from_text() -> None:
    cfg = config_from_text({"priority": "Inductor>TensorRT", "min_block_size": "3", "skip_fusion": "yes",
                            "require_full_compilation": "false", "torch_executed_ops": "relu.default"},
                           base=hv.Config(support={"inductor": hv.support.inductor()}))
    assert cfg == hv.Config(priority=("inductor", "tensorrt"), support={"inductor": hv.support.inductor()},
                            min_block_size=3, skip_fusion=True, torch_executed_ops={A + "relu.default"})
    with pytest.raises(hv.ConfigError, match="min_block_size: 'three' is not a whole number"):
        config_from_text({"min_block_size": "three"})


@pytest.mark.parametrize("name,text,expected", [
    ("min_block_size", "2.5", "not a whole number"),
    ("min_block_size", "0", ">= 1"),
    ("skip_fusion", "maybe", "'maybe' is not true/false"),
    ("priority", "", "priority is empty"),
    ("torch_executed_ops", "relu.defalt", f"'{A}relu.default'"),
    ("support", "all", "cannot be given as text"),
    ("min_blocksize", "3", "did you mean 'min_block_size'"),
])
def test_bad_text_is_a_config_error(name: str, text: str, expected: str) -> None:
    with pytest.raises(hv.ConfigError) as info:
        parse_text(name, text)
    assert expected in one_line(info.value)


def test_unknown_backend_text_suggests_the_builtin() -> None:
    with pytest.raises(hv.ConfigError) as info:
        parse_config({"priority": "tensortr>inductor"})
    assert "unknown backend 'tensortr', did you mean 'tensorrt'?" in one_line(info.value)


def test_sweep_reads_the_same_text_as_config(tiny) -> None:
    _, _, gm, _ = tiny
    df = hv.sweep(gm, None, {"priority": ["tensorrt>inductor", "tensorrt,inductor", ("tensorrt", "inductor")],
                             "torch_executed_ops": ["relu.default"]}, progress=False)
    assert df["error"].isna().all()
    assert list(df["priority"]) == ["tensorrt>inductor"] * 3
    assert list(df["torch_executed_ops"]) == [A + "relu.default"] * 3
    assert df["subgraphs"].nunique() == 1
    # an invalid value stops the sweep before it runs, naming the value as typed
    with pytest.raises(hv.ConfigError, match=r"^grid min_block_size=2.5: min_block_size must be an integer"):
        hv.sweep(gm, None, {"min_block_size": [2, 2.5]}, progress=False)
    good = hv.sweep(gm, None, {"min_block_size": [1, 3]}, progress=False)
    assert str(good["min_block_size"].dtype) == "int64"
    from hierviz.compare.grid import check_grid  # the check hv.sweep, hv.tune and --grid run

    with pytest.raises(hv.ConfigError, match=r"^grid min_block_size=2.5: min_block_size must be"):
        check_grid({"min_block_size": [2, 2.5]})
    assert [c.min_block_size for c in check_grid({"min_block_size": [1, 3]})[1]] == [1, 3]


def test_other_listed_mistakes(tiny) -> None:
    """The rest of issue 12's list (fixed in latency/ and support.py): one line each."""
    _, _, gm, p = tiny
    with pytest.raises(hv.MeasureError) as info:
        hv.measure(p, None, device="cpu")
    assert "needs example inputs" in one_line(info.value)
    with pytest.raises(hv.ConfigError) as info:
        hv.partition(gm, priority=("mine",), support={"mine": hv.support.where(5)})
    assert "needs a callable" in one_line(info.value)


def test_a_config_error_keeps_the_setting_it_names_apart_from_its_reason():
    """The command line and a grid name the setting their own way, from these fields, not by
    reading the message's first words."""
    with pytest.raises(hv.ConfigError) as err:
        hv.Config(torch_executed_ops={"aten.relux.default"})
    assert err.value.setting == "torch_executed_ops"
    assert err.value.reason.startswith("unknown op name 'aten.relux.default'.")
    assert str(err.value) == f"torch_executed_ops: {err.value.reason}"
    plain = hv.ConfigError("min_block_size must be >= 1 (got 0)")
    assert plain.setting is None and plain.reason == str(plain)
