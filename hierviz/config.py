"""hv.Config: the partitioner's settings, frozen and hashable, and the one parser that turns
user values and text into settings.

Every entry point — `Config(...)`, `Config.replace`, `hv.partition(**overrides)`, the CLI,
`hv.sweep` grids, the Explorer and the tables — goes through one parser (`read_values`: text,
`to_dict` forms or Python values) and one checker (`check_value`, run by `Config` on every field), so
`"tensorrt>inductor"`, `"tensorrt,inductor"` and `("tensorrt", "inductor")` mean the same
everywhere, op names are accepted with or without `torch.ops.aten.`, and a wrong type or value
is a `ConfigError` saying what to write instead. Python values are strict (a bool field takes
a bool, `min_block_size` a positive int); `parse_text` reads the command line's strings.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import numbers
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Mapping

from hierviz import support as support_mod
from hierviz.errors import ConfigError, ConfigWarning
from hierviz.opnames import normalize_all, split_names

MIN_BLOCK_SIZE = 5  # Torch-TensorRT's MIN_BLOCK_SIZE
BUILTIN_BACKENDS = ("tensorrt", "inductor")
# Backend names become submodule names (_run_on_acc_<backend>_<i>): identifiers only.
_BACKEND_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*\Z")
_SEPARATORS = re.compile(r"[>,+\s]+")
_SUPPORT_HELP = ("support must map backend name -> hv.support.*(...), e.g. "
                 "support={'inductor': hv.support.inductor()}")


class SupportMap(Mapping[str, support_mod.Support]):
    """A read-only, hashable mapping backend -> Support."""

    def __init__(self, items: Mapping[str, support_mod.Support]) -> None:
        self._items = dict(sorted(items.items()))

    def __getitem__(self, key: str) -> support_mod.Support:
        return self._items[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __hash__(self) -> int:
        return hash(tuple(self._items.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._items) == dict(other)

    def __repr__(self) -> str:
        return repr(self._items)


class _Checked(type):
    """Config's metaclass: unknown or surplus arguments are a ConfigError naming the fields,
    not the TypeError a dataclass __init__ raises."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        if len(args) > len(FIELDS):
            raise ConfigError(f"Config takes at most {len(FIELDS)} values ({', '.join(FIELDS)}); "
                              f"got {len(args)}. Pass them by name, e.g. Config(min_block_size=3).")
        check_fields(kwargs)
        twice = [f for f in FIELDS[:len(args)] if f in kwargs]
        if twice:
            raise ConfigError(f"Config got {twice[0]} twice (by position and by name).")
        return super().__call__(*args, **kwargs)


