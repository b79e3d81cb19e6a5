"""`hv.BuildRow`: what converting and building one TensorRT subgraph gave, one row of
`Builds.df` (hierviz.building.builds)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BuildRow:
    """One TensorRT subgraph's build.

    `subgraph`: its tag; `ops`: its compute ops; `stage`: "run" (the lowered graph fails in
    PyTorch there), "convert", "build" or "built"; `profile`: each input's optimization profile
    (`name: min → opt → max`, a static input its one shape); `layers`, `engine_bytes`,
    `convert_s`, `build_s`; `node`: whose converter (or PyTorch run) failed; `error`: the
    informative line (at most 200 characters), `details` the whole text; `source`: the user's
    line that made a node failing in PyTorch; `runs_instead`: what Torch-TensorRT does after
    that failure; `fix`: the fix in words; `cached`: read from the build cache; `graph`: the
    dynamo graph ("g2") across graphs, "" for one graph; `exception`: the class name of what
    Torch-TensorRT raises there; `at`: where in the optimization profile the lowered graph
    failed in PyTorch, when not at the example's sizes ("the profile's min (x: (1,4))")."""

    subgraph: str
    ops: int
    stage: str
    profile: str = ""
    layers: int | None = None
    engine_bytes: int | None = None
    convert_s: float | None = None
    build_s: float | None = None
    node: str | None = None
    error: str | None = None
    details: str | None = None
    source: str = ""
    runs_instead: str | None = None
    fix: str | None = None
    cached: bool = False
    graph: str = ""
    exception: str | None = None
    at: str = ""

    @property
    def built(self) -> bool:
        return self.stage == "built"

    @property
    def name(self) -> str:
        """'g1/_run_on_acc_tensorrt_0' across graphs, the tag alone for one graph."""
        return f"{self.graph}/{self.subgraph}" if self.graph else self.subgraph


__all__ = ["BuildRow"]
