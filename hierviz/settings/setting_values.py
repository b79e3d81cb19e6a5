"""Reading each setting's value from Python: the checks behind Config's fields (backend names,
priority, support mappings, min_block_size, bools, op names, demote_to), each a ConfigError
saying what to write instead. The settings table (config.py) names one per field."""

from __future__ import annotations

import difflib
import math
import numbers
import re
from typing import Any, Iterable, Mapping

from hierviz.errors import ConfigError
from hierviz.foundation.arguments import check_bool
from hierviz.foundation.opnames import normalize_all, split_names
from hierviz.support.support_base import Support
from hierviz.support.support_map import SupportMap

MIN_BLOCK_SIZE = 5  # Torch-TensorRT's MIN_BLOCK_SIZE
BUILTIN_BACKENDS = ("tensorrt", "inductor")
# Backend names become submodule names (_run_on_acc_<backend>_<i>): identifiers only.
_BACKEND_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_SEPARATORS = re.compile(r"[>,+\s]+")
SUPPORT_HELP = ("support must map backend name -> hv.support.*(...), e.g. "
                 "support={'inductor': hv.support.inductor()}")



def unknown_backend_message(name: str, custom: bool = True) -> str:
    """'unknown backend ..., did you mean ...?' for a name that is no built-in backend; with
    `custom`, how to declare a backend of one's own."""
    hint = difflib.get_close_matches(name.lower(), BUILTIN_BACKENDS, n=1, cutoff=0.6)
    msg = (f"unknown backend {name!r}, did you mean {hint[0]!r}?" if hint
           else f"unknown backend {name!r} (no support set).")
    msg += f" Built-in backends: {', '.join(BUILTIN_BACKENDS)}"
    if custom:
        msg += (f"; a custom backend needs support={{{name!r}: hv.support.ops([...])}} or "
                "hv.support.where(...).")
    return msg + ("" if custom else ".")


def parse_backend(name: Any, where: str = "priority") -> str:
    """A backend name: built-ins case-insensitive ('TensorRT' -> 'tensorrt'); custom names
    must be identifiers (they name submodules, `_run_on_acc_<backend>_0`)."""
    if not isinstance(name, str):
        raise ConfigError.for_setting(where, "backend names are strings such as 'tensorrt', not "
                                      f"{type(name).__name__} {name!r}.")
    text = name.strip()
    if text.lower() in BUILTIN_BACKENDS:
        return text.lower()
    if text.lower() in ("torch", "none", ""):
        raise ConfigError.for_setting(where, f"{name!r} is not a backend: nodes no backend takes run in "
                                      "PyTorch ('torch', the fallback) anyway; leave it out.")
    if not _BACKEND_NAME.match(text):
        raise ConfigError.for_setting(where, f"backend name {name!r} is not usable: it names submodules "
                                      "(_run_on_acc_<backend>_0), so use letters, digits and '_', starting with "
                                      "a letter.")
    return text


def parse_priority(value: Any) -> tuple[str, ...]:
    """priority from a tuple/list of names or text: 'tensorrt>inductor', 'tensorrt,inductor'."""
    if isinstance(value, str):
        items: Iterable[Any] = [p for p in _SEPARATORS.split(value) if p]
    elif isinstance(value, (list, tuple)):
        items = value
    else:
        raise ConfigError(f"priority must be backend names, highest first, e.g. ('tensorrt', 'inductor') "
                          f"or 'tensorrt>inductor', not {type(value).__name__} {value!r}.")
    priority = tuple(parse_backend(p) for p in items)
    if not priority:
        raise ConfigError("priority is empty: give at least one backend, e.g. priority=('tensorrt',).")
    twice = sorted({p for p in priority if priority.count(p) > 1})
    if twice:
        raise ConfigError(f"priority lists a backend twice: {priority}. Name each backend once ({twice[0]!r}).")
    return priority


def parse_support(value: Any) -> SupportMap | None:
    """support: None (Torch-TensorRT's defaults) or a mapping backend -> hv.Support (backend
    names checked; whether they fit priority is a rule between fields, `_check_together`)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(SUPPORT_HELP)
    items: dict[str, Support] = {}
    for name, sup in value.items():
        backend = parse_backend(name, where="support")
        if not isinstance(sup, Support):
            raise ConfigError(f"support[{name!r}] must be a hv.Support (hv.support.ops([...]), "
                              f"hv.support.inductor(), ...), not {type(sup).__name__}.")
        if backend in items:
            raise ConfigError(f"support names backend {backend!r} twice; name it once.")
        items[backend] = sup
    if isinstance(value, SupportMap) and dict(value) == items:
        return value
    return SupportMap(items)


def whole_number(value: Any, minimum: int = 1) -> bool:
    """Whether `value` is a Python int (not a bool) of at least `minimum`: the one check of the
    counts every entry point takes (min_block_size, iters, warmup, budget, cache sizes, CLI numbers)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def parse_min_block_size(value: Any) -> int:
    """min_block_size: an int >= 1 (not a bool, not a float; numpy integers are taken)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and whole_number(int(value)):
        return int(value)
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, float) and math.isfinite(value) and value.is_integer() and value >= 1:
            raise ConfigError(f"min_block_size must be an int, not the float {value!r}: write {int(value)}.")
        raise ConfigError(f"min_block_size must be an integer >= 1 (Torch-TensorRT's default is "
                          f"{MIN_BLOCK_SIZE}), not {type(value).__name__} {value!r}.")
    raise ConfigError(f"min_block_size must be >= 1 (got {value}); 1 keeps every accelerated subgraph.")


def parse_bool(name: str, value: Any) -> bool:
    """A bool field: True or False only (text such as 'no' is for `parse_text`)."""
    if isinstance(value, bool):
        return value
    if type(value).__name__ == "bool_":  # numpy.bool_ from a DataFrame row
        return bool(value)
    return check_bool(value, name)


def parse_ops(value: Any, field: str = "torch_executed_ops") -> frozenset[str]:
    """Op names (with or without 'torch.ops.aten.', comma-separated text, OpOverloads) as
    qualified names; unknown names and names that never match an aten node are errors."""
    if value is None:
        return frozenset()
    if isinstance(value, str):
        value = split_names(value)
    elif not isinstance(value, (list, tuple, set, frozenset)):
        raise ConfigError(f"{field} must be a set of op names, e.g. {{'torch.ops.aten.relu.default'}} or "
                          f"'aten.relu.default,aten.add.Tensor', not {type(value).__name__} {value!r}.")
    return normalize_all(value, field)


DEMOTE_TO = ("torch", "next")


def parse_demote_to(value: Any) -> str:
    """demote_to: 'torch' (upstream's rule) or 'next' (the next backend in priority)."""
    if isinstance(value, str) and value.strip().lower() in DEMOTE_TO:
        return value.strip().lower()
    raise ConfigError(f"demote_to must be 'torch' (upstream's rule: an accelerated subgraph below min_block_size "
                      f"runs in PyTorch) or 'next' (it goes to the next backend in priority that takes its nodes), "
                      f"not {type(value).__name__} {value!r:.40}.")
