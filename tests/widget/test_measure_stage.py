"""Issue 58 item 4: while a measurement runs, the stats line's latency row and the History tab's
row of that setting say how far it is ("measuring ... (stage)") and follow each new stage, not
only the one they had when they were last drawn for another reason; a failed one says "failed:
<its error>" in both."""

from __future__ import annotations

import threading
import time

from hierviz.widget import Explorer

WAIT_S = 30  # a deadline for the background thread, never a timing that decides the test


def latency_row(ex: Explorer) -> str:
    stats = ex.panels["stats"].value
    return stats[stats.index(">latency<"):]


def history_latency(ex: Explorer) -> str:
    """The History tab's newest row ('' while the table has no latency column)."""
    table = ex.panels["history"].value
    if ">latency<" not in table:
        return ""
    return table[table.index("<tbody"):].split("</tr>")[0]


def shown_within(ex: Explorer, text: str, where=latency_row) -> bool:
    deadline = time.monotonic() + WAIT_S
    while text not in where(ex):
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
        assert shown_within(ex, "measuring ... (compiling subgraph 1 of 1)", history_latency), history_latency(ex)
        gates[0].set()
        assert shown_within(ex, "measuring ... (timing the split model)"), latency_row(ex)
        assert shown_within(ex, "measuring ... (timing the split model)", history_latency), history_latency(ex)
    finally:
        for gate in gates:
            gate.set()
        ex.measure_thread.join(60)
    assert f"{len(ex.partition.subgraphs):g} ms</b> median" in latency_row(ex)
    assert "measuring" not in latency_row(ex) and "measuring" not in ex.panels["history"].value
    assert ex.history["median_ms"].iloc[-1] == len(ex.partition.subgraphs)


def test_a_failed_measurement_says_so_in_the_history_until_another_setting_is_shown(small, fake_measure) -> None:
    fake_measure.fail = "TensorRT needs an NVIDIA GPU"
    model, inputs, _ = small
    ex = Explorer(model, inputs, measure=True, debounce=0)
    ex.measure_thread.join(60)
    assert "failed: TensorRT needs an NVIDIA GPU" in history_latency(ex)
    ex.controls["measure"].value = False
    ex.controls["min_block_size"].value = 1  # another setting: the old failure goes from every panel
    assert "NVIDIA GPU" not in ex.panels["history"].value

