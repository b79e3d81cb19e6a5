"""MeasureOptions: hv.measure's options as one frozen record, checked once where a public
function takes them (hv.measure's keywords, hv.sweep's and hv.tune's `measure=` dict,
compile_split's keywords), then handed whole to what compiles (compiled_split.build_split),
what times (measure_call, by_graph.measure_by_graph) and what sums up (summary.finish).

    options = MeasureOptions(iters=20, on_error="fallback")   # a bad value: hv.MeasureError here
    quick = options.replace(iters=5, check=True)              # a new record, checked again
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from hierviz import trt
from hierviz.errors import MeasureError, unknown_arguments
from hierviz.foundation.arguments import check_bool
from hierviz.settings.setting_values import whole_number

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.latency.compiling.compile_cache import CompileCache

ON_ERROR = ("raise", "fallback")
# the options that choose what is compiled: compile_split's keywords, and what a compiled model keeps
COMPILE_FIELDS = ("on_error", "cache", "cache_dir", "trt_settings", "inductor_options", "compilers", "tf32")
_FLAGS = ("check", "baseline", "per_subgraph", "torch_compile")


def check_trt_settings(trt_settings: Any, tf32: bool) -> None:
    """ConfigError for trt_settings fields that cannot act at conversion, checked first (before
    the device or the subgraphs: a mistake should not wait for a GPU to show)."""
    if trt_settings is None:
        return
    if trt.available():
        trt.conversion_settings(trt_settings, None, tf32=tf32)


def cache_directory(cache_dir: Any) -> Path | None:
    """`cache_dir` as a Path (~ expanded), None for None; MeasureError when it is no path."""
    if cache_dir is None:
        return None
    try:
        return Path(cache_dir).expanduser()
    except TypeError:
        raise MeasureError(f"cache_dir must be a path, not {type(cache_dir).__name__}") from None


@dataclass(frozen=True)
class MeasureOptions:
    """hv.measure's keyword arguments (see hv.measure for each one), checked when the record is
    made: a bad value is the hv.MeasureError (or ConfigError, for trt_settings) hv.measure
    raises, before anything is compiled. Frozen: `replace` gives a changed copy, checked again.
    The user's dicts and model are held, never changed."""

    device: Any = None
    warmup: int = 10
    iters: int = 100
    check: bool = True
    on_error: str = "raise"
    cache_dir: str | Path | None = None
    trt_settings: Any = None
    progress: Any = None
    inductor_options: dict | None = None
    compilers: Mapping[str, Any] | None = None
    cache: CompileCache | None = None
    baseline: bool = True
    per_subgraph: bool = True
    rtol: float | None = None
    atol: float | None = None
    tf32: bool = False
    model: Any = None
    torch_compile: bool = False

    def __post_init__(self) -> None:
        if not whole_number(self.iters, 1):
            raise MeasureError(f"iters must be a positive integer, not {self.iters!r}")
        if not whole_number(self.warmup, 0):
            raise MeasureError(f"warmup must be a non-negative integer, not {self.warmup!r}")
        if self.on_error not in ON_ERROR:
            raise MeasureError(f"on_error must be one of {ON_ERROR}, not {self.on_error!r}")
        check_bool(self.tf32, "tf32", MeasureError)
        for flag in _FLAGS:
            check_bool(getattr(self, flag), flag, MeasureError)
        for name in ("rtol", "atol"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value) or value < 0):
                raise MeasureError(f"{name} must be a non-negative number (or None for the dtype's tolerance), "
                                   f"not {value!r:.40}")
        cache_directory(self.cache_dir)  # a cache_dir that is no path is refused now, not at the first compile
        check_trt_settings(self.trt_settings, self.tf32)

    @property
    def directory(self) -> Path | None:
        """`cache_dir` as a Path (~ expanded), or None."""
        return cache_directory(self.cache_dir)

    @classmethod
    def of(cls, given: Mapping[str, Any] | None, who: str = "hv.measure") -> MeasureOptions:
        """The record of a dict of hv.measure options (hv.sweep's and hv.tune's `measure=`): an
        unknown name is the ConfigError hv.measure gives, naming the closest one."""
        given = dict(given or {})
        unknown_arguments(who, given, FIELDS)
        return cls(**given)

    def replace(self, **changes: Any) -> MeasureOptions:
        """A copy with `changes`, checked as a new record is."""
        return dataclasses.replace(self, **changes)

    def compile_kwargs(self) -> dict[str, Any]:
        """The options that choose what is compiled, as compile_split's keyword arguments."""
        return {name: getattr(self, name) for name in COMPILE_FIELDS}


FIELDS = tuple(f.name for f in dataclasses.fields(MeasureOptions))

__all__ = ["MeasureOptions", "ON_ERROR", "COMPILE_FIELDS", "FIELDS", "cache_directory", "check_trt_settings"]
