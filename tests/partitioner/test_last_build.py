"""A partition is not changed by a build: what a build adds to its blockers and report is passed as `builds=`,
or is its own last `build()`, kept by hierviz.partitioner.last_build on the partition."""

from __future__ import annotations

import gc
import weakref
from dataclasses import dataclass

import torch

import hierviz as hv
from hierviz.partitioner.last_build import last_build, remember


class Small(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1


@dataclass(frozen=True)
class Row:
    """One failed engine as the blockers table reads it (by attribute or by key)."""

    subgraph: str
    stage: str = "build"
    error: str = "the builder gave up"
    runs_instead: str = "the whole graph runs in PyTorch"
    fix: str = ""

    def __getitem__(self, key: str) -> str:
        return getattr(self, key)


class Failed:
    """What part.build() returns, as far as the report and the blockers table read it: one engine failed."""

    fix = None

    def __init__(self, tag: str) -> None:
        self.failed = (Row(tag),)

    def lines(self) -> list[str]:
        return [f"0/1 engines built; {self.failed[0].subgraph} failed at build"]


def made() -> hv.Partition:
    return hv.partition(Small(), (torch.randn(2, 3),), min_block_size=1)


def test_builds_given_to_blockers_and_report_leave_the_partition_as_it_was():
    part = made()
    builds = Failed(part.subgraphs[0].tag)
    before, text = part.blockers(), part.report()
    first = part.blockers(builds=builds).iloc[0]
    assert (first.op, first.kind, first.verdict) == (part.subgraphs[0].tag, "engine fails to build", "required")
    assert first.note == "fails at build: the builder gave up; then the whole graph runs in PyTorch"
    assert "Built on this machine:\n  0/1 engines built; " in part.report(builds=builds)
    assert part.blockers().equals(before) and part.report() == text  # nothing was kept
    assert last_build(part) is None


def test_a_partitions_last_build_is_its_own():
    part, other = made(), made()
    builds = Failed(part.subgraphs[0].tag)
    assert remember(part, builds) is builds and last_build(part) is builds
    assert part.blockers().iloc[0].kind == "engine fails to build"
    assert "Built on this machine" in part.report()
    assert last_build(other) is None and "Built on this machine" not in other.report()  # same graph, not built
    assert "engine fails to build" not in set(other.blockers().kind)


def test_the_last_build_goes_with_its_partition():
    part = made()
    builds = Failed(part.subgraphs[0].tag)
    remember(part, builds)
    held = weakref.ref(builds)
    del part, builds
    gc.collect()
    assert held() is None


class Built(Failed):
    """As part.build()'s hv.Builds: it refers back to the partition it built."""

    def __init__(self, part: hv.Partition) -> None:
        super().__init__(part.subgraphs[0].tag)
        self.partition = part


def test_a_last_build_that_refers_to_its_partition_goes_with_it():
    part = made()
    builds = Built(part)
    remember(part, builds)
    assert last_build(part) is builds
    held, held_builds = weakref.ref(part), weakref.ref(builds)
    del part, builds
    gc.collect()
    assert held() is None and held_builds() is None


def test_a_copy_of_a_built_partition_was_not_built():
    import copy

    part = made()
    remember(part, Built(part))
    assert last_build(copy.copy(part)) is None
