"""`hv.Repro`: the smallest part of a failed TensorRT subgraph that fails the same way, and a
standalone repro of it to file upstream (`Builds.repro()`, `repro_of`).

The part is found by `reduction.smallest_failing` (bisection, then delta debugging), every
trial built through a SubgraphBuilder, so trials are kept in the build cache and a second
search builds nothing. `save(folder)` writes repro.pt2, repro.py and README.md
(repro_files) and runs repro.py in a fresh process.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from hierviz import trt
from hierviz.building import repro_files
from hierviz.building.build_row import BuildRow
from hierviz.building.reduction import call_nodes, signature, smallest_failing
from hierviz.building.subgraph_builds import SubgraphBuilder
from hierviz.errors import ConfigError

FAILED = ("convert", "build")
_CHECK = re.compile(r"CHECK\((?:[^()]|\([^()]*\))*\)")


def short_error(error: str) -> str:
    """The error in a few words for a one-line summary: a Myelin check's condition, or the line's start."""
    check = _CHECK.search(error)
    if check:
        return ("Myelin " if "Myelin" in error else "") + check.group(0)
    return error if len(error) <= 60 else error[:57] + "..."


@dataclass(frozen=True)
class Repro:
    """The smallest part of subgraph `subgraph` found to fail as it does.

    `nodes`: their names, in order (the split module's node names, which are the user's graph's);
    `graph`: the part as a GraphModule (inputs from outside are placeholders carrying their
    `meta['val']`); `stage`, `exception`, `error`: the failure; `of`: the subgraph's call nodes;
    `builds`: parts built in the search, the ones the build cache answered included (`cached` of
    them); `seconds` it took; `builder`: the TensorRT that built them; `settings`: what repro.py
    passes to `torch_tensorrt.dynamo.compile`; `verified`: None until `save` ran repro.py, then
    whether it reproduced the failure in a fresh process."""

    subgraph: str
    nodes: tuple[str, ...]
    graph: torch.fx.GraphModule = field(repr=False, compare=False)
    stage: str
    exception: str
    error: str
    of: int
    builds: int
    cached: int = 0
    seconds: float = 0.0
    builder: str = ""
    settings: dict = field(default_factory=dict, compare=False)
    verified: bool | None = None

    @property
    def signature(self) -> tuple[str, str, str]:
        """(stage, exception class, error line with node names, numbers and addresses masked): docs/repro.md."""
        return signature(self.stage, self.exception, self.error, [n.name for n in self.graph.graph.nodes])

    def headline(self) -> str:
        """'12 of 118 nodes of _run_on_acc_tensorrt_0 fail at build (Myelin CHECK(...)), found in 12 builds'."""
        text = (f"{len(self.nodes)} of {self.of} nodes of {self.subgraph} fail at {self.stage} "
                f"({short_error(self.error)}), found in {self.builds} builds")
        if self.cached:
            text += f" ({self.cached} from the build cache)"
        if self.verified is True:
            text += "; verified: repro.py fails the same way in a fresh process"
        elif self.verified is False:
            text += "; not verified: repro.py did not fail the same way in a fresh process (see its repro.log)"
        return text

    def __repr__(self) -> str:
        return f"<hv.Repro: {self.headline()}>"

    def issue_text(self) -> str:
        """A Markdown issue body: the error, the versions and builder, the nodes with the user's
        source lines, and how to run the repro."""
        v = repro_files.versions()
        kwargs = ", ".join(f"{k}={value!r}" for k, value in self.settings.items())
        lines = [f"## {self.stage.capitalize()} failure: {short_error(self.error)}", "",
                 f"Torch-TensorRT fails to {'convert' if self.stage == 'convert' else 'build'} this graph of "
                 f"{len(self.nodes)} nodes (the smallest failing part of {self.of} nodes, found by hierviz) with "
                 f"`{self.exception}`:", "", "```", self.error, "```", "",
                 "### Versions", "", f"- torch {v['torch']}", f"- torch_tensorrt ({v['torch_tensorrt']})",
                 f"- TensorRT {v['TensorRT']}", f"- builder: {self.builder}", "",
                 "### The nodes and the lines that made them", "", *repro_files.node_lines(self.graph), "",
                 "### To run it", "",
                 "`repro.pt2` is the part as an ExportedProgram; `repro.py` (torch and torch_tensorrt only) loads it "
                 "and calls", "", "```python",
                 f"torch_tensorrt.dynamo.compile(ep, inputs, {kwargs})",
                 "```", "",
                 "`python repro.py` exits 1 when the failure reproduces, 0 when it builds (without a GPU: when "
                 "the engine was built and only loading it failed), 2 when it fails another way.", "",
                 "```python", str(self.graph.code).strip(), "```", ""]
        return "\n".join(lines)

    def save(self, folder: str | Path, weights: str = "real") -> "Repro":
        """Write repro.pt2 (the part exported, with its weights, or random ones of the same shapes
        and dtypes with `weights="random"`), repro.py and README.md into `folder`, run repro.py in
        a fresh process (its output in repro.log) and return this Repro with `verified` set; this
        one is left as it was."""
        out = Path(folder)
        if out.exists() and not out.is_dir():
            raise ConfigError(f"Repro.save({str(folder)!r}): that is a file; give a folder (it is made if missing).")
        out.mkdir(parents=True, exist_ok=True)
        torch.export.save(repro_files.exported(self.graph, weights), str(out / "repro.pt2"))
        (out / "repro.py").write_text(repro_files.script(self.headline(), self.signature, self.graph, self.settings))
        (out / "README.md").write_text(self.issue_text())
        code, _ = repro_files.run_script(out)
        return dataclasses.replace(self, verified=code == 1)


def _failed_row(builds: Any, subgraph: str | None) -> BuildRow:
    """The row of the failed subgraph to reduce: `subgraph` ('_run_on_acc_tensorrt_0', or
    'g1/_run_on_acc_tensorrt_0' across graphs), else the first that failed to convert or build."""
    failed = [r for r in builds.rows if r.stage in FAILED]
    named = [r.name for r in failed]
    if subgraph is None:
        if not failed:
            raise ConfigError("Builds.repro(): no engine failed to convert or build, so there is nothing to "
                              f"reproduce ({builds.headline()}).")
        return failed[0]
    for name, row in zip(named, failed):
        if subgraph in (name, row.subgraph):
            return row
    raise ConfigError(f"Builds.repro({subgraph!r}): that subgraph did not fail to convert or build; the ones that "
                      f"did: {', '.join(named) or 'none'}.")


def _compile_settings(part: Any, builder: SubgraphBuilder) -> dict:
    """What repro.py passes to torch_tensorrt.dynamo.compile: every op in a TensorRT engine
    (min_block_size=1), the builder's own error raised, and the settings the part was built with."""
    settings: dict[str, Any] = {"min_block_size": 1, "pass_through_build_failures": True}
    forced = getattr(getattr(part, "config", None), "torch_executed_ops", None)
    if forced:
        settings["torch_executed_ops"] = sorted(forced)
    settings.update(builder.trt_settings or {})
    if builder.tf32:
        settings["disable_tf32"] = False
    return settings


def repro_of(builds: Any, part: Any, subgraph: str | None = None, builder: SubgraphBuilder | None = None) -> Repro:
    """The smallest failing part of a failed subgraph of `part` (`builds` = part.build()):
    `subgraph` names it (default: the first that failed to convert or build); `builder` builds
    the trials (default: one with default settings; give the one `builds` was made with when
    it had trt_settings or tf32)."""
    row = _failed_row(builds, subgraph)
    graph_part = part.graphs[int(row.graph[1:])] if builds.by_graph else part
    gm = getattr(graph_part.module, row.subgraph)
    builder = builder if builder is not None else SubgraphBuilder()
    made, _ = builder.build(gm, label=row.subgraph)
    if made.stage not in FAILED:
        raise ConfigError(f"Builds.repro(): {row.subgraph} builds with this builder's settings but failed in "
                          f"these Builds: pass builder= with the settings the Builds were made with.")
    found = smallest_failing(gm, lambda g: builder.build(g, label=row.subgraph))
    made, _ = builder.build(found.graph)  # the part's own error (same signature, its own sizes); already built
    return Repro(row.subgraph, found.nodes, found.graph, made.stage, made.exception or "", made.error or "",
                 len(call_nodes(gm)), found.builds, found.cached, round(found.seconds, 3),
                 trt.builder_name() or "", _compile_settings(graph_part, builder))


__all__ = ["Repro", "repro_of", "short_error"]
