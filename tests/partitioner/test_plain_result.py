"""A Partition is a plain result: a build, a report or a blockers table leaves it as it was, and what a
build adds is passed (`builds=`); its conveniences import the layer that does the work when called."""

from __future__ import annotations

import copy
import gc
import weakref
from dataclasses import dataclass

import pytest
import torch

import hierviz as hv


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
    shown = part.report(builds=builds)
    assert "Built on this machine:\n  0/1 engines built; " in shown
    assert "Required (an engine that does not build on this machine" in shown  # the failure leads What to change
    assert part.blockers().equals(before) and part.report() == text  # nothing was kept


def test_the_report_is_the_same_whether_or_not_the_partition_was_built(monkeypatch):
    """part.build() returns the Builds and keeps nothing: report() and blockers() without
    `builds=` say what they said before it ran."""
    import hierviz.building.build_partition as build_partition

    part = made()
    text, table, fields = part.report(), part.blockers(), dict(vars(part))
    monkeypatch.setattr(build_partition, "build", lambda p, **_: Failed(p.subgraphs[0].tag))
    builds = part.build()
    assert isinstance(builds, Failed)  # Partition.build() called the building layer's build
    assert part.report() == text and part.blockers().equals(table)
    assert "Built on this machine" not in part.report()
    assert vars(part).keys() == fields.keys() and all(vars(part)[k] is v for k, v in fields.items())
    assert "Built on this machine" in part.report(builds=builds)


@pytest.mark.slow  # a real TensorRT build: seconds of CPU
def test_a_real_build_leaves_the_report_as_it_was():
    part = made()
    text = part.report()
    builds = part.build(fix=False)
    assert builds.ok and builds.partition is part
    assert part.report() == text
    assert part.report(builds=builds) != text and "1/1 engines built" in part.report(builds=builds)


def test_a_partition_and_its_builds_go_together():
    part = made()
    builds = Failed(part.subgraphs[0].tag)
    builds.partition = part  # as hv.Builds refers back to its partition
    held, held_builds = weakref.ref(part), weakref.ref(builds)
    del part, builds
    gc.collect()
    assert held() is None and held_builds() is None


def test_the_default_blockers_table_is_kept_beside_the_partition_not_in_it():
    """blockers() with its defaults is made once (a copy returned each time); the partition's fields
    are those it had, and a copy of the partition has no table until it makes its own."""
    part = made()
    part.blockers(top=0)  # not the default table: made, not kept; the partition's lazy facts are computed
    fields = set(vars(part))
    assert part.blockers(compute=False) is None
    table = part.blockers()
    assert set(vars(part)) == fields
    assert part.blockers(compute=False).equals(table) and part.blockers(compute=False) is not table
    assert copy.copy(part).blockers(compute=False) is None


def test_kept_blockers_are_shown_and_a_known_table_is_not_replaced():
    part = made()
    table = part.blockers()
    other = table.iloc[:0]
    part.keep_blockers(other)
    assert part.blockers().equals(table)
    fresh = made()
    fresh.keep_blockers(table)
    assert fresh.blockers(compute=False).equals(table)


def test_conveniences_load_their_layer_when_first_called(run_python):
    """Partitioning loads neither drawing nor building nor latency; render() loads drawing, nothing
    is registered anywhere for that."""
    proc = run_python(
        "import sys, torch\nimport hierviz.partitioner as P\n"
        "class M(torch.nn.Module):\n    def forward(self, x):\n        return torch.relu(x) + 1\n"
        "p = P.partition(M(), (torch.randn(2, 3),), min_block_size=1)\n"
        "before = sorted(m for m in ('hierviz.drawing.views', 'hierviz.building.build_partition', "
        "'hierviz.latency.deploy') if m in sys.modules)\n"
        "p.render('collapsed')\n"
        "print(before, 'hierviz.drawing.views' in sys.modules)")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "[] True"


def test_render_checks_its_keywords_against_the_drawing_function():
    with pytest.raises(hv.ConfigError, match="highlite"):
        made().render(highlite="blockers")


@pytest.mark.parametrize("wrong", ["nope", 3, {"rows": []}])
def test_builds_of_the_wrong_kind_say_what_to_pass(wrong):
    part = made()
    for call in (lambda: part.blockers(builds=wrong), lambda: part.report(builds=wrong)):
        with pytest.raises(hv.ConfigError, match=r"builds= takes what part.build\(\) returned \(hv.Builds\)"):
            call()
