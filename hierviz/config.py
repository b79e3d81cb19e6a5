"""hv.Config: the run's settings, declared once in one table (`SETTINGS`), frozen and hashable.

Each `Setting` row gives a setting's type and default, how it is read from a Python value and
from text, its short text forms (Config.label, table cells), its command-line flag and help,
its Explorer control (as data; explorer/controls.py builds the widget), and what
torch_tensorrt.compile's own partitioners (engine "fast"/"global") accept. Everything that
deals with settings iterates the table: `Config` itself (its dataclass fields are made from
it), `to_dict`/`from_dict`, the CLI flags, the Explorer controls, sweep and tune grids and
labels, the table columns, what fast/global refuse, and the cache keys (the engine is a
setting like the others). Adding a setting is one row plus the code that uses it
(docs/architecture.md, "Adding a setting").

Values are checked once, where they come in: `Config(...)`, `Config.replace`, `from_dict`,
`hv.partition(**overrides)`, the CLI, the widget and grid entries go through the row's
`parse` (text first through its `read_text`); a Config that exists is valid, so code that
receives one never checks it again. `derive` makes a copy from values already checked (only
the rules between fields run). `"tensorrt>inductor"`, `"tensorrt,inductor"` and
`("tensorrt", "inductor")` mean the same everywhere, op names are accepted with or without
`torch.ops.aten.`, and a wrong type or value is a `ConfigError` saying what to write instead.
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

from hierviz import support as support_mod
from hierviz import trt
from hierviz.errors import ConfigError, ConfigWarning, user_stacklevel
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



# ---------------------------------------------------------------------------- the values
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


def parse_support(value: Any) -> "SupportMap | None":
    """support: None (Torch-TensorRT's defaults) or a mapping backend -> hv.Support (backend
    names checked; whether they fit priority is a rule between fields, `_check_together`)."""
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


# ---------------------------------------------------------------------------- the engines
@dataclass(frozen=True)
class Engine:
    """One partitioner `engine=` runs: its name, what it is (one line), and for
    torch_tensorrt.compile's own partitioners how compile runs it (they take fewer settings)."""

    name: str
    what: str
    compile: str = ""            # non-empty: one of torch_tensorrt.compile's partitioners
    needs_trt: bool = False      # runs the installed Torch-TensorRT's code
    aliases: tuple[str, ...] = ()


ENGINE_TABLE = (
    Engine("hierviz", "hierviz's hierarchical partitioner"),
    Engine("fast", "torch_tensorrt.compile today (its default: the fast adjacency partitioner)",
           compile="torch_tensorrt.compile's default partitioner (use_fast_partitioner=True)", needs_trt=True),
    Engine("global", "torch_tensorrt.compile with use_fast_partitioner=False (the global partitioner)",
           compile="torch_tensorrt.compile's global partitioner (use_fast_partitioner=False)", needs_trt=True),
    Engine("torch_tensorrt", "upstream's hierarchical partitioner (not reachable from compile)", needs_trt=True,
           aliases=("hierarchical",)),
)
DEFAULT_ENGINE = ENGINE_TABLE[0].name
ENGINE_ALIASES = {alias: e.name for e in ENGINE_TABLE for alias in e.aliases}
ENGINES = tuple(name for e in ENGINE_TABLE for name in (e.name, *e.aliases))  # every name engine= takes
COMPILE_ENGINES = tuple(e.name for e in ENGINE_TABLE if e.compile)


def engine_info(name: str) -> Engine:
    """The ENGINE_TABLE row of an engine name (as parse_engine returns it)."""
    return next(e for e in ENGINE_TABLE if e.name == name)


def available_engines() -> tuple[str, ...]:
    """The engines that can run here: those that need Torch-TensorRT only when it is there
    (trt.present: asked without importing it)."""
    return tuple(e.name for e in ENGINE_TABLE if not e.needs_trt or trt.present())


def parse_engine(engine: object) -> str:
    """The engine name partition() runs ('hierarchical' -> 'torch_tensorrt'); ConfigError
    naming the engines otherwise."""
    if isinstance(engine, str) and engine.strip().lower() in ENGINES:
        name = engine.strip().lower()
        return ENGINE_ALIASES.get(name, name)
    close = difflib.get_close_matches(str(engine).lower(), ENGINES, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    raise ConfigError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}{hint}: 'fast' is what "
                      "torch_tensorrt.compile partitions with by default, 'global' its use_fast_partitioner=False, "
                      "'torch_tensorrt'/'hierarchical' upstream's hierarchical partitioner, 'hierviz' hierviz's own.")


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
            raise ConfigError(f"{name}: {text!r} is not a whole number; give an integer >= 1.") from None
    return read


