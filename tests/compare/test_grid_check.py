"""Issue 23: hv.sweep and hv.tune check the whole grid / space before anything runs and raise
one ConfigError listing every bad value; the command line's --grid uses the same check."""

from __future__ import annotations

import importlib

import pytest

import hierviz as hv
from hierviz.cli import commands as cli
from hierviz.compare import grid as grid_mod
from hierviz.compare import tuning

sweep_mod = importlib.import_module("hierviz.compare.sweep")  # hv.compare.sweep is the function
BAD = {"min_block_size": ["x", 2], "priority": ["foo", "tensorrt"], "torch_executed_ops": [{"sigmoidx"}]}


@pytest.fixture
def nothing_runs(monkeypatch: pytest.MonkeyPatch) -> list:
    """Records every capture sweep / tune would start."""
    started: list = []
    monkeypatch.setattr(sweep_mod, "graph_of", lambda *a: started.append(a))
    monkeypatch.setattr(tuning, "graph_of", lambda *a: started.append(a))
    return started


def test_sweep_lists_every_bad_value_before_running(small, nothing_runs) -> None:
    model, inputs, _ = small
    with pytest.raises(hv.ConfigError) as info:
        hv.sweep(model, inputs, BAD, progress=False)
    message = str(info.value)
    assert message.startswith("grid has 3 bad values (nothing ran): ")
    assert "min_block_size=x: min_block_size must be an integer >= 1" in message
    assert "priority=foo: unknown backend 'foo'" in message
    assert "torch_executed_ops={'sigmoidx'}: unknown op name 'sigmoidx'" in message
    assert "\n" not in message and nothing_runs == []


def test_tune_space_is_called_space_and_checked_before_capturing(small, nothing_runs) -> None:
    model, inputs, _ = small
    with pytest.raises(hv.ConfigError, match=r"^space: unknown Config field\(s\) \['bogus'\]"):
        hv.tune(model, inputs, space={"bogus": [1]}, budget=1, progress=False)
    with pytest.raises(hv.ConfigError) as info:
        hv.tune(model, inputs, space=BAD, budget=1, progress=False)
    assert str(info.value).startswith("space has 3 bad values (nothing ran): min_block_size=x: ")
    assert nothing_runs == []


def test_a_value_valid_only_with_another_grid_value_is_accepted(small) -> None:
    """A custom backend in priority whose support is given in the grid's support values."""
    model, inputs, _ = small
    mine = {"mine": hv.support.ops(["torch.ops.aten.relu.default"])}
    parsed, configs = grid_mod.check_grid({"priority": [("mine", "tensorrt")], "support": [mine]})
    assert [c.priority for c in configs] == [("mine", "tensorrt")]
    with pytest.raises(hv.ConfigError, match=r"^grid priority=\('mine2',\): unknown backend 'mine2'"):
        grid_mod.check_grid({"priority": [("mine2",)], "support": [mine]})


def test_the_command_line_uses_the_same_check(capsys: pytest.CaptureFixture, monkeypatch, tmp_path) -> None:
    loaded: list = []
    monkeypatch.setattr(cli, "load_model", lambda spec: loaded.append(spec))
    code = cli.main(["sweep", "tiny_conv", "--grid", "min_block_size=x,0,2", "--grid",
                     "priority=foo,tensorrt>inductor", "--grid", "torch_executed_ops=sigmoidx",
                     "--csv", str(tmp_path / "s.csv")])
    err = capsys.readouterr().err
    assert code == 2 and loaded == [] and len(err.strip().splitlines()) == 1
    assert err.startswith("hierviz: error: --grid has 4 bad values (nothing ran): ")
    for part in ("min_block_size=x: 'x' is not a whole number", "min_block_size=0: min_block_size must be >= 1",
                 "priority=foo: unknown backend 'foo'", "torch_executed_ops=sigmoidx: unknown op name 'sigmoidx'"):
        assert part in err
    # the Python grid with the same values as text says the same about each
    with pytest.raises(hv.ConfigError) as info:
        grid_mod.check_grid({"min_block_size": ["x", "0", "2"], "priority": ["foo", "tensorrt>inductor"],
                             "torch_executed_ops": ["sigmoidx"]}, text=True, name="--grid")
    assert "hierviz: error: " + cli.sentence(str(info.value)) == err.strip()
    assert not (tmp_path / "s.csv").exists()


def test_many_bad_values_are_counted_beyond_the_first_eight() -> None:
    with pytest.raises(hv.ConfigError) as info:
        grid_mod.check_grid({"min_block_size": [0, -1, -2, -3, -4, -5, -6, -7, -8, -9]})
    assert str(info.value).startswith("grid has 10 bad values (nothing ran): min_block_size=0: ")
    assert str(info.value).endswith("; and 2 more")
