"""The partitioners `engine=` names (Config.engine's values): hierviz's, upstream's hierarchical
one and torch_tensorrt.compile's two, each with what it is and its aliases."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from hierviz.errors import ConfigError


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