def _text_bool(name: str) -> Callable[[str], bool]:
    def read(text: str) -> bool:
        t = text.strip().lower()
        if t in TEXT_TRUE:
            return True
        if t in TEXT_FALSE:
            return False
        raise ConfigError(f"{name}: {text!r} is not true/false.")
    return read


def _parse_bool_field(name: str) -> Callable[[Any], bool]:
    return lambda value: parse_bool(name, value)


def _same(value: Any) -> Any:
    return value


def _none(_value: Any) -> None:
    return None


# ---------------------------------------------------------------------------- command-line readers
def _priority_flag(text: str) -> tuple[str, ...]:
    """--priority: built-in backends only (others need support=, from Python)."""
    priority = parse_priority(text)
    unknown = [b for b in priority if b not in BUILTIN_BACKENDS]
    if unknown:
        raise ConfigError(f"--priority: {unknown_backend_message(unknown[0], custom=False)} Other backends "
                          "need the Python API, hv.Config(priority=..., support=...)")
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
        raise ConfigError(f"--inductor-support takes all, none or op,op,..., not {text!r}")
    try:
        return parse_support({"inductor": support_mod.ops(ops)})
    except ConfigError as exc:
        message = re.sub(r"^support\.ops:\s*", "", str(exc))
        raise ConfigError(f"--inductor-support {text}: {message} {takes}") from None


# ---------------------------------------------------------------------------- the table
PASSED = "passed"  # Setting.compile_value: torch_tensorrt.compile's partitioners run the user's value


@dataclass(frozen=True)
class Flag:
    """A setting's command-line option: `--name VALUE` (`metavar`), or a switch that sets True
    (`metavar` None). `read` turns the text into the value (default: the setting's read_text)."""

    help: str
    metavar: str | None = None
    name: str = ""
    read: Callable[[str], Any] | None = None


@dataclass(frozen=True)
class Control:
    """A setting's Explorer control, as data: `kind` names the widget explorer/controls.py
    builds (backends, support, slider, ops, toggle, choice); `options` are a choice's values
    (or a function giving them); `row` is the line of the controls it sits on."""

    kind: str
    description: str = ""
    options: tuple[str, ...] | Callable[[], tuple[str, ...]] = ()
    tooltip: str = ""
    icon: str = ""
    row: int = 0
    unavailable: str = ""  # why a value may not be offered here (a choice whose options depend on the machine)


@dataclass(frozen=True)
class Setting:
    """One row of the settings table (see the module docstring)."""

    name: str
    annotation: str               # the type, as Config's field annotation
    default: Any
    doc: str                      # one line: what it is
    parse: Callable[[Any], Any]   # a Python value -> the checked value (ConfigError otherwise)
    read_text: Callable[[str], Any] | None  # text -> a Python value for `parse` (None: no text form)
    show: Callable[[Any], Any] = _same      # checked value -> its table cell (and tune's choice label)
    label: Callable[[Any], str | None] = _none  # checked value -> its part of Config.label (None: left out)
    # its part of Config.label when that depends on other settings too (the whole Config; over `label`)
    label_of: Callable[["Config"], str | None] | None = None
    to_json: Callable[[Any], Any] = _same   # checked value -> its to_dict form
    from_json: Callable[[Any], Any] = _same  # to_dict form -> a Python value for `parse`
    flag: Flag | None = None
    control: Control | None = None
    compile_value: Any = PASSED   # the value torch_tensorrt.compile's partitioners run with
    compile_rule: Callable[["Config", str], str | None] | None = None  # why they cannot take a config
    head: bool = False            # its table column goes first, and only where it is not the default

    @property
    def option(self) -> str:
        """The command-line option: --min-block-size."""
        return (self.flag.name if self.flag is not None and self.flag.name else
                "--" + self.name.replace("_", "-"))

    def from_text(self, text: Any) -> Any:
        """The Python value of this setting written as text (unchecked: `parse` checks it)."""
        if not isinstance(text, str):
            raise ConfigError(f"{self.name}: expected text, got {type(text).__name__} {text!r}.")
        if self.read_text is None:
            raise ConfigError(f"{self.name} cannot be given as text; pass hv.support.* objects from Python "
                              "(or --inductor-support on the command line).")
        return self.read_text(text)

    def cell(self, value: Any) -> Any:
        """`value` (checked or as the user wrote it) as a table cell: as the parser reads it,
        or, when it cannot be read, as given (lists comma-joined)."""
        try:
            return self.show(self.parse(value))
        except ConfigError:
            if isinstance(value, (list, tuple, set, frozenset)):
                return ",".join(sorted(str(v) for v in value))
            return value if value is None or isinstance(value, (str, int, float, bool)) else str(value)


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
        raise ConfigError(_SUPPORT_HELP)
    return {k: v if isinstance(v, support_mod.Support) else _support_from_dict(k, v) for k, v in value.items()}


