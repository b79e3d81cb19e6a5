"""hv.tune's own arguments (budget, timeout, seed, executor, measure), checked up front, before
anything is captured or timed; `measure` becomes the one MeasureOptions every trial is timed with."""

from __future__ import annotations

import math
from typing import Any, Mapping

from hierviz.compare.ray_executor import check_executor, is_ray
from hierviz.compare.tune_trial import FULL
from hierviz.errors import ConfigError
from hierviz.latency.measure_options import MeasureOptions
from hierviz.settings.setting_values import whole_number


def check_tune_options(budget: Any, timeout: Any, seed: Any, executor: Any, measure: Any) -> MeasureOptions:
    """hv.tune's arguments checked up front; the hv.measure options of its trials' full timing
    (`measure` on FULL's warmup and iters), as one record: a bad one is refused here, before
    anything is captured."""
    if not whole_number(budget, 1):
        raise ConfigError(f"budget must be a positive number of trials, e.g. budget=20, not {budget!r}")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float))
                                or not math.isfinite(timeout) or timeout <= 0):
        raise ConfigError(f"timeout must be a positive number of seconds (or None), not {timeout!r}")
    if not whole_number(seed, 0) or seed >= 2**32:
        raise ConfigError(f"seed must be an int from 0 to 2**32 - 1, not {seed!r:.40}")
    if executor is not None and not is_ray(executor):
        raise ConfigError("hv.tune measures one trial at a time in this process (parallel timings would disturb "
                          "each other); executor may be None, or 'ray' / a Ray address to run trials on Ray workers.")
    if executor is not None:
        check_executor(executor)  # before capturing: a typo must not cost the capture
    if measure is not None and not isinstance(measure, Mapping):
        raise ConfigError("measure must be a dict of hv.measure options, e.g. {'iters': 50}.")
    options = dict(measure or {})
    for key in ("check", "baseline", "per_subgraph", "device"):
        if key in options:
            raise ConfigError(f"measure={{{key!r}: ...}} is set by hv.tune itself; leave it out.")
    return MeasureOptions.of({**FULL, **options}, who="hv.tune(measure=...)")
