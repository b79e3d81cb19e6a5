"""hv.Config: the run's settings, a frozen, hashable dataclass whose fields carry their row.

Each field's metadata is its `Setting` (setting.py): how its value is read from Python and
from text, its short text forms (Config.label, table cells), its command-line flag and help,
and which engines take every value of it. `SETTINGS` is the rows in field order; everything
that deals with settings iterates it: `to_dict`/`from_dict`, the CLI flags, sweep and tune
grids and labels, the table columns, the cache keys (the engine is a setting like the others).
The Explorer's control of each setting is declared in the widget (widget/control_spec.py),
what torch_tensorrt.compile's partitioners accept in compile_rules.py. Adding a setting is
one field plus the code that uses it (docs/architecture.md, "Adding a setting").

Values are checked once, where they come in: `Config(...)`, `Config.replace`, `from_dict`,
`hv.partition(**overrides)`, the CLI, the widget and grid entries go through the row's
`parse` (text first through its `read_text`); a Config that exists is valid, so code that
receives one never checks it again. `derive` makes a copy from values already checked (only
the rules between fields run). `"tensorrt>inductor"`, `"tensorrt,inductor"` and
`("tensorrt", "inductor")` mean the same everywhere, op names are accepted with or without
`torch.ops.aten.`, and a wrong type or value is a `ConfigError` saying what to write instead.
"""

from __future__ import annotations

import dataclasses
import difflib
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from hierviz.settings import compile_rules
from hierviz.support import sources as support_mod
from hierviz.settings.engine_table import COMPILE_ENGINES, DEFAULT_ENGINE, parse_engine
from hierviz.errors import ConfigError, ConfigWarning, user_stacklevel
from hierviz.settings.setting import Flag, Setting
from hierviz.settings.setting_values import (
    BUILTIN_BACKENDS,
    MIN_BLOCK_SIZE,
    SUPPORT_HELP,
    parse_bool,
    parse_demote_to,
    parse_min_block_size,
    parse_ops,
    parse_priority,
    parse_support,
    unknown_backend_message,
)
from hierviz.support.support_base import Support
from hierviz.support.support_map import SupportMap


# ---------------------------------------------------------------------------- text
# ---------------------------------------------------------------------------- text
TEXT_TRUE = ("true", "yes", "on", "1")
TEXT_FALSE = ("false", "no", "off", "0")


def _text_stripped(text: str) -> str:
    return text.strip()


def _text_ops(text: str) -> Any:
    t = text.strip()
    return frozenset() if t.lower() in ("", "none", "()") else t.replace("+", ",")


def _text_int(name: str) -> Callable[[str], Any]:
    def read(text: str) -> int:
        try:
            return int(text.strip())
        except ValueError:
            raise ConfigError.for_setting(name, f"{text!r} is not a whole number; give an integer >= 1.") from None
    return read


def _text_bool(name: str) -> Callable[[str], bool]:
    def read(text: str) -> bool:
        t = text.strip().lower()
        if t in TEXT_TRUE:
            return True
        if t in TEXT_FALSE:
            return False
        raise ConfigError.for_setting(name, f"{text!r} is not true/false.")
    return read


def _parse_bool_field(name: str) -> Callable[[Any], bool]:
    return lambda value: parse_bool(name, value)



# ---------------------------------------------------------------------------- command-line readers
# ---------------------------------------------------------------------------- command-line readers
def _priority_flag(text: str) -> tuple[str, ...]:
    """--priority: built-in backends only (others need support=, from Python)."""
    priority = parse_priority(text)
    unknown = [b for b in priority if b not in BUILTIN_BACKENDS]
    if unknown:
        raise ConfigError.for_setting("--priority", f"{unknown_backend_message(unknown[0], custom=False)} "
                                      "Other backends need the Python API, hv.Config(priority=..., support=...)")
    return priority


def _support_flag(text: str) -> Any:
    """--inductor-support: a support source name (all = TorchInductor's lowerings, none) or
    an op list, as Config.support {'inductor': ...}; None keeps the default."""
    choice = text.strip().lower()
    if choice == "none":
        return None
    if choice in support_mod.SOURCE_ALIASES or choice in support_mod.SOURCES:
        return parse_support({"inductor": support_mod.from_source(choice)})
    ops = [t.strip() for t in text.split(",") if t.strip()]
    takes = ("The option takes all (every op TorchInductor compiles), none (no ops) or a comma-separated op list.")
    if not ops:
        raise ConfigError.for_setting("--inductor-support", f"takes all, none or op,op,..., not {text!r}")
    try:
        return parse_support({"inductor": support_mod.ops(ops)})
    except ConfigError as exc:
        raise ConfigError.for_setting("--inductor-support", f"{exc.reason} {takes}") from None



