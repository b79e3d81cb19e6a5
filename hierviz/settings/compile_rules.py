"""What torch_tensorrt.compile's own partitioners (engine "fast" / "global") accept: the value
each setting runs with there (the user's, or compile's own) and why a Config is refused.

A setting whose row (config.py) says those engines do not take every value of it has its
value here (`COMPILE_VALUES`) and its rule (`RULES`: the reason a Config is refused, None when
it is not). Config checks them when it is made with such an engine; `compile_config` gives the
settings compile would run for a Config.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Protocol, TypeVar

from hierviz.support import sources as support
from hierviz.support.support_map import SupportMap
from hierviz.support.tensorrt_support import TensorRTSupport
from hierviz.settings.engine_table import engine_info


class CompileSettings(Protocol):
    """What the rules read of a Config (config.py reads these rules while a Config is made, so
    they know it only by this shape)."""

    __dataclass_fields__: ClassVar[dict[str, Any]]

    @property
    def priority(self) -> tuple[str, ...]: ...

    @property
    def support(self) -> Any: ...

    @property
    def skip_fusion(self) -> bool: ...

    @property
    def demote_to(self) -> str: ...

    @property
    def engine(self) -> str: ...

    def support_for(self, backend: str) -> Any: ...


Settings = TypeVar("Settings", bound=CompileSettings)


def takes_ops(config: CompileSettings, backend: str) -> bool:
    """Whether `backend`'s support in `config` takes any op (inductor's default, no ops, does not)."""
    sup = config.support_for(backend)
    return sup is None or isinstance(sup, TensorRTSupport) or sup.per_node \
        or bool(getattr(sup, "names", True)) or getattr(sup, "kind", "") == "inductor"


def _compile_priority(config: CompileSettings, where: str) -> str | None:
    if "tensorrt" not in config.priority:
        return f"{where} partitions for TensorRT only: put 'tensorrt' in priority, e.g. priority=('tensorrt',)."
    others = [b for b in config.priority if b != "tensorrt" and takes_ops(config, b)]
    if others:
        return (f"{where} partitions for TensorRT only, but priority also has {others[0]!r} with ops to take "
                f"(its support); use priority=('tensorrt',) (--priority tensorrt), give {others[0]!r} no support, "
                "or engine='hierviz' for several backends.")
    return None


def _compile_support(config: CompileSettings, where: str) -> str | None:
    sup = config.support_for("tensorrt")
    if support.added_ops(sup) is None:
        return (f"{where} checks support with Torch-TensorRT's converter registry and their capability "
                f"validators, as compile does; it cannot use support['tensorrt']={sup!r}. "
                "Leave support['tensorrt'] out (or add ops to it: hv.support.any_chain(hv.support.tensorrt(), "
                "hv.support.ops([...]))), or use engine='hierviz'.")
    return None


def _compile_skip_fusion(config: CompileSettings, where: str) -> str | None:
    if config.skip_fusion:
        return (f"{where} sets skip_fusion itself (when every op is supported), as compile does; "
                "leave skip_fusion=False, or use engine='hierviz'.")
    return None


def _compile_demote_to(config: CompileSettings, where: str) -> str | None:
    if config.demote_to != "torch":
        return (f"{where} demotes small blocks to PyTorch; it cannot take demote_to={config.demote_to!r}. "
                "Use engine='hierviz' for that.")
    return None



# setting -> the value torch_tensorrt.compile's partitioners run it with; settings not here run the user's value
COMPILE_VALUES: dict[str, Any] = {"priority": ("tensorrt",), "support": None, "skip_fusion": False,
                                  "demote_to": "torch"}
RULES: dict[str, Callable[[CompileSettings, str], str | None]] = {
    "priority": _compile_priority, "support": _compile_support, "skip_fusion": _compile_skip_fusion,
    "demote_to": _compile_demote_to}


def refusal(name: str, config: CompileSettings) -> str | None:
    """Why `config.engine` (one of compile's partitioners) cannot run setting `name` as
    `config` has it; None when it can."""
    return RULES[name](config, f"engine={config.engine!r} ({engine_info(config.engine).compile})")


def compile_config(config: Settings, engine: str = "fast") -> Settings:
    """The settings torch_tensorrt.compile would run for `config` with its partitioner `engine`:
    each setting's compile value (TensorRT only, its validated converter support, no
    skip_fusion or demote_to of the user's, and of support only the ops a what-if adds to
    TensorRT's converters, any_chain(tensorrt(), ops([...])), which they take), the others
    (min_block_size, torch_executed_ops, require_full_compilation) as given."""
    changes: dict[str, Any] = {name: value for name, value in COMPILE_VALUES.items() if getattr(config, name) != value}
    if "support" in changes and support.added_ops(trt := config.support_for("tensorrt")):
        changes["support"] = SupportMap({"tensorrt": trt})  # a what-if's converters: compile's partitioners take them
        if changes["support"] == config.support:
            del changes["support"]
    if config.engine != engine:
        changes["engine"] = engine
    return dataclasses.replace(config, **changes) if changes else config
