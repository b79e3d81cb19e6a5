"""Grids of settings (hv.sweep's `grid`, hv.tune's `space`, the command line's `--grid`):
expanded into configurations and checked as a whole before anything runs.

`check_grid` is the one check: every value of every setting (the engine included) is read
once by its row of the settings table (hierviz.settings.config; text too, for the command line),
then every combination is made from the checked values (only the rules between settings
run); all the bad values come back in one ConfigError, so a typo in the last value does not
cost the rest of the sweep. The Configs it returns are what runs: nothing checks them again.
"""

from __future__ import annotations

import itertools
import warnings
from typing import Any, Mapping

from hierviz.settings.config import Config, check_fields, derive, setting

from hierviz.settings.engine_table import COMPILE_ENGINES
from hierviz.errors import ConfigError
from hierviz.partitioner import make_config

# At most this many combinations of the other fields are tried to see whether a value that
# fails on the base Config is valid together with some other grid value (priority + support).
_PARTNERS = 64
_SHOWN = 8  # bad values listed by name; the rest are counted


def grid_values(field: str, values: Any) -> list[Any]:
    """A grid entry as a list of values; one value (or a string, or a support mapping) is a
    list of one."""
    if isinstance(values, (str, bytes, Config)) or not hasattr(values, "__iter__"):
        return [values]
    if isinstance(values, Mapping):
        return [values]
    if isinstance(values, (set, frozenset)):
        return sorted(values, key=repr)
    return list(values)


def _shape(grid: Any, name: str) -> dict[str, list[Any]]:
    if not isinstance(grid, Mapping):
        raise ConfigError(f"{name} must map Config fields to lists of values, e.g. "
                          "{'min_block_size': [1, 3, 5], 'priority': ['tensorrt>inductor', 'inductor>tensorrt']}")
    try:
        check_fields(grid)
    except ConfigError as exc:
        raise ConfigError(f"{name}: {exc}") from None
    lists = {k: grid_values(k, v) for k, v in grid.items()}
    empty = [k for k, v in lists.items() if not v]
    if empty:
        raise ConfigError(f"{name} gives no values for {empty}; give at least one value per field.")
    return lists


def expand_grid(grid: Mapping[str, Any], name: str = "grid") -> list[dict[str, Any]]:
    """The cartesian product of `grid` (first key varies slowest), as dicts of Config fields;
    field names checked, values not (see `check_grid`)."""
    lists = _shape(grid, name)
    keys = list(lists)
    return [dict(zip(keys, combo)) for combo in itertools.product(*lists.values())]


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _message(field: str, exc: ConfigError) -> str:
    """The error on one line, without the field's name when it starts with it (the grid names the value)."""
    return " ".join((exc.reason if exc.setting == field else str(exc)).split())


def _read(field: str, raw: Any, text: bool) -> Any:
    """One grid value read by its setting's row (as text when `text`); an engine that needs
    Torch-TensorRT is refused here when it is missing."""
    row = setting(field)
    value = row.parse(row.from_text(raw) if text else raw)
    if field == "engine" and value in COMPILE_ENGINES:
        from hierviz.partitioner.upstream.compile_partitioners import check_available

        check_available(value)
    return value


def check_grid(grid: Mapping[str, Any], base: Config | Mapping[str, Any] | None = None, *, name: str = "grid",
               text: bool = False) -> tuple[dict[str, list[Any]], list[Config]]:
    """(the grid with every value read by its setting's row, the Config of every combination
    in grid order), or one ConfigError listing every bad value.

    `text=True` reads each value as command-line text. `name` says what the grid is called in
    messages ("grid", "space", "--grid")."""
    lists = _shape(grid, name)
    base_cfg = make_config(base)
    parsed: dict[str, list[Any]] = {}
    failed: dict[tuple[str, int], str] = {}
    with warnings.catch_warnings():  # the rules between settings warn when a combination is made
        warnings.simplefilter("ignore")
        for field, values in lists.items():
            parsed[field] = []
            for i, raw in enumerate(values):
                try:
                    value = _read(field, raw, text)
                except ConfigError as exc:
                    failed[(field, i)] = _message(field, exc)
                    parsed[field].append(raw)
                    continue
                parsed[field].append(value)
                try:
                    derive(base_cfg, {field: value})
                except ConfigError as exc:
                    if not _valid_with_partners(base_cfg, parsed, lists, field, value):
                        failed[(field, i)] = _message(field, exc)
    problems = [f"{field}={_shown(lists[field][i])}: {msg}" for (field, i), msg in failed.items()]
    configs: list[Config] = []
    if not problems:
        keys = list(parsed)
        for combo in itertools.product(*parsed.values()):
            changes = dict(zip(keys, combo))
            try:
                configs.append(derive(base_cfg, changes))  # the rules between settings, once per combination
            except ConfigError as exc:
                shown = " ".join(f"{k}={_shown(v)}" for k, v in zip(keys, _raw_combo(lists, parsed, changes)))
                problems.append(f"the configuration {shown}: {' '.join(str(exc).split())}")
    if problems:
        if len(problems) == 1:
            raise ConfigError(f"{name} {problems[0]}")
        listed = "; ".join(p.rstrip(".") for p in problems[:_SHOWN])
        if len(problems) > _SHOWN:
            listed += f"; and {len(problems) - _SHOWN} more"
        raise ConfigError(f"{name} has {len(problems)} bad values (nothing ran): {listed}")
    return parsed, configs


def _valid_with_partners(base: Config, parsed: Mapping[str, list[Any]], lists: Mapping[str, list[Any]],
                         field: str, value: Any) -> bool:
    """Whether `value` is valid together with some values of the other fields (a custom
    backend in priority with its support given in the grid); values not read yet are read."""
    others = [k for k in lists if k != field]
    choices = [lists[k] if k not in parsed else parsed[k] + lists[k][len(parsed[k]):] for k in others]
    for combo in itertools.islice(itertools.product(*choices), _PARTNERS):
        try:
            base.replace(**{field: value}, **dict(zip(others, combo)))
            return True
        except ConfigError:
            continue
    return False


def _raw_combo(lists: Mapping[str, list[Any]], parsed: Mapping[str, list[Any]],
               changes: Mapping[str, Any]) -> list[Any]:
    """The values of a combination as the user wrote them."""
    out = []
    for k, v in changes.items():
        index = next(i for i, p in enumerate(parsed[k]) if p is v)
        out.append(lists[k][index])
    return out
