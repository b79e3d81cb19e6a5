"""A search from a setting with TensorRT where TensorRT cannot be timed (no CUDA GPU here):
TensorRT is kept, never dropped.

Without a GPU a search could only time the other backends, and would recommend a setting
without TensorRT: a deployment the user did not ask for. Instead every setting it proposes
keeps TensorRT's engines: its partition has the TensorRT subgraphs (the same nodes in each) of
the setting searched from, and "tensorrt" in its priority. TensorRT's subgraphs run in eager
PyTorch in every setting timed, the same code in each, so what differs between two timings is
the parts outside TensorRT: the search ranks by those, and its verdict says so (`note`).
A setting that changes the engines (moves ops into or out of TensorRT, or drops it) cannot be
compared without timing TensorRT: it is not measured (status "changes tensorrt").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import torch

from hierviz.errors import HiervizError
from hierviz.settings.config import Config, derive
from hierviz.settings.engine_table import DEFAULT_ENGINE
from hierviz.partitioner import Partition

TENSORRT = "tensorrt"
STATUS = "changes tensorrt"  # a trial whose setting does not keep TensorRT's engines

Engines = tuple[tuple[tuple[str, ...], ...], ...]  # per graph, the TensorRT subgraphs' nodes


def engines_of(parts: Sequence[Partition]) -> Engines:
    """What TensorRT's engines hold: per graph, each TensorRT subgraph's nodes."""
    return tuple(tuple(sg.nodes for sg in p.subgraphs if sg.backend == TENSORRT) for p in parts)


def untimed_why(device: torch.device, compilers: Mapping[str, Any] | None = None) -> str | None:
    """Why TensorRT subgraphs cannot be timed on `device` (with hv.measure's `compilers=`), in a
    few words; None when they can."""
    from hierviz.latency.compiling.backend_compilers import get_compiler

    compiler = get_compiler(TENSORRT, dict(compilers) if compilers else None)
    if compiler is None:
        return "no compiler is registered for 'tensorrt'"
    if compiler.needs_cuda and device.type != "cuda":
        return "no CUDA GPU here" if not torch.cuda.is_available() else f"measuring on {device}, not a CUDA GPU"
    return compiler.available(device)


@dataclass(frozen=True)
class KeptTensorRT:
    """TensorRT in the setting searched from, untimeable here (`why`): the engines every setting
    proposed must keep (`engines`, None when the base setting could not be partitioned: then
    only "tensorrt" in the priority is asked for), and how a setting is partitioned
    (`partitions`)."""

    why: str
    engines: Engines | None
    partitions: Callable[[Config], list[Partition]]

    @classmethod
    def of(cls, base: Config, device: torch.device, compilers: Mapping[str, Any] | None,
           partitions: Callable[[Config], list[Partition]]) -> KeptTensorRT | None:
        """The TensorRT to keep when `base` has it and it cannot be timed on `device`, else None."""
        if TENSORRT not in base.priority:
            return None
        why = untimed_why(device, compilers)
        if why is None:
            return None
        if base.engine != DEFAULT_ENGINE:  # tune searches hierviz's partitioner (tune_space.tune_base)
            base = derive(base, {"engine": DEFAULT_ENGINE})
        try:
            engines: Engines | None = engines_of(partitions(base))
        except HiervizError:
            engines = None
        return cls(why, engines, partitions)

    @property
    def note(self) -> str:
        """The verdict's last words: what was not timed, why, and what the ranking rests on."""
        return (f"TensorRT's engines were not timed: {self.why}; ranked by the parts that run outside TensorRT "
                "(its subgraphs ran in eager PyTorch, the same in every setting compared)")

    def change(self, config: Config, parts: Sequence[Partition] | None = None) -> str | None:
        """How `config` (partitioned as `parts`, or here) does not keep TensorRT's engines; None
        when it keeps them."""
        if TENSORRT not in config.priority:
            return "drops TensorRT from the priority"
        try:
            found = engines_of(parts if parts is not None else self.partitions(config))
        except HiervizError as exc:
            return f"cannot be partitioned: {exc}"
        if self.engines is None:
            return None if any(found) else "puts no op in TensorRT"
        if found == self.engines:
            return None
        before, now = _ops(self.engines), _ops(found)
        return (f"changes TensorRT's engines ({now} ops in {_count(found)} TensorRT subgraph(s), against {before} "
                f"in {_count(self.engines)} in the setting searched from)")

    def keeps(self, config: Config) -> bool:
        return self.change(config) is None

    def why_not_measured(self, config: Config, parts: Sequence[Partition]) -> str | None:
        """A trial's error when its setting does not keep the engines, else None."""
        change = self.change(config, parts)
        if change is None:
            return None
        return (f"not measured: it {change}; TensorRT cannot be timed ({self.why}), so only settings that keep "
                "TensorRT's engines are compared")


def own_fallbacks(measurement: Any, untimed: bool) -> list[str]:
    """The subgraphs of `measurement` that fell back to eager PyTorch, less (when TensorRT is kept
    and `untimed`) the TensorRT ones, which ran eagerly because TensorRT cannot be timed here."""
    fell = list(getattr(measurement, "fallbacks", ()) or ())
    if not untimed:
        return fell
    asked = {r.tag: r.asked for r in getattr(measurement, "records", ())}
    return [tag for tag in fell if asked.get(tag) != TENSORRT]


def _ops(engines: Engines) -> int:
    return sum(len(nodes) for graph in engines for nodes in graph)


def _count(engines: Engines) -> int:
    return sum(len(graph) for graph in engines)


__all__ = ["KeptTensorRT", "STATUS", "engines_of", "own_fallbacks", "untimed_why"]
