"""hv.explore(model, inputs, ir="torch_compile"): a graph picker, the picked graph's Explorer, and
every graph at the same settings; a setting change redraws only the shown graph and re-partitions
every graph in the background (the totals say they are pending until then); a setting follows
the user from graph to graph; the picture of every graph is drawn on request; no exception
reaches the kernel; closing one explorer leaves another's work going."""

from __future__ import annotations

import html
import os
import threading

import pytest

import hierviz as hv
import hierviz.drawing
from hierviz.partitioner import MultiGraphPartition
from hierviz.widget import Explorer
from hierviz.widget import graphs_explorer
from tests.dynamo_models import load, three_breaks

from . import worker_helpers as helpers
from .worker_waits import wait_on_worker


@pytest.fixture(scope="module")
def prints():
    model, x = load("prints")
    return model, x, hv.capture(model, x, ir="torch_compile")


@pytest.fixture(scope="module")
def breaks():
    model, x = three_breaks()
    return model, x, hv.capture(model, x, ir="torch_compile")


def test_every_graph_or_one_picked(prints) -> None:
    model, x, cap = prints
    gx = hv.explore(model, x, ir="torch_compile", debounce=0, min_block_size=2)
    assert isinstance(gx, hv.widget.GraphsExplorer)
    assert [v for _, v in gx.picker.options] == [0, 1]
    k = gx.picker.value
    assert gx.explorer.partition.stats == hv.partition(cap, min_block_size=2).graphs[k].stats
    assert "2 graphs, 1 breaks" in gx.every.value and gx.pending is None
    assert gx.picture.value == "" and "drawn on request" in gx.picture_note.value  # the large picture waits

    gx.draw_every.value = True
    assert gx.wait(60)
    assert gx.picture.value.count("<svg") == 1 and "The picture of every graph at " in gx.picture_note.value

    gx.explorer.controls["min_block_size"].value = 7  # a setting change: the picked graph, then every graph
    want = hv.partition(cap, min_block_size=7)
    assert gx.explorer.partition.stats == want.graphs[k].stats
    assert gx.partition.config.min_block_size == 7 and gx.partition.stats == want.stats
    assert f"{want.stats['subgraphs']} subgraphs" in gx.every.value and "pending" not in gx.every.value
    assert gx.wait(60) and gx.picture.value.count("<svg") == 1
    assert f"The picture of every graph at {html.escape(gx.explorer.config.label())}:" in gx.picture_note.value

    other = 1 - k
    gx.picker.value = other  # the setting follows to the other graph
    assert gx.explorer.config.min_block_size == 7
    assert gx.explorer.partition.stats == want.graphs[other].stats
    assert not gx.internal_errors and gx.error.value == ""
    gx.close()


def test_a_change_redraws_only_the_shown_graph_and_partitions_every_graph_in_the_background(breaks,
                                                                                           monkeypatch) -> None:
    model, x, cap = breaks
    drawn: list[object] = []  # the graph of every diagram drawn
    pictures: list[int] = []  # every picture of all graphs drawn
    passes: list[str] = []  # the thread of every pass over all graphs
    to_svg, render, every = hierviz.drawing.to_svg, MultiGraphPartition.render, graphs_explorer.partition_every
    monkeypatch.setattr(hierviz.drawing, "to_svg", lambda p, *a, **k: drawn.append(p.graph) or to_svg(p, *a, **k))
    monkeypatch.setattr(MultiGraphPartition, "render",
                        lambda self, *a, **k: pictures.append(len(self.graphs)) or render(self, *a, **k))
    monkeypatch.setattr(graphs_explorer, "partition_every",
                        lambda *a: passes.append(threading.current_thread().name) or every(*a))

    gx = hv.explore(model, x, ir="torch_compile", debounce=0)
    assert len(gx.multi.graphs) == 4
    k = gx.picker.value
    shown = gx.multi.capture.graphs[k].graph
    drawn.clear()
    gx.explorer.controls["min_block_size"].value = 1
    assert gx.wait(60)
    assert drawn == [shown], "only the shown graph is drawn"
    assert pictures == [], "the picture of every graph is not drawn unless asked for"
    assert passes == ["hierviz-every-graph"], "every graph is re-partitioned once, on the background thread"
    assert gx.partition.stats == hv.partition(cap, min_block_size=1).stats
    assert len(gx.explorers) == 1, "no other graph's Explorer is opened"
    assert not gx.internal_errors
    gx.close()


def test_the_totals_say_they_are_pending_until_every_graph_is_re_partitioned(breaks, monkeypatch) -> None:
    model, x, cap = breaks
    release = threading.Event()
    every = graphs_explorer.partition_every

    def slow(capture, config, wanted):  # the background pass waits until the test lets it go
        release.wait(60)
        return every(capture, config, wanted)

    gx = hv.explore(model, x, ir="torch_compile", debounce=0, min_block_size=3)
    monkeypatch.setattr(graphs_explorer, "partition_every", slow)
    before = gx.every.value
    old = hv.partition(cap, min_block_size=3).stats
    assert f"{old['subgraphs']} subgraphs" in before and "pending" not in before

    gx.explorer.controls["min_block_size"].value = 1
    assert gx.explorer.config.min_block_size == 1  # the shown graph is at the new setting at once
    assert gx.pending is not None and gx.pending.min_block_size == 1
    shown = gx.every.value
    assert "Totals pending: re-partitioning every graph at " in shown
    assert "At the previous settings (" in shown and f"{old['subgraphs']} subgraphs" in shown
    assert not gx.wait(0.2)  # still running

    release.set()
    assert gx.wait(60) and gx.pending is None
    new = hv.partition(cap, min_block_size=1).stats
    assert f"{new['subgraphs']} subgraphs" in gx.every.value and "pending" not in gx.every.value
    assert gx.partition.stats == new and not gx.internal_errors
    gx.close()