@dataclass(frozen=True)
class Config(metaclass=_Checked):
    """Settings of the hierarchical adjacency partitioner (defaults are Torch-TensorRT's)."""

    priority: tuple[str, ...] = ("tensorrt", "inductor")
    support: SupportMap | None = None
    min_block_size: int = MIN_BLOCK_SIZE
    torch_executed_ops: frozenset[str] = field(default_factory=frozenset)
    require_full_compilation: bool = False
    skip_fusion: bool = False
    demote_to: str = "torch"

    def __post_init__(self) -> None:
        for name in FIELDS:  # priority first: support and the backends are checked against it
            object.__setattr__(self, name, check_value(name, getattr(self, name), self.priority))

    def support_for(self, backend: str) -> support_mod.Support | None:
        """The Support used for `backend`: the one given, else Torch-TensorRT's default."""
        if self.support is not None and backend in self.support:
            return self.support[backend]
        return support_mod.upstream_default(backend)

    def replace(self, **changes: Any) -> "Config":
        """A copy with `changes` (Config fields; text accepted as in `parse_config`)."""
        check_fields(changes)
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """JSON-safe: op names as strings, support as descriptions."""
        return {
            "priority": list(self.priority),
            "support": None if self.support is None else {k: v.to_dict() for k, v in self.support.items()},
            "min_block_size": self.min_block_size,
            "torch_executed_ops": sorted(self.torch_executed_ops),
            "require_full_compilation": self.require_full_compilation,
            "skip_fusion": self.skip_fusion,
            "demote_to": self.demote_to,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Config":
        """The inverse of `to_dict` (also takes Python values, like `Config(**d)`)."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"Config.from_dict takes a dict of Config fields, not {type(d).__name__}.")
        return cls(**read_values(d, form="dict"))

    def label(self) -> str:
        """A short one-line description, for tables and titles."""
        parts = [">".join(self.priority), f"mbs={self.min_block_size}"]
        if self.torch_executed_ops:
            parts.append("torch=" + ",".join(sorted(o.replace("torch.ops.aten.", "") for o in self.torch_executed_ops)))
        if self.require_full_compilation:
            parts.append("full")
        if self.skip_fusion:
            parts.append("nofusion")
        if self.demote_to != "torch":
            parts.append(f"demote={self.demote_to}")
        return " ".join(parts)


# ---------------------------------------------------------------------------- the parser
FIELDS = tuple(f.name for f in dataclasses.fields(Config))
# Arguments people pass to hv.partition that belong to hv.capture.
CAPTURE_ARGS = ("dynamic_shapes", "kwargs")


def check_fields(values: Mapping[str, Any]) -> None:
    """ConfigError naming the closest field for each name that is not a Config field."""
    unknown = sorted(k for k in values if k not in FIELDS)
    if not unknown:
        return
    capture_args = [k for k in unknown if k in CAPTURE_ARGS]
    if capture_args:
        raise ConfigError(f"{', '.join(capture_args)} is an argument of capturing, not a Config field: "
                          f"pass it to hv.partition(model, inputs, {capture_args[0]}=...) or "
                          f"hv.capture(model, inputs, {capture_args[0]}=...).")
    hints = [m for k in unknown for m in difflib.get_close_matches(str(k), FIELDS, n=1)]
    msg = f"unknown Config field(s) {unknown}"
    msg += f"; did you mean {', '.join(repr(h) for h in hints)}?" if hints else "."
    raise ConfigError(msg + f" Fields are {', '.join(FIELDS)}.")


def unknown_backend_message(name: str, custom: bool = True) -> str:
    """'unknown backend ..., did you mean ...?' for a name that is no built-in backend; with
    `custom`, how to declare a backend of one's own."""
    hint = difflib.get_close_matches(name.lower(), BUILTIN_BACKENDS, n=1, cutoff=0.6)
    msg = f"unknown backend {name!r}, did you mean {hint[0]!r}?" if hint else f"unknown backend {name!r} (no support set)."
    msg += f" Built-in backends: {', '.join(BUILTIN_BACKENDS)}"
    if custom:
        msg += (f"; a custom backend needs support={{{name!r}: hv.support.ops([...])}} or "
                "hv.support.where(...).")
    return msg + ("" if custom else ".")


def parse_backend(name: Any, where: str = "priority") -> str:
    """A backend name: built-ins case-insensitive ('TensorRT' -> 'tensorrt'); custom names
    must be identifiers (they name submodules, `_run_on_acc_<backend>_0`)."""
    if not isinstance(name, str):
        raise ConfigError(f"{where}: backend names are strings such as 'tensorrt', not "
                          f"{type(name).__name__} {name!r}.")
    text = name.strip()
    if text.lower() in BUILTIN_BACKENDS:
        return text.lower()
    if text.lower() in ("torch", "none", ""):
        raise ConfigError(f"{where}: {name!r} is not a backend: nodes no backend takes run in PyTorch "
                          "('torch', the fallback) anyway; leave it out.")
    if not _BACKEND_NAME.match(text):
        raise ConfigError(f"{where}: backend name {name!r} is not usable: it names submodules "
                          f"(_run_on_acc_<backend>_0), so use letters, digits and '_', starting with a letter.")
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


def parse_support(value: Any, priority: tuple[str, ...]) -> "SupportMap | None":
    """support: None (Torch-TensorRT's defaults) or a mapping backend -> hv.Support. A custom backend
    named in support but not in priority is ignored, with a ConfigWarning."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(_SUPPORT_HELP)
    items: dict[str, support_mod.Support] = {}
    for name, sup in value.items():
        backend = parse_backend(name, where="support")
        if not isinstance(sup, support_mod.Support):
            raise ConfigError(f"support[{name!r}] must be a hv.Support (hv.support.ops([...]), "
                              f"hv.support.inductor(), ...), not {type(sup).__name__}.")
        if backend in items:
            raise ConfigError(f"support names backend {backend!r} twice; name it once.")
        items[backend] = sup
    ignored = [b for b in items if b not in priority and b not in BUILTIN_BACKENDS]
    if ignored:  # a warning, not an error: sweeps vary priority over one support mapping
        warnings.warn(f"support names backend {ignored[0]!r}, which is not in priority {priority}, so it is "
                      f"ignored: add it, e.g. priority={(ignored[0], *priority)!r}, to use it.",
                      ConfigWarning, stacklevel=5)
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
    raise ConfigError(f"{name} must be True or False, not {type(value).__name__} {value!r}.")


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


TEXT_TRUE = ("true", "yes", "on", "1")
TEXT_FALSE = ("false", "no", "off", "0")


def _read_text(name: str, text: Any) -> Any:
    """The Python value of Config field `name` written as text (unchecked: `check_value` checks it)."""
    if not isinstance(text, str):
        raise ConfigError(f"{name}: expected text, got {type(text).__name__} {text!r}.")
    t = text.strip()
    if name == "torch_executed_ops":
        return frozenset() if t.lower() in ("", "none", "()") else t.replace("+", ",")
    if name in ("require_full_compilation", "skip_fusion"):
        if t.lower() in TEXT_TRUE:
            return True
        if t.lower() in TEXT_FALSE:
            return False
        raise ConfigError(f"{name}: {text!r} is not true/false.")
    if name == "min_block_size":
        try:
            return int(t)
        except ValueError:
            raise ConfigError(f"min_block_size: {text!r} is not a whole number; give an integer >= 1.") from None
    if name == "support":
        raise ConfigError(f"{name} cannot be given as text; pass hv.support.* objects from Python "
                          "(or --inductor-support on the command line).")
    return t


def _read_dict(name: str, value: Any) -> Any:
    """The Python value of Config field `name` in its `to_dict` form (support descriptions)."""
    if name != "support" or value is None:
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(_SUPPORT_HELP)
    return {k: v if isinstance(v, support_mod.Support) else _support_from_dict(k, v) for k, v in value.items()}


def read_values(values: Any, form: str = "value") -> dict[str, Any]:
    """The one parser: Config field values from a mapping of Python values (`form="value"`),
    their `to_dict` forms (`"dict"`) or text (`"text"`, the command line and CSV cells:
    priority 'a>b' / 'a,b' / 'a+b'; op names comma- or '+'-separated, 'none' for no ops;
    bools true/false/yes/no/1/0; min_block_size an integer). Unknown field names are a
    ConfigError; the values are checked by `check_value` when the Config is built."""
    if not isinstance(values, Mapping):
        what = {"dict": "Config.from_dict takes a dict of Config fields",
                "text": "settings must be a dict of field -> text"}.get(form, "settings must be a dict of Config fields")
        raise ConfigError(f"{what}, not {type(values).__name__}.")
    values = dict(values)
    check_fields(values)
    read = {"value": lambda _name, v: v, "dict": _read_dict, "text": _read_text}[form]
    return {name: read(name, value) for name, value in values.items()}


def check_value(name: str, value: Any, priority: tuple[str, ...] | None = None) -> Any:
    """The one checker: the checked value of Config field `name` (ConfigError saying what to
    write instead). `support` and custom backends are checked against `priority`."""
    check_fields({name: value})
    if name == "priority":
        return parse_priority(value)
    if name == "support":
        checked = parse_priority(priority if priority is not None else Config.priority)
        support = parse_support(value, checked)
        for backend in checked:
            if backend not in (support or {}) and backend not in BUILTIN_BACKENDS:
                raise ConfigError(unknown_backend_message(backend))
        return support
    if name == "min_block_size":
        return parse_min_block_size(value)
    if name == "torch_executed_ops":
        return parse_ops(value)
    if name == "demote_to":
        return parse_demote_to(value)
    return parse_bool(name, value)


def parse_text(name: str, text: str) -> Any:
    """The checked value of a Config field written as text (`read_values(form="text")`)."""
    return check_value(name, read_values({name: text}, form="text")[name])


def parse_config(values: Mapping[str, Any] | None = None, base: "Config | None" = None,
                 form: str = "value") -> Config:
    """A Config from `base` (default: the defaults) and `values` (Config fields, read by
    `read_values` in `form`): the entry for a dict of settings; `Config(...)` checks each
    field with `check_value`."""
    values = read_values(values if values is not None else {}, form)
    base = base if base is not None else Config()
    return base.replace(**values) if values else base


def config_from_text(fields: Mapping[str, str], base: "Config | None" = None) -> Config:
    """A Config from settings written as text (`{"priority": "tensorrt>inductor",
    "min_block_size": "3", "skip_fusion": "yes"}`), each read by `read_values(form="text")`, on `base`."""
    return parse_config(fields, base, form="text")


def _support_from_dict(name: str, d: Any) -> support_mod.Support:
    if not isinstance(d, Mapping):
        raise ConfigError(f"support[{name!r}] must be a hv.Support or its to_dict() form, not {type(d).__name__}.")
    return support_mod.from_dict(dict(d))
