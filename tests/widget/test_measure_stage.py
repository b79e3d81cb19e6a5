"""Issue 58 item 4: while a measurement runs, the stats line's latency row says how far it is
("measuring ... (stage)") and follows each new stage, not only the one it had when the line was
last drawn for another reason."""

from __future__ import annotations

import threading
import time

from hierviz.widget import Explorer

WAIT_S = 30  # a deadline for the background thread, never a timing that decides the test


def latency_row(ex: Explorer) -> str:
    stats = ex.panels["stats"].value
    return stats[stats.index(">latency<"):]


def shown_within(ex: Explorer, text: str) -> bool:
    deadline = time.monotonic() + WAIT_S
    while text not in latency_row(ex):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_the_latency_row_follows_the_measurement_s_stages(small, fake_measure, monkeypatch) -> None:
    import hierviz.latency as package

    gates = [threading.Event(), threading.Event()]

    def staged(partition, example_inputs, *, progress=None, **kwargs):
        progress("compiling subgraph 1 of 1", 1, 3)
        assert gates[0].wait(60), "the test never opened the first gate"
        progress("timing the split model", 2, 3)
        assert gates[1].wait(60), "the test never opened the second gate"
        return fake_measure(partition, example_inputs, **kwargs)

    monkeypatch.setattr(package, "measure", staged)
    model, inputs, _ = small
    ex = Explorer(model, inputs, measure=True, debounce=0)
    try:
        assert shown_within(ex, "measuring ... (compiling subgraph 1 of 1)"), latency_row(ex)
        gates[0].set()
        assert shown_within(ex, "measuring ... (timing the split model)"), latency_row(ex)
    finally:
        for gate in gates:
            gate.set()
        ex.measure_thread.join(60)
    assert f"{len(ex.partition.subgraphs):g} ms</b> median" in latency_row(ex)
    assert "measuring" not in latency_row(ex)

