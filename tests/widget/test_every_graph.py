"""The graph-by-graph explorer's background work (hierviz/widget/every_graph.py): only the newest
request is answered, a superseded run's answer is never shown, an error is handed over (never
raised in the thread), and a closed runner answers nothing more."""

from __future__ import annotations

import threading

import pytest

import hierviz as hv
from hierviz.widget.every_graph import Latest, Superseded, partition_every
from tests.dynamo_models import three_breaks


def test_only_the_newest_request_is_answered() -> None:
    started, release = threading.Event(), threading.Event()
    shown: list[tuple[int, int]] = []
    errors: list[tuple[int, Exception]] = []

    def work(key: int, wanted) -> int:
        if key == 1:  # the first run waits, and is superseded meanwhile
            started.set()
            release.wait(30)
            if not wanted():
                raise Superseded
        if key == 3:
            raise ValueError("three is refused")
        return key * 10

    latest: Latest[int] = Latest("test-latest", work, lambda k, a: shown.append((k, a)),
                                 lambda k, e: errors.append((k, e)))
    latest.request(1)
    assert started.wait(30) and latest.pending == 1
    latest.request(2)  # while 1 runs
    release.set()
    assert latest.wait(30)
    assert shown == [(2, 20)] and latest.answered == 2 and latest.pending is None and latest.runs == 1
    latest.request(2)  # answered already: nothing runs
    assert latest.wait(30) and latest.runs == 1

    latest.request(3)
    assert latest.wait(30) and [(k, str(e)) for k, e in errors] == [(3, "three is refused")]
    assert shown == [(2, 20)] and latest.answered == 3

    latest.close()
    latest.request(4)
    assert latest.wait(30) and shown == [(2, 20)] and latest.pending is None


def test_partition_every_is_hv_partition_and_stops_when_not_wanted() -> None:
    model, x = three_breaks()
    cap = hv.capture(model, x, ir="torch_compile")
    config = hv.Config(min_block_size=1)
    assert partition_every(cap, config, lambda: True).stats == hv.partition(cap, config=config).stats
    asked: list[int] = []

    def wanted() -> bool:
        asked.append(1)
        return len(asked) < 2  # the second graph is no longer wanted

    with pytest.raises(Superseded):  # the pass stops before the second graph
        partition_every(cap, config, wanted)
    assert len(asked) == 2