# ---------------------------------------------------------------------------- table cells and JSON
def _show_support(value: "SupportMap | None") -> str:
    if value is None:
        return "default"
    return "; ".join(f"{b}={support_mod.source_name(s)}" for b, s in sorted(value.items(), key=lambda kv: str(kv[0])))


def _short_ops(ops: frozenset[str]) -> str | None:
    return "torch=" + ",".join(sorted(o.replace("torch.ops.aten.", "") for o in ops)) if ops else None


def _support_json(value: "SupportMap | None") -> Any:
    return None if value is None else {k: v.to_dict() for k, v in value.items()}


def _support_from_json(value: Any) -> Any:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ConfigError(SUPPORT_HELP)
    return {k: v if isinstance(v, Support) else _support_from_dict(k, v) for k, v in value.items()}


def _support_from_dict(name: str, d: Any) -> Support:
    if not isinstance(d, Mapping):
        raise ConfigError(f"support[{name!r}] must be a hv.Support or its to_dict() form, not {type(d).__name__}.")
    return support_mod.from_dict(dict(d))



def _priority_label(config: "Config") -> str:
    """The priority as Config.label shows it: 'tensorrt>inductor(no ops)' names a backend that
    takes no ops (inductor's default support, as upstream's), and torch_tensorrt.compile's
    partitioners (engine fast / global) show 'tensorrt', the one backend they partition for."""
    if config.engine in COMPILE_ENGINES:
        return "tensorrt"
    return ">".join(b if compile_rules.takes_ops(config, b) else f"{b}(no ops)" for b in config.priority)


def row(setting: Setting) -> dict[str, Setting]:
    """A Config field's metadata: its row."""
    return {"setting": setting}


# the engines that take every value of a setting torch_tensorrt.compile's partitioners run their own way
HIERARCHICAL = ("hierviz", "torch_tensorrt")


