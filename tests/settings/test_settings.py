"""Issue 28 and 36: each setting is declared once (a Config field and its row) and checked once;
a table row runs each partitioner once.

- every field carries its row, has an Explorer control and, where torch_tensorrt.compile's
  partitioners run it their own way, compile's value and rule; every setting shows up in the
  CLI, to_dict/from_dict, grids, the table columns, tune's choices and the Explorer's controls;
- outside the table, at most two modules spell several setting names as literals;
- a sweep row checks its combination once, reads each grid value once, and runs upstream's
  partitioner once (no recommend() re-running it per candidate size).
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import hierviz as hv
from hierviz.settings import config as settings
from hierviz import trt

needs_trt = pytest.mark.skipif(not trt.available(), reason="runs Torch-TensorRT's own partitioners")
HIERVIZ = Path(hv.__file__).parent


@pytest.fixture(scope="module")
def tiny(zoo_cache):
    model, inputs = zoo_cache.load("tiny_conv")
    return model, inputs, zoo_cache.capture("tiny_conv")


# ---------------------------------------------------------------- every setting on every surface
# A value other than the default for each setting, as Python and as command-line text (None:
# no text form); together they are one valid Config. A field missing here fails the first test.
SAMPLES = {
    "priority": (("inductor", "tensorrt"), "inductor>tensorrt"),
    "support": ({"inductor": hv.support.ops(["torch.ops.aten.relu.default"])}, None),
    "min_block_size": (2, "2"),
    "torch_executed_ops": (frozenset({"torch.ops.aten.relu.default"}), "aten.relu.default"),
    "require_full_compilation": (True, "yes"),
    "skip_fusion": (True, "true"),
    "demote_to": ("next", "next"),
    "engine": ("torch_tensorrt", "hierarchical"),
}


def test_every_field_carries_its_row_and_its_declarations() -> None:
    """Each Config field's metadata is its row; the Explorer declares a control for it; the
    settings compile's partitioners run their own way have compile's value and rule."""
    from hierviz.settings import compile_rules
    from hierviz.widget.control_spec import CONTROLS

    fields = dataclasses.fields(hv.Config)
    assert [f.name for f in fields] == list(settings.field_names()) and set(SAMPLES) == set(settings.field_names())
    for f in fields:
        row = f.metadata["setting"]
        assert settings.setting(f.name) == dataclasses.replace(row, name=f.name, annotation=f.type, default=f.default)
        assert row.flag is not None and row.doc
    assert set(CONTROLS) == set(settings.field_names())
    own_way = {row.name for row in settings.SETTINGS if not row.takes_every_value("fast")}
    assert set(compile_rules.COMPILE_VALUES) == set(compile_rules.RULES) == own_way
    assert not hasattr(settings, "add_setting") and not hasattr(settings, "remove_setting")


def test_every_setting_appears_on_every_surface(tiny, capsys) -> None:
    """CLI flag and its reading, --grid, to_dict / from_dict, label, sweep column, tune's
    choices and the Explorer's control, for every field of Config."""
    from hierviz.cli import commands as cli
    from hierviz.cli.args import parse_grid
    from hierviz.compare.optuna_space import SearchSpace

    model, inputs, gm = tiny
    default = hv.Config()
    sample = hv.Config(**{name: value for name, (value, _) in SAMPLES.items()})
    assert hv.Config.from_dict(sample.to_dict()) == sample
    assert cli.main(["report", "--help"]) == 0
    helptext = capsys.readouterr().out
    df = hv.sweep(gm, None, {name: [value] for name, (value, _) in SAMPLES.items()}, progress=False)
    for row in settings.SETTINGS:
        name, (value, text) = row.name, SAMPLES[row.name]
        checked = getattr(sample, name)
        assert checked != getattr(default, name), name
        # to_dict: its key, and a Config from the dict of one change keeps it
        assert hv.Config.from_dict({name: sample.to_dict()[name]}) == default.replace(**{name: value})
        # the command line: its option in the help, read into the same value
        assert row.option in helptext, name
        flag_text = "all" if text is None else text  # --inductor-support: what inductor takes
        args = cli.build_parser().parse_args(["report", "tiny_conv", row.option]
                                             + ([] if row.flag.metavar is None else [flag_text]))
        read = getattr(cli.build_config(args), name)
        assert read != getattr(default, name), name
        assert read == (checked if text is not None else {"inductor": hv.support.inductor()}), name
        # --grid takes every setting written as text
        if text is not None:
            assert parse_grid([f"{name}={text}"]) == {name: [row.parse(row.from_text(text))]}, name
        # the sweep's table: a column with the value's cell
        assert df[name].iloc[0] == row.show(checked), name
        # tune's choices: the base value's cell and the space's (the engine is compared, not tuned)
        if name == "engine":
            with pytest.raises(hv.ConfigError, match="cannot vary 'engine'"):
                SearchSpace({name: [value]}, default)
        else:
            choices = SearchSpace({name: [checked]}, default).fields[name]
            assert [value for _, value in choices] == [getattr(default, name), checked], name
            assert [str(label).startswith(str(row.show(v))) for label, v in choices] == [True, True], name
    # the Explorer: a control per setting, showing the Config's value, read back into it
    explorer_sample = sample.replace(engine="hierviz" if not trt.available() else "torch_tensorrt",
                                     require_full_compilation=False)
    ex = hv.explore(model, inputs, explorer_sample, debounce=0)
    from hierviz.widget.controls import state_values

    assert set(settings.field_names()) <= set(ex.controls)
    assert hv.Config(**state_values(ex.controls)) == explorer_sample == ex.config
    ex.controls["min_block_size"].value = 3
    assert ex.config == explorer_sample.replace(min_block_size=3)