def _support_from_dict(name: str, d: Any) -> support_mod.Support:
    if not isinstance(d, Mapping):
        raise ConfigError(f"support[{name!r}] must be a hv.Support or its to_dict() form, not {type(d).__name__}.")
    return support_mod.from_dict(dict(d))


def _takes_ops(config: "Config", backend: str) -> bool:
    sup = config.support_for(backend)
    return sup is None or isinstance(sup, support_mod.TensorRTSupport) or sup.per_node \
        or bool(getattr(sup, "names", True)) or getattr(sup, "kind", "") == "inductor"


def _priority_label(config: "Config") -> str:
    """The priority as Config.label shows it: 'tensorrt>inductor(no ops)' names a backend that
    takes no ops (inductor's default support, as upstream's), and torch_tensorrt.compile's
    partitioners (engine fast / global) show 'tensorrt', the one backend they partition for."""
    if config.engine in COMPILE_ENGINES:
        return "tensorrt"
    return ">".join(b if _takes_ops(config, b) else f"{b}(no ops)" for b in config.priority)


def _compile_priority(config: "Config", where: str) -> str | None:
    if "tensorrt" not in config.priority:
        return f"{where} partitions for TensorRT only: put 'tensorrt' in priority, e.g. priority=('tensorrt',)."
    others = [b for b in config.priority if b != "tensorrt" and _takes_ops(config, b)]
    if others:
        return (f"{where} partitions for TensorRT only, but priority also has {others[0]!r} with ops to take "
                f"(its support); use priority=('tensorrt',) (--priority tensorrt), give {others[0]!r} no support, "
                "or engine='hierviz' for several backends.")
    return None


def _compile_support(config: "Config", where: str) -> str | None:
    sup = config.support_for("tensorrt")
    if support_mod.added_ops(sup) is None:
        return (f"{where} checks support with Torch-TensorRT's converter registry and their capability "
                f"validators, as compile does; it cannot use support['tensorrt']={sup!r}. "
                "Leave support['tensorrt'] out (or add ops to it: hv.support.any_chain(hv.support.tensorrt(), "
                "hv.support.ops([...]))), or use engine='hierviz'.")
    return None


def _compile_skip_fusion(config: "Config", where: str) -> str | None:
    if config.skip_fusion:
        return (f"{where} sets skip_fusion itself (when every op is supported), as compile does; "
                "leave skip_fusion=False, or use engine='hierviz'.")
    return None


def _compile_demote_to(config: "Config", where: str) -> str | None:
    if config.demote_to != "torch":
        return (f"{where} demotes small blocks to PyTorch; it cannot take demote_to={config.demote_to!r}. "
                "Use engine='hierviz' for that.")
    return None