# ---------------------------------------------------------------------------- Config
@dataclass(frozen=True)
class Config:
    """Settings of the hierarchical adjacency partitioner (defaults are Torch-TensorRT's), and
    which partitioner runs them (`engine`). A frozen, hashable dataclass; each field's metadata
    is its row of the settings table."""

    priority: tuple[str, ...] = field(default=("tensorrt", "inductor"), metadata=row(Setting(
        "backends, highest priority first", parse=lambda v: parse_priority(v), read_text=_text_stripped,
        show=">".join, label=">".join, label_of=_priority_label, to_json=list,
        flag=Flag("backends, highest priority first, e.g. inductor>tensorrt (also inductor,tensorrt; "
                  "default tensorrt>inductor)", metavar="a>b", read=_priority_flag),
        engines=HIERARCHICAL)))
    support: SupportMap | None = field(default=None, metadata=row(Setting(
        "mapping backend -> hv.Support (None: Torch-TensorRT's defaults)",
        parse=lambda v: parse_support(v), read_text=None, show=_show_support,
        to_json=_support_json, from_json=_support_from_json,
        flag=Flag("what inductor may take: all (TorchInductor's lowerings), none (Torch-TensorRT's default: "
                  "no ops) or an op list", metavar="all|none|op,...", name="--inductor-support", read=_support_flag),
        engines=HIERARCHICAL)))
    min_block_size: int = field(default=MIN_BLOCK_SIZE, metadata=row(Setting(
        "smallest accelerated subgraph kept", parse=lambda v: parse_min_block_size(v),
        read_text=_text_int("min_block_size"), label=lambda v: f"mbs={v}",
        flag=Flag(f"smallest accelerated subgraph kept (default {MIN_BLOCK_SIZE})", metavar="N"))))
    torch_executed_ops: frozenset[str] = field(default=frozenset(), metadata=row(Setting(
        "op names forced to run in PyTorch", parse=lambda v: parse_ops(v), read_text=_text_ops,
        show=lambda v: ",".join(sorted(v)), label=_short_ops, to_json=sorted,
        flag=Flag("ops forced to run in PyTorch, e.g. torch.ops.aten.add.Tensor", metavar="op,..."))))
    require_full_compilation: bool = field(default=False, metadata=row(Setting(
        "everything must be accelerated, else hv.ConfigError", parse=_parse_bool_field("require_full_compilation"),
        read_text=_text_bool("require_full_compilation"), label=lambda v: "full" if v else None,
        flag=Flag("fail unless every op is accelerated"))))
    skip_fusion: bool = field(default=False, metadata=row(Setting(
        "as in upstream's partitioner", parse=_parse_bool_field("skip_fusion"), read_text=_text_bool("skip_fusion"),
        label=lambda v: "nofusion" if v else None, flag=Flag("do not keep fusion groups together"),
        engines=HIERARCHICAL)))
    demote_to: str = field(default="torch", metadata=row(Setting(
        "where an accelerated subgraph below min_block_size goes: torch or next",
        parse=lambda v: parse_demote_to(v), read_text=_text_stripped,
        label=lambda v: f"demote={v}" if v != "torch" else None,
        flag=Flag("where an accelerated subgraph below min_block_size goes: torch (upstream's rule, the "
                  "default) or next (the next backend in priority that takes its nodes)", metavar="torch|next"),
        engines=HIERARCHICAL)))
    engine: str = field(default=DEFAULT_ENGINE, metadata=row(Setting(
        "which partitioner runs (hv.partition's engine=)", parse=parse_engine, read_text=_text_stripped,
        flag=Flag("hierviz (default), fast (what torch_tensorrt.compile runs), global (compile with "
                  "use_fast_partitioner=False), torch_tensorrt or hierarchical (upstream's hierarchical "
                  "partitioner)", metavar="NAME"),
        head=True)))

    def __new__(cls, *args: Any, **kwargs: Any) -> "Config":
        """Unknown or surplus arguments are a ConfigError naming the fields, not the TypeError
        the dataclass's __init__ raises."""
        names = field_names()
        if len(args) > len(names):
            raise ConfigError(f"Config takes at most {len(names)} values ({', '.join(names)}); "
                              f"got {len(args)}. Pass them by name, e.g. Config(min_block_size=3).")
        check_fields(kwargs)
        twice = [f for f in names[:len(args)] if f in kwargs]
        if twice:
            raise ConfigError(f"Config got {twice[0]} twice (by position and by name).")
        return super().__new__(cls)

    def __post_init__(self) -> None:
        for setting_row in SETTINGS:  # each value read by its row; defaults are valid as they are
            value = getattr(self, setting_row.name)
            if value is not setting_row.default:
                object.__setattr__(self, setting_row.name, setting_row.parse(value))
        _check_together(self)

    def support_for(self, backend: str) -> Support | None:
        """The Support used for `backend`: the one given, else Torch-TensorRT's default."""
        if self.support is not None and backend in self.support:
            return self.support[backend]
        return support_mod.upstream_default(backend)

    def backend_support(self, backend: str) -> Support:
        """The Support of `backend`, a backend in priority (each has one: a built-in's default,
        or the one a custom backend must be given)."""
        sup = self.support_for(backend)
        if sup is None:
            raise ConfigError(f"backend {backend!r} has no support: give support={{{backend!r}: ...}} "
                              "(an hv.support source), or use 'tensorrt' or 'inductor'.")
        return sup

    def replace(self, **changes: Any) -> "Config":
        """A copy with `changes` (Config fields, Python values), each checked by its row."""
        check_fields(changes)
        return derive(self, {name: setting(name).parse(value) for name, value in changes.items()})

    def to_dict(self) -> dict:
        """JSON-safe: op names as strings, support as descriptions."""
        return {r.name: r.to_json(getattr(self, r.name)) for r in SETTINGS}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Config":
        """The inverse of `to_dict` (also takes Python values, like `Config(**d)`)."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"Config.from_dict takes a dict of Config fields, not {type(d).__name__}.")
        return cls(**read_values(d, form="dict"))

    def label(self) -> str:
        """A short one-line description, for tables and titles."""
        parts = (r.label_of(self) if r.label_of is not None else r.label(getattr(self, r.name)) for r in SETTINGS)
        return " ".join(p for p in parts if p is not None)


# the rows, in field order, each with its field's name, type and default
SETTINGS: tuple[Setting, ...] = tuple(
    dataclasses.replace(f.metadata["setting"], name=f.name, annotation=str(f.type), default=f.default)
    for f in dataclasses.fields(Config))


def setting(name: str) -> Setting:
    """The row of setting `name` (ConfigError naming the fields when there is none)."""
    for r in SETTINGS:
        if r.name == name:
            return r
    check_fields({name: None})
    raise AssertionError(name)  # pragma: no cover - check_fields raised


def field_names() -> tuple[str, ...]:
    """The settings' names, in field order."""
    return tuple(r.name for r in SETTINGS)


