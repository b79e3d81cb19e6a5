"""Issue 58 item 5: notes that are not warnings are not coloured as warnings."""

from __future__ import annotations

from hierviz.widget import panels


def test_a_compile_today_note_is_not_coloured_as_a_warning(small) -> None:
    """Where the line came from (the disk cache) is a note: grey like the line's other notes, not
    the orange the explorer uses for what needs attention."""
    import hierviz as hv
    from hierviz.partitioner.upstream.todays_compile import TodaysCompile

    _, _, gm = small
    fast = hv.partition(gm)
    today = TodaysCompile(fast, "", 0.1, dict(fast.stats), ("capture: from the disk cache (12 ms)",), "fast")
    line = panels.compile_today_html(today, fast)
    note = line[line.index("(capture: from the disk cache"):]
    span = line[:line.index("(capture: from the disk cache")].rsplit("<span", 1)[1]
    assert "capture: from the disk cache" in note
    assert "color:#777" in span and "#a60" not in line