# ---------------------------------------------------------------- field names spelled once
def _field_literals(path: Path, names: set[str]) -> set[str]:
    """The setting names `path` spells as string literals (docstrings left out)."""
    tree = ast.parse(path.read_text())
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and id(node) not in docs
            and isinstance(node.value, str) and node.value in names}


def test_at_most_two_modules_besides_the_table_spell_several_setting_names() -> None:
    """Besides the table and its two declarations keyed by setting (the Explorer's controls,
    compile's rules), every module counts, trt/ too (its settings check names the CompilationSettings that
    Config mirrors: min_block_size, torch_executed_ops, require_full_compilation)."""
    names = set(settings.field_names())
    spelling = {str(p.relative_to(HIERVIZ)): sorted(found) for p in sorted(HIERVIZ.rglob("*.py"))
                if len(found := _field_literals(p, names)) >= 3}
    for table in ("settings/config.py", "settings/setting_values.py"):  # the table: Config's fields and their readers
        spelling.pop(table, None)
    assert spelling.pop("widget/control_spec.py") == sorted(names)  # the Explorer's control of each
    own_way = {row.name for row in settings.SETTINGS if not row.takes_every_value("fast")}
    assert spelling.pop("settings/compile_rules.py") == sorted(own_way | {"engine"})  # what compile runs its own way
    assert len(spelling) <= 2, spelling