def _check_together(cfg: Config) -> None:
    """The rules between settings: a custom backend in priority needs support (support for one
    that is not in priority is ignored, with a warning); torch_tensorrt.compile's partitioners
    (engine fast / global) refuse the settings they cannot take (compile_rules.py)."""
    if cfg.support is not None:
        ignored = [b for b in cfg.support if b not in cfg.priority and b not in BUILTIN_BACKENDS]
        if ignored:  # a warning, not an error: sweeps vary priority over one support mapping
            warnings.warn(f"support names backend {ignored[0]!r}, which is not in priority {cfg.priority}, so it "
                          f"is ignored: add it, e.g. priority={(ignored[0], *cfg.priority)!r}, to use it.",
                          ConfigWarning, stacklevel=user_stacklevel())
    for backend in cfg.priority:
        if backend not in (cfg.support or {}) and backend not in BUILTIN_BACKENDS:
            raise ConfigError(unknown_backend_message(backend))
    if cfg.engine in COMPILE_ENGINES:
        for r in SETTINGS:
            why = None if r.takes_every_value(cfg.engine) else compile_rules.refusal(r.name, cfg)
            if why is not None:
                raise ConfigError(why)


def derive(config: Config, checked: Mapping[str, Any], *, together: bool = True) -> Config:
    """A copy of `config` with values already read by their rows (inside hierviz: grid
    combinations, compile_config, a CLI option): no value is read again; the rules between
    settings run unless `together` is False (a combination known to be valid). Values from a
    user go through Config.replace instead."""
    new = object.__new__(type(config))
    for name in field_names():
        object.__setattr__(new, name, checked[name] if name in checked else getattr(config, name))
    if together:
        _check_together(new)
    return new



# ---------------------------------------------------------------------------- reading settings
# Arguments people pass to hv.partition that belong to hv.capture.
CAPTURE_ARGS = ("dynamic_shapes", "kwargs")


def check_fields(values: Mapping[str, Any]) -> None:
    """ConfigError naming the closest field for each name that is not a Config field."""
    names = field_names()
    unknown = sorted(k for k in values if k not in names)
    if not unknown:
        return
    capture_args = [k for k in unknown if k in CAPTURE_ARGS]
    if capture_args:
        raise ConfigError(f"{', '.join(capture_args)} is an argument of capturing, not a Config field: "
                          f"pass it to hv.partition(model, inputs, {capture_args[0]}=...) or "
                          f"hv.capture(model, inputs, {capture_args[0]}=...).")
    hints = [m for k in unknown for m in difflib.get_close_matches(str(k), names, n=1)]
    msg = f"unknown Config field(s) {unknown}"
    msg += f"; did you mean {', '.join(repr(h) for h in hints)}?" if hints else "."
    raise ConfigError(msg + f" Fields are {', '.join(names)}.")


def read_values(values: Any, form: str = "value") -> dict[str, Any]:
    """Config field values from a mapping of Python values (`form="value"`), their `to_dict`
    forms (`"dict"`) or text (`"text"`, the command line and CSV cells: priority 'a>b' / 'a,b'
    / 'a+b'; op names comma- or '+'-separated, 'none' for no ops; bools
    true/false/yes/no/1/0; min_block_size an integer). Unknown field names are a ConfigError;
    the values are checked by their rows' `parse` when the Config is built."""
    if not isinstance(values, Mapping):
        what = {"dict": "Config.from_dict takes a dict of Config fields",
                "text": "settings must be a dict of field -> text"}.get(
                    form, "settings must be a dict of Config fields")
        raise ConfigError(f"{what}, not {type(values).__name__}.")
    values = dict(values)
    check_fields(values)
    if form == "text":
        return {name: setting(name).from_text(value) for name, value in values.items()}
    if form == "dict":
        return {name: setting(name).from_json(value) for name, value in values.items()}
    return values


def parse_text(name: str, text: str) -> Any:
    """The checked value of a Config field written as text."""
    row = setting(name)
    return row.parse(row.from_text(text))


def parse_config(values: Mapping[str, Any] | None = None, base: "Config | None" = None,
                 form: str = "value") -> Config:
    """A Config from `base` (default: the defaults) and `values` (Config fields, read by
    `read_values` in `form`, each checked once by its row)."""
    values = read_values(values if values is not None else {}, form)
    base = base if base is not None else Config()
    return base.replace(**values) if values else base


def config_from_text(fields: Mapping[str, str], base: "Config | None" = None) -> Config:
    """A Config from settings written as text (`{"priority": "tensorrt>inductor",
    "min_block_size": "3", "skip_fusion": "yes"}`), on `base`."""
    return parse_config(fields, base, form="text")
