"""The Explorer's own options (view, focus, debounce, measure, output_dir, max_nodes,
measure_options, name), checked once, when `hv.explore` is called."""

from __future__ import annotations

import math
import numbers
from pathlib import Path
from typing import Any, Mapping

from hierviz.errors import ConfigError, parameter_names, unknown_arguments
from hierviz.foundation.arguments import check_bool

OPTIONS = ("measure", "view", "focus", "debounce", "output_dir", "max_nodes", "measure_options", "name")


def views() -> tuple[str, ...]:
    """The diagram views the view control offers (those `Partition.render` draws)."""
    from hierviz.drawing.views import VIEWS

    return tuple(VIEWS)


def measure_option_names() -> list[str]:
    """The hv.measure options `measure_options=` may set: all but what the Explorer passes itself
    (the partition, its inputs and the progress it shows)."""
    from hierviz.latency.measure_call import measure

    return parameter_names(measure, skip=("partition", "example_inputs", "progress"))


def check_options(*, view: Any, focus: Any, debounce: Any, measure: Any, output_dir: Any, max_nodes: Any,
                   measure_options: Any, name: Any) -> float:
    """ConfigError for an Explorer option of the wrong type or range; the debounce in seconds."""
    if isinstance(debounce, bool) or not isinstance(debounce, numbers.Real) or \
            not math.isfinite(float(debounce)) or debounce < 0:
        raise ConfigError(f"debounce must be a number of seconds >= 0 (0: apply each change at once), "
                          f"not {type(debounce).__name__} {debounce!r}.")
    known = views()
    if not isinstance(view, str) or view not in known:
        raise ConfigError(f"view must be one of {', '.join(known)}, not {view!r}.")
    if focus is not None and not isinstance(focus, str):
        raise ConfigError(f"focus must be a node name or subgraph tag (str), not {type(focus).__name__}.")
    check_bool(measure, "measure")
    if not isinstance(output_dir, (str, Path)):
        raise ConfigError(f"output_dir must be a path (str or Path), not {type(output_dir).__name__}.")
    if max_nodes is not None and (isinstance(max_nodes, bool) or not isinstance(max_nodes, numbers.Integral)
                                  or max_nodes < 1):
        raise ConfigError(f"max_nodes must be a whole number >= 1 or None, not {max_nodes!r}.")
    if measure_options is not None and not isinstance(measure_options, Mapping):
        raise ConfigError(f"measure_options must be a dict of hv.measure options (e.g. {{'iters': 20}}), "
                          f"not {type(measure_options).__name__}.")
    if measure_options is not None and "progress" in measure_options:
        raise ConfigError("measure_options must not set progress: the Explorer shows its own progress while it "
                          "measures; leave it out.")
    if measure_options is not None:
        unknown_arguments("hv.explore(measure_options=...)", measure_options, measure_option_names())
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"name must be a str, not {type(name).__name__}.")
    return float(debounce)


__all__ = ["OPTIONS", "views", "measure_option_names", "check_options"]