def test_the_scan_sees_a_module_that_spells_the_field_list(tmp_path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('"""priority min_block_size skip_fusion"""\nFIELDS = ("priority", "min_block_size", '
                   '"skip_fusion")\n')
    assert _field_literals(bad, set(settings.field_names())) == {"priority", "min_block_size", "skip_fusion"}


# ---------------------------------------------------------------- checked once, run once
def test_engine_is_a_setting_and_partition_engine_overrides_it(tiny) -> None:
    _, _, gm = tiny
    assert hv.Config().engine == "hierviz" and hv.Config(engine="hierarchical").engine == "torch_tensorrt"
    with pytest.raises(hv.ConfigError, match="engine must be one of"):
        hv.Config(engine="fats")
    cfg = hv.Config(min_block_size=2, engine="hierviz")
    assert hv.partition(gm, cfg).engine == "hierviz"
    assert hv.partition(gm, config=cfg.to_dict()).config == cfg
    other = hv.Config(min_block_size=2, engine="torch_tensorrt")
    assert hv.partition(gm, other, engine="hierviz").config == cfg  # engine= overrides the config's


def test_a_sweep_reads_each_value_once_and_checks_each_combination_once(tiny, monkeypatch) -> None:
    _, _, gm = tiny
    calls = {"parse": 0, "together": 0}
    row = settings.setting("min_block_size")

    def counted_parse(value):
        calls["parse"] += 1
        return row.parse(value)

    real_together = settings._check_together

    def counted_together(cfg):
        calls["together"] += 1
        return real_together(cfg)

    table = list(settings.SETTINGS)
    table[settings.field_names().index("min_block_size")] = dataclasses.replace(row, parse=counted_parse)
    monkeypatch.setattr(settings, "SETTINGS", table)
    monkeypatch.setattr(settings, "_check_together", counted_together)
    base = hv.Config()
    calls.update(parse=0, together=0)
    df = hv.sweep(gm, None, {"min_block_size": [1, 3, 5]}, base=base, progress=False)
    assert list(df["min_block_size"]) == [1, 3, 5] and df["error"].isna().all()
    # each grid value read once; per value and per combination one check of the rules between settings
    assert calls == {"parse": 3, "together": 3 + 3}
    calls.update(parse=0, together=0)
    hv.partition(gm, base)  # a Config is valid as it is: nothing is checked again
    assert calls == {"parse": 0, "together": 0}


@needs_trt
@pytest.mark.parametrize("engine,runner", [("torch_tensorrt", "run_upstream_partitioner"),
                                           ("fast", "run_compile_partitioner")])
def test_a_sweep_row_runs_the_partitioner_once(tiny, monkeypatch, engine: str, runner: str) -> None:
    """Issue 28's acceptance: a 2-row sweep over engine="torch_tensorrt" ran upstream's
    partitioner 12 times (recommend() re-ran it per candidate size, swallowing errors)."""
    from hierviz.compare.partition_cache import clear_cache

    _, _, gm = tiny
    runs = []
    real = getattr(trt, runner)

    def counted(*args, **kwargs):
        runs.append(kwargs.get("min_block_size"))
        return real(*args, **kwargs)

    monkeypatch.setattr(trt, runner, counted)
    clear_cache()
    df = hv.sweep(gm, None, {"engine": [engine], "min_block_size": [1, 3]}, base=hv.Config(priority=("tensorrt",)),
                  progress=False)
    assert df["error"].isna().all() and list(df["engine"]) == [engine, engine]
    assert sorted(runs) == [1, 3]  # once per row
    assert "recommendation" not in df.columns  # recommend() is asked for, below
    runs.clear()
    assert len(hv.partition(gm, engine=engine, priority=("tensorrt",), min_block_size=3).recommend([1, 2])) == 2
    assert len(runs) == 3  # asked for: once for the partition, once per size


def test_the_same_mistake_is_the_same_class(tiny) -> None:
    """An argument a function does not take is a ConfigError everywhere (hv.numerics too)."""
    model, inputs, gm = tiny
    part = hv.partition(gm, priority=("inductor",), support={"inductor": hv.support.inductor()})
    for call in (lambda: hv.numerics(part, inputs, itres=3), lambda: hv.measure(part, inputs, itres=3),
                 lambda: hv.partition(gm, itres=3), lambda: hv.Config(itres=3),
                 lambda: hv.sweep(gm, None, {"itres": [3]}), lambda: hv.explore(model, inputs, itres=3)):
        with pytest.raises(hv.ConfigError):
            call()


def test_a_packet_in_torch_executed_ops_is_every_overload_for_torch_tensorrt():
    from hierviz.foundation.opnames import overload_names

    names = overload_names("torch.ops.aten.addmm")
    assert "torch.ops.aten.addmm.default" in names and "torch.ops.aten.addmm.out" in names
    assert overload_names("torch.ops.aten.split.Tensor") == ["torch.ops.aten.split.Tensor"]
    assert overload_names("_operator.getitem") == ["_operator.getitem"]