SETTINGS: list[Setting] = [
    Setting("priority", "tuple[str, ...]", ("tensorrt", "inductor"), "backends, highest priority first",
            parse=lambda v: parse_priority(v), read_text=_text_stripped, show=">".join, label=">".join,
            label_of=_priority_label,
            to_json=list,
            flag=Flag("backends, highest priority first, e.g. inductor>tensorrt (also inductor,tensorrt; "
                      "default tensorrt>inductor)", metavar="a>b", read=_priority_flag),
            control=Control("backends", tooltip="Backends, highest priority first: drag to reorder, "
                            "remove one to switch it off, type a name to add it back.", row=1),
            compile_value=("tensorrt",), compile_rule=_compile_priority),
    Setting("support", "SupportMap | None", None, "mapping backend -> hv.Support (None: Torch-TensorRT's defaults)",
            parse=lambda v: parse_support(v), read_text=None, show=_show_support,
            to_json=_support_json, from_json=_support_from_json,
            flag=Flag("what inductor may take: all (TorchInductor's lowerings), none (Torch-TensorRT's default: "
                      "no ops) or an op list", metavar="all|none|op,...", name="--inductor-support",
                      read=_support_flag),
            control=Control("support", row=2), compile_value=None, compile_rule=_compile_support),
    Setting("min_block_size", "int", MIN_BLOCK_SIZE, "smallest accelerated subgraph kept",
            parse=lambda v: parse_min_block_size(v), read_text=_text_int("min_block_size"),
            label=lambda v: f"mbs={v}",
            flag=Flag(f"smallest accelerated subgraph kept (default {MIN_BLOCK_SIZE})", metavar="N"),
            control=Control("slider", "min_block_size", row=3)),
    Setting("torch_executed_ops", "frozenset[str]", frozenset(), "op names forced to run in PyTorch",
            parse=lambda v: parse_ops(v), read_text=_text_ops, show=lambda v: ",".join(sorted(v)),
            label=_short_ops, to_json=sorted,
            flag=Flag("ops forced to run in PyTorch, e.g. torch.ops.aten.add.Tensor", metavar="op,..."),
            control=Control("ops", row=4)),
    Setting("require_full_compilation", "bool", False, "everything must be accelerated, else hv.ConfigError",
            parse=_parse_bool_field("require_full_compilation"), read_text=_text_bool("require_full_compilation"),
            label=lambda v: "full" if v else None,
            flag=Flag("fail unless every op is accelerated"),
            control=Control("toggle", "require full compilation", icon="lock", row=3)),
    Setting("skip_fusion", "bool", False, "as in upstream's partitioner",
            parse=_parse_bool_field("skip_fusion"), read_text=_text_bool("skip_fusion"),
            label=lambda v: "nofusion" if v else None,
            flag=Flag("do not keep fusion groups together"),
            control=Control("toggle", "skip fusion", row=3), compile_value=False, compile_rule=_compile_skip_fusion),
    Setting("demote_to", "str", "torch", "where an accelerated subgraph below min_block_size goes: torch or next",
            parse=lambda v: parse_demote_to(v), read_text=_text_stripped,
            label=lambda v: f"demote={v}" if v != "torch" else None,
            flag=Flag("where an accelerated subgraph below min_block_size goes: torch (upstream's rule, the "
                      "default) or next (the next backend in priority that takes its nodes)", metavar="torch|next"),
            control=Control("choice", "demote to", options=("torch", "next"), row=3),
            compile_value="torch", compile_rule=_compile_demote_to),
    Setting("engine", "str", DEFAULT_ENGINE, "which partitioner runs (hv.partition's engine=)",
            parse=parse_engine, read_text=_text_stripped,
            flag=Flag("hierviz (default), fast (what torch_tensorrt.compile runs), global (compile with "
                      "use_fast_partitioner=False), torch_tensorrt or hierarchical (upstream's hierarchical "
                      "partitioner)", metavar="NAME"),
            control=Control("choice", "engine", options=available_engines,
                            tooltip="hierviz: hierviz's partitioner; fast: what torch_tensorrt.compile runs; "
                                    "global: compile with use_fast_partitioner=False; torch_tensorrt: upstream's "
                                    "hierarchical one", row=0,
                            unavailable="the engines other than hierviz need torch_tensorrt, which is not available here"),
            head=True),
]


def setting(name: str) -> Setting:
    """The SETTINGS row of `name` (ConfigError naming the fields when there is none)."""
    for row in SETTINGS:
        if row.name == name:
            return row
    check_fields({name: None})
    raise AssertionError(name)  # pragma: no cover - check_fields raised


def field_names() -> tuple[str, ...]:
    """The settings' names, in table order (Config's fields)."""
    return tuple(row.name for row in SETTINGS)