def test_the_picture_of_every_graph_says_when_it_is_of_the_previous_settings(prints, monkeypatch) -> None:
    model, x, _ = prints
    gx = hv.explore(model, x, ir="torch_compile", debounce=0, min_block_size=2)
    gx.draw_every.value = True
    assert gx.wait(60) and gx.picture.value.count("<svg") == 1
    old = gx.picture.value
    monkeypatch.setattr(graphs_explorer, "PICTURE_QUIET_S", 3600.0)  # the user keeps moving the slider
    gx.explorer.controls["min_block_size"].value = 7
    assert gx.partition.config.min_block_size == 7 and "pending" not in gx.every.value  # the totals are current
    assert not gx.wait(0.3) and gx.picture.value == old  # the picture is not redrawn yet, and says so:
    assert (f"Redrawing every graph at {html.escape(gx.explorer.config.label())} ...</i> The picture below is of "
            f"the previous settings (") in gx.picture_note.value and "mbs=2" in gx.picture_note.value
    monkeypatch.setattr(graphs_explorer, "PICTURE_QUIET_S", 0.0)  # the user stops
    assert gx.wait(60) and gx.picture.value != old
    assert f"The picture of every graph at {html.escape(gx.explorer.config.label())}:" in gx.picture_note.value
    gx.draw_every.value = False  # off: the picture goes, and is not drawn again
    assert gx.picture.value == "" and "drawn on request" in gx.picture_note.value
    assert not gx.internal_errors
    gx.close()


def test_switching_graphs_shows_the_new_settings_partition(breaks) -> None:
    model, x, cap = breaks
    # a long debounce: nothing runs by itself, so the switch must apply the change still waiting
    gx = hv.explore(model, x, ir="torch_compile", debounce=30, min_block_size=3)
    first = gx.picker.value
    others = [k for k in range(4) if k != first and cap.graphs[k].ops]
    seen, fresh = others[0], others[1]
    gx.picker.value = seen  # opened at min_block_size 3, then left
    gx.picker.value = first
    gx.explorer.controls["min_block_size"].value = 1  # still waiting for its debounce
    want = hv.partition(cap, min_block_size=1)
    for k in (seen, fresh):
        gx.picker.value = k
        ex = gx.explorer
        assert ex.controls["min_block_size"].value == 1
        assert ex.controller.shown is not None and ex.controller.shown.stats == want.graphs[k].stats
        assert ex.panels["stats"].value == ex.controller.stats(False, False)  # the counts shown are of it
        assert ex.svg is not None and ex.svg in ex.panels["diagram"].value  # so is the diagram
    assert gx.partition.stats == want.stats
    assert not gx.internal_errors and gx.error.value == ""
    gx.close()


def test_a_mistake_stays_in_the_widget_and_a_multi_graph_partition_opens_too(prints) -> None:
    _, _, cap = prints
    part = hv.partition(cap, min_block_size=3)
    gx = hv.explore(part, debounce=0)
    assert gx.partition.config.min_block_size == 3 and gx.explorer.config.min_block_size == 3
    gx.explorer.controls["priority"].value = ()  # no backend at all: refused, shown, never raised
    assert gx.wait(60) and gx.partition.config.min_block_size == 3
    assert not gx.internal_errors
    gx.close()
    with pytest.raises(hv.ConfigError, match="ir="):
        hv.explore(cap, ir="torchcompile")


def test_closing_it_leaves_another_explorers_search_going(breaks, tmp_path, monkeypatch) -> None:
    model, x, _ = breaks
    from hierviz.widget.worker import Worker

    mark = tmp_path / "compiling"
    monkeypatch.setenv(helpers.MARK, str(mark))  # the worker started below inherits it
    running = Worker.shared_if_made()
    if running is not None:  # started by an earlier test, without the mark: the search starts a fresh one
        running.close()
    small, inputs = helpers.model_and_inputs()
    other = Explorer(small, inputs, helpers.SAME, debounce=0)
    try:
        search = other.find_fastest(budget=2, space={"min_block_size": [1, 2]}, measure=helpers.WAITING)
        wait_on_worker(mark.exists, f"{mark.name} never appeared")  # the other explorer's search compiles in the worker
        pid = other.controller.long_work.pid
        sent = list(other.controller.long_work.worker._jobs.values())  # the search's compile, unanswered
        gx = hv.explore(model, x, ir="torch_compile", debounce=0)
        for k in range(len(gx.multi.graphs)):  # every graph's Explorer opened
            gx.picker.value = k
        gx.close()
        # a job that close cancels, or fails by ending the worker, is answered before close returns
        assert sent and not any(job.done.is_set() for job in sent)
        assert search.is_alive() and "failed" not in other.panels["fastest"].value
        assert other.controller.long_work.pid == pid
        os.kill(pid, 0)  # the worker still runs
    finally:
        other.close()
        # the search's compile holds for minutes and no compile can be stopped midway: the process's
        # worker, which an explorer of an earlier test may still hold, ends here, so no later job
        # waits behind it (a fresh one starts with the next job)
        shared = Worker.shared_if_made()
        if shared is not None:
            shared.close()
