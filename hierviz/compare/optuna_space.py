"""The search of hv.tune as Optuna sees it: the space as categorical choices (labels) mapped
back to settings, the key of a set of choices, and Optuna itself (imported on first use, quietly).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import random
from typing import Any, Mapping

from hierviz.compare import columns
from hierviz.compare.grid import expand_grid
from hierviz.settings.config import Config, field_names
from hierviz.errors import ConfigError
from hierviz.support.support_key import content_key

OPTUNA_HINT = "install Optuna with `pip install 'hierviz[tune]'` (make setup installs it)"


class SearchSpace:
    """The space as Optuna categorical choices (labels: each value's table cell), mapped back
    to the values, which the settings table has read already (hv.tune's check_grid, or
    default_space)."""

    def __init__(self, space: Mapping[str, Any], default: Config) -> None:
        if isinstance(space, Mapping) and "engine" in space:
            raise ConfigError("hv.tune searches hierviz's partitioner, so its space cannot vary 'engine': what "
                              "torch_tensorrt.compile runs is its compile_ms baseline; hv.compare_engines or "
                              "hv.sweep(grid={'engine': [...]}) compare engines.")
        if isinstance(space, Mapping) and not space:
            raise ConfigError("hv.tune(space={}) has no setting to search: name at least one, e.g. "
                              "space={'min_block_size': [1, 3, 5]}, or leave space out (None) for the space "
                              "derived from the graph.")
        expand_grid(space, name="space")  # field names; hv.tune checked the values first (check_grid)
        self.fields: dict[str, list[tuple[Any, Any]]] = {}
        for name, values in space.items():
            pairs: list[tuple[Any, Any]] = []
            for combo in expand_grid({name: values}, name="space"):
                raw = combo[name]
                label = self.label(name, raw)
                if label not in [p[0] for p in pairs]:
                    pairs.append((label, raw))
            current = self.label(name, getattr(default, name))
            if current not in [p[0] for p in pairs]:
                pairs.insert(0, (current, getattr(default, name)))
            self.fields[name] = pairs

    @staticmethod
    def label(name: str, value: Any) -> Any:
        """The choice Optuna sees for a value: its table cell (a support mapping also has the
        key of its content, as two mappings may show alike; the same in every process, so that
        a stored study resumes)."""
        text = columns.format_field(name, value)
        if isinstance(value, Mapping):
            return f"{text} #{content_key(value)}"
        return text

    def setup(self, default: Config) -> dict[str, Any]:
        """What a stored study is resumed with: the label of each field of the base setting
        (`default`) and the choices of each field searched."""
        labels: dict[str, Any] = {f"base {name}": self.label(name, getattr(default, name)) for name in field_names()}
        labels.update({f"space {name}": [p[0] for p in pairs] for name, pairs in self.fields.items()})
        return labels

    @property
    def size(self) -> int:
        return math.prod(len(v) for v in self.fields.values())

    def params_of(self, config: Config) -> dict[str, Any]:
        return {name: self.label(name, getattr(config, name)) for name in self.fields}

    def untried(self, tried: set[tuple], rng: random.Random) -> dict[str, Any] | None:
        """Params of a setting not in `tried` (chosen with `rng`), or None when all were tried."""
        names = list(self.fields)
        if self.size <= 4096:
            choices = ([p[0] for p in self.fields[n]] for n in names)
            left = [dict(zip(names, combo)) for combo in itertools.product(*choices)]
            left = [p for p in left if params_key(p) not in tried]
            return rng.choice(left) if left else None
        for _ in range(1000):
            params = {n: rng.choice(self.fields[n])[0] for n in names}
            if params_key(params) not in tried:
                return params
        return None

    def suggest(self, trial: Any) -> dict[str, Any]:
        """Config changes for an Optuna trial (its params are the labels)."""
        changes = {}
        for name, pairs in self.fields.items():
            label = trial.suggest_categorical(name, [p[0] for p in pairs])
            changes[name] = dict(pairs)[label]
        return changes


def params_key(params: Mapping[str, Any]) -> tuple:
    return tuple(sorted((n, str(v)) for n, v in params.items()))


def load_optuna() -> Any:
    try:
        import optuna
    except ImportError:
        raise ConfigError(f"hv.tune needs Optuna, which is not installed: {OPTUNA_HINT}.") from None
    return optuna


@contextlib.contextmanager
def quiet_optuna(optuna: Any) -> Any:
    level = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        yield
    finally:
        optuna.logging.set_verbosity(level)


__all__ = ["OPTUNA_HINT", "SearchSpace", "params_key", "load_optuna", "quiet_optuna"]
