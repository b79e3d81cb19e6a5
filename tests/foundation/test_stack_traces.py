"""Frames read from a stack trace's text: file, line, function and the code line under each."""

from __future__ import annotations

from hierviz.foundation.stack_traces import Frame, frames

TRACE = '''Traceback (most recent call last):
  File "/home/me/model.py", line 12, in forward
    y = self.block(x)
  File "<frozen importlib._bootstrap>", line 3, in load
  File "/home/me/block.py", line 40, in forward
    return torch.relu(x)
'''


def test_every_frame_outermost_first_with_its_code() -> None:
    assert frames(TRACE) == [Frame("/home/me/model.py", 12, "forward", "y = self.block(x)"),
                             Frame("<frozen importlib._bootstrap>", 3, "load", ""),
                             Frame("/home/me/block.py", 40, "forward", "return torch.relu(x)")]


def test_no_trace_has_no_frames() -> None:
    assert frames(None) == frames("") == frames("no frames here") == []
