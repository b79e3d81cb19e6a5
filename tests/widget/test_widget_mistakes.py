"""Mistakes made with the Explorer: wrong options are ConfigErrors at once; a value a control
cannot take is refused with a message in the widget (never a TraitError, never silent); the
history keeps min_block_size as integers."""

from __future__ import annotations

import html

import pytest

import hierviz as hv
from hierviz.widget import Explorer


@pytest.fixture
def ex(small, tmp_path) -> Explorer:
    model, inputs, _ = small
    return hv.explore(model, inputs, debounce=0, output_dir=tmp_path)


def test_explore_takes_config_fields_as_overrides_like_partition(small) -> None:
    model, inputs, gm = small
    ex = hv.explore(model, inputs, min_block_size=2, priority="inductor>tensorrt",
                    support={"inductor": hv.support.inductor()}, debounce=0)
    want = hv.partition(gm, min_block_size=2, priority=("inductor", "tensorrt"),
                        support={"inductor": hv.support.inductor()})
    assert ex.partition.config == want.config
    assert ex.controls["min_block_size"].value == 2
    assert list(ex.controls["priority"].value) == ["inductor", "tensorrt"]
    base = hv.Config(skip_fusion=True)
    assert hv.explore(model, inputs, base, min_block_size=3, debounce=0).config == base.replace(min_block_size=3)


@pytest.mark.parametrize("kwargs,expected", [
    (dict(debounce="x"), "debounce must be a number of seconds >= 0"),
    (dict(debounce=-1), "debounce must be a number of seconds >= 0"),
    (dict(debounce=float("nan")), "debounce must be a number of seconds >= 0"),
    (dict(view="tree"), "view must be one of auto, full, collapsed, focus"),
    (dict(measure="yes"), "measure is True or False"),
    (dict(max_nodes=0), "max_nodes must be a whole number >= 1"),
    (dict(min_block_size=0), "min_block_size must be >= 1"),
    (dict(min_blok_size=2), "unknown argument(s) ['min_blok_size']"),
    (dict(output_dir=5), "output_dir must be a path"),
    (dict(measure_options={"progress": True}), "measure_options must not set progress: the Explorer shows its own"),
])
def test_wrong_explorer_arguments_are_config_errors(small, kwargs, expected) -> None:
    model, inputs, _ = small
    with pytest.raises(hv.ConfigError) as info:
        hv.explore(model, inputs, **kwargs)
    assert expected in str(info.value)


@pytest.mark.parametrize("value,expected", [
    (0, "min_block_size 0 is outside the range 1..{top}; kept 5"),
    (-5, "min_block_size -5 is outside the range 1..{top}; kept 5"),
    (10**6, "min_block_size 1000000 is outside the range 1..{top}; kept 5"),
    (2.7, "min_block_size must be a whole number from 1 to {top}, not float 2.7; kept 5"),
    (True, "min_block_size must be a whole number from 1 to {top}, not bool True; kept 5"),
])
def test_slider_values_out_of_range_are_refused_with_a_message(ex: Explorer, value, expected) -> None:
    top = ex.controls["min_block_size"].max
    ex.controls["min_block_size"].value = value  # no TraitError, no silent clamp
    message = expected.format(top=top)
    assert ex.errors["control"].startswith(message)
    assert html.escape(message) in ex.panels["error"].value
    assert ex.controls["min_block_size"].value == 5 and ex.min_block_size_box.value == 5
    assert ex.partition.config.min_block_size == 5 and len(ex.history) == 1
    ex.min_block_size_box.value = -1  # the box beside it has the same rule
    assert "min_block_size -1 is outside" in ex.errors["control"]
    ex.controls["min_block_size"].value = 3  # the next valid change clears the message
    assert "control" not in ex.errors and ex.partition.config.min_block_size == 3


@pytest.mark.parametrize("control,value,expected", [
    ("view", "tree", "view must be one of auto, full, collapsed, focus"),
    ("view", None, "view must be one of"),
    ("priority", 5, "priority takes a list of names, not int 5"),
    ("priority", None, "priority takes a list of names, not NoneType"),
    ("min_block_size", None, "min_block_size must be a whole number"),
    ("skip_fusion", None, "skip_fusion is True or False"),
    ("torch_executed_ops", 3.5, "torch_executed_ops takes a list of names"),
    ("torch_executed_ops", ["torch.ops.aten.nope.default"], "torch_executed_ops: unknown op name"),
    ("require_full_compilation", "no", "require_full_compilation is True or False, not str 'no'"),
    ("skip_fusion", 1, "skip_fusion is True or False"),
    ("measure", "yes", "measure is True or False"),
    ("focus", 5, "focus takes a node name or subgraph tag"),
    ("support", "inductor", "support takes a dict backend -> choice"),
    ("support", {"tensorrt": "default", "inductor": "all"}, "support: inductor='all' is not a choice; each of"),
    ("support", {"tvm": "inductor"}, "support: tvm='inductor' is not a choice"),
])
def test_controls_refuse_values_they_cannot_show(ex: Explorer, control, value, expected) -> None:
    before = ex.controls[control].value
    ex.controls[control].value = value  # must not raise (ipywidgets would raise TraitError)
    assert expected in ex.errors["control"]
    assert ex.controls[control].value == before
    assert ex.partition is not None and not ex.internal_errors
    ex.diff_against.value = "nowhere"
    assert "diff against must be one of previous, pinned" in ex.errors["control"]


def test_control_values_of_the_wrong_kind_reach_config_and_are_shown(ex: Explorer) -> None:
    ex.controls["torch_executed_ops"].value = [5]
    assert ex.partition is None and "op names are strings" in ex.error
    ex.controls["torch_executed_ops"].value = ["torch.relu"]  # a name the box resolves as Config does: refused
    assert "torch.ops.aten.relu.default" in ex.errors["control"] and "never match" in ex.errors["control"]
    ex.controls["priority"].value = ["TensorRT", "inductor"]  # built-ins in any case
    ex.controls["torch_executed_ops"].value = []
    assert ex.error is None and ex.partition.config.priority == ("tensorrt", "inductor")
    assert not ex.internal_errors


def test_history_keeps_min_block_size_as_integers(ex: Explorer) -> None:
    ex.controls["min_block_size"].value = 2
    ex.controls["priority"].value = []  # an error row in between
    ex.controls["priority"].value = ["tensorrt", "inductor"]
    ex.controls["min_block_size"].value = 3
    hist = ex.history
    assert list(hist["min_block_size"]) == [5, 2, 2, 2, 3]
    assert str(hist["min_block_size"].dtype) == "int64"
    assert "<td>2.0</td>" not in ex.panels["history"].value and "<td>5.0</td>" not in ex.panels["history"].value
