"""Issue 28: each setting is declared once (hierviz.config.SETTINGS) and checked once; a table
row runs each partitioner once.

- adding a setting is one row: a throw-away row shows up in the CLI, to_dict/from_dict, grids
  and their labels, the table columns, tune's choices and the Explorer's controls;
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
from hierviz import config as settings
from hierviz import trt
from hierviz.config import Control, Flag, Setting

needs_trt = pytest.mark.skipif(not trt.available(), reason="runs Torch-TensorRT's own partitioners")
HIERVIZ = Path(hv.__file__).parent


@pytest.fixture(scope="module")
def tiny(zoo_cache):
    model, inputs = zoo_cache.load("tiny_conv")
    return model, inputs, zoo_cache.capture("tiny_conv")


# ---------------------------------------------------------------- adding a setting (docs/architecture.md)
def _parse_note(value):
    if value in ("off", "on"):
        return value
    raise hv.ConfigError(f"note must be 'off' or 'on', not {value!r}")


NOTE = Setting("note", "str", "off", "a throw-away setting: the recipe followed once", parse=_parse_note,
               read_text=str.strip, label=lambda v: f"note={v}" if v != "off" else None,
               flag=Flag("a throw-away setting (off|on)", metavar="off|on"),
               control=Control("choice", "note", options=("off", "on"), row=3))


@pytest.fixture
def note():
    """The throw-away row, added with the documented helper and taken out again."""
    settings.add_setting(NOTE)
    try:
        yield NOTE
    finally:
        settings.remove_setting("note")
    assert "note" not in settings.field_names() and "note" not in {f.name for f in dataclasses.fields(hv.Config)}


def test_adding_a_setting_is_one_row(note, tiny, capsys) -> None:
    model, inputs, gm = tiny
    # Config: a field with its default, checked by its row, in to_dict / from_dict and the label
    assert hv.Config().note == "off"
    cfg = hv.Config(note="on", min_block_size=3)
    assert cfg.to_dict()["note"] == "on" and hv.Config.from_dict(cfg.to_dict()) == cfg
    assert cfg.label() == "tensorrt>inductor(no ops) mbs=3 note=on"
    with pytest.raises(hv.ConfigError, match="note must be 'off' or 'on'"):
        hv.Config(note="maybe")
    assert hv.partition(gm, note="on").config.note == "on"
    # the command line: a flag with its help, read by the row, and a --grid field
    from hierviz import cli
    from hierviz.cli_args import parse_grid

    args = cli.build_parser().parse_args(["report", "tiny_conv", "--note", "on"])
    assert cli.build_config(args).note == "on"
    assert cli.main(["report", "--help"]) == 0
    assert "--note off|on" in capsys.readouterr().out
    assert parse_grid(["note=off,on"]) == {"note": ["off", "on"]}
    # a grid and its table: a column, cells, and the configurations
    df = hv.sweep(gm, None, {"note": ["off", "on"]}, progress=False)
    assert list(df.columns[:8]) == [*settings.field_names()[:7], "note"] and list(df["note"]) == ["off", "on"]
    with pytest.raises(hv.ConfigError, match="grid note=maybe: note must be"):
        hv.sweep(gm, None, {"note": ["off", "maybe"]}, progress=False)
    # tune's choices are the cells
    from hierviz.compare.optuna_space import SearchSpace

    space = SearchSpace({"note": ["on"]}, hv.Config())
    assert [label for label, _ in space.fields["note"]] == ["off", "on"]
    # the Explorer: a control built from the row, read back into the Config
    ex = hv.explore(model, inputs, debounce=0, note="on")
    assert ex.controls["note"].options == ("off", "on") and ex.controls["note"].value == "on"
    ex.controls["note"].value = "off"
    assert ex.config.note == "off" and list(ex.history["note"]) == ["on", "off"]


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
    """Every module counts, trt/ too (its settings check names the CompilationSettings that
    Config mirrors: min_block_size, torch_executed_ops, require_full_compilation)."""
    names = set(settings.field_names())
    spelling = {str(p.relative_to(HIERVIZ)): sorted(found) for p in sorted(HIERVIZ.rglob("*.py"))
                if len(found := _field_literals(p, names)) >= 3}
    assert spelling.pop("config.py") == sorted(names)  # the table
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
    assert df["recommendation"].isna().all()  # only hierviz's engine keeps what it needs; recommend() asks
    runs.clear()
    assert len(hv.partition(gm, engine=engine, priority=("tensorrt",), min_block_size=3).recommend([1, 2])) == 2
    assert len(runs) == 3  # asked for: once for the partition, once per size


def test_a_recommendation_error_is_not_swallowed(tiny, monkeypatch) -> None:
    from hierviz.compare import columns
    from hierviz.partitioner import Partition

    _, _, gm = tiny

    def broken(self, sizes=None):
        raise RuntimeError("recommend broke")

    monkeypatch.setattr(Partition, "recommend", broken)
    with pytest.raises(RuntimeError, match="recommend broke"):
        columns.recommendation(hv.partition(gm))


def test_the_same_mistake_is_the_same_class(tiny) -> None:
    """An argument a function does not take is a ConfigError everywhere (hv.numerics too)."""
    model, inputs, gm = tiny
    part = hv.partition(gm, priority=("inductor",), support={"inductor": hv.support.inductor()})
    for call in (lambda: hv.numerics(part, inputs, itres=3), lambda: hv.measure(part, inputs, itres=3),
                 lambda: hv.partition(gm, itres=3), lambda: hv.Config(itres=3), lambda: hv.sweep(gm, None, {"itres": [3]}),
                 lambda: hv.explore(model, inputs, itres=3)):
        with pytest.raises(hv.ConfigError):
            call()