# ---------------------------------------------------------------------------- Config
class _Checked(type):
    """Config's metaclass: unknown or surplus arguments are a ConfigError naming the fields,
    not the TypeError a dataclass __init__ raises."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        names = field_names()
        if len(args) > len(names):
            raise ConfigError(f"Config takes at most {len(names)} values ({', '.join(names)}); "
                              f"got {len(args)}. Pass them by name, e.g. Config(min_block_size=3).")
        check_fields(kwargs)
        twice = [f for f in names[:len(args)] if f in kwargs]
        if twice:
            raise ConfigError(f"Config got {twice[0]} twice (by position and by name).")
        return super().__call__(*args, **kwargs)


class Config(metaclass=_Checked):
    """Settings of the hierarchical adjacency partitioner (defaults are Torch-TensorRT's), and
    which partitioner runs them (`engine`). A frozen, hashable dataclass whose fields are the
    rows of SETTINGS."""

    def __post_init__(self) -> None:
        for row in SETTINGS:  # each value read by its row; defaults are valid as they are
            value = getattr(self, row.name)
            if value is not row.default:
                object.__setattr__(self, row.name, row.parse(value))
        _check_together(self)

    def support_for(self, backend: str) -> support_mod.Support | None:
        """The Support used for `backend`: the one given, else Torch-TensorRT's default."""
        if self.support is not None and backend in self.support:
            return self.support[backend]
        return support_mod.upstream_default(backend)

    def replace(self, **changes: Any) -> "Config":
        """A copy with `changes` (Config fields, Python values), each checked by its row."""
        check_fields(changes)
        return derive(self, {name: setting(name).parse(value) for name, value in changes.items()})

    def to_dict(self) -> dict:
        """JSON-safe: op names as strings, support as descriptions."""
        return {row.name: row.to_json(getattr(self, row.name)) for row in SETTINGS}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Config":
        """The inverse of `to_dict` (also takes Python values, like `Config(**d)`)."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"Config.from_dict takes a dict of Config fields, not {type(d).__name__}.")
        return cls(**read_values(d, form="dict"))

    def label(self) -> str:
        """A short one-line description, for tables and titles."""
        parts = (row.label_of(self) if row.label_of is not None else row.label(getattr(self, row.name))
                 for row in SETTINGS)
        return " ".join(p for p in parts if p is not None)


_GENERATED = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__match_args__",
              "__dataclass_fields__", "__dataclass_params__", "__getstate__", "__setstate__")


def _declare_fields() -> None:
    """Make Config's dataclass fields from SETTINGS (again, after add_setting / remove_setting)."""
    old = getattr(Config, "__dataclass_fields__", {})
    for attr in (*_GENERATED, *old):
        if attr in Config.__dict__:
            delattr(Config, attr)
    Config.__annotations__ = {row.name: row.annotation for row in SETTINGS}
    for row in SETTINGS:
        setattr(Config, row.name, row.default)
    dataclass(frozen=True)(Config)


_declare_fields()


def add_setting(row: Setting, *, after: str | None = None) -> None:
    """Add a row to the settings table (after `after`, else last) and remake Config's fields:
    every consumer of the table (CLI, Explorer, grids, tables, to_dict) then knows it. For
    extensions and tests; `remove_setting` undoes it."""
    if row.name in field_names():
        raise ConfigError(f"there is already a setting {row.name!r}")
    at = field_names().index(after) + 1 if after is not None else len(SETTINGS)
    SETTINGS.insert(at, row)
    _declare_fields()


def remove_setting(name: str) -> None:
    """Take a row added by add_setting out of the table again."""
    SETTINGS.remove(setting(name))
    _declare_fields()


def _check_together(cfg: Config) -> None:
    """The rules between settings: a custom backend in priority needs support (support for one
    that is not in priority is ignored, with a warning); torch_tensorrt.compile's partitioners
    (engine fast / global) refuse the settings they cannot take (the table's compile rules)."""
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
        where = f"engine={cfg.engine!r} ({engine_info(cfg.engine).compile})"
        for row in SETTINGS:
            why = row.compile_rule(cfg, where) if row.compile_rule is not None else None
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


def compile_config(config: Config, engine: str = "fast") -> Config:
    """The settings torch_tensorrt.compile would run for `config` with its partitioner `engine`:
    each setting's compile_value (TensorRT only, its validated converter support, no
    skip_fusion or demote_to of the user's), the others (min_block_size, torch_executed_ops,
    require_full_compilation) as given."""
    changes = {row.name: row.compile_value for row in SETTINGS
               if row.compile_value is not PASSED and getattr(config, row.name) != row.compile_value}
    if config.engine != engine:
        changes["engine"] = engine
    return derive(config, changes, together=False) if changes else config


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
                "text": "settings must be a dict of field -> text"}.get(form, "settings must be a dict of Config fields")
        raise ConfigError(f"{what}, not {type(values).__name__}.")
    values = dict(values)
    check_fields(values)
    if form == "text":
        return {name: setting(name).from_text(value) for name, value in values.items()}
    if form == "dict":
        return {name: setting(name).from_json(value) for name, value in values.items()}
    return values


def check_value(name: str, value: Any, priority: tuple[str, ...] | None = None) -> Any:
    """The checked value of Config field `name` (ConfigError saying what to write instead);
    `support` and custom backends are checked against `priority` (default: Config's)."""
    checked = setting(name).parse(value)
    if name == "support":
        Config(priority=priority if priority is not None else Config.priority, support=checked)
    return checked


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
