"""The frames of a Python stack trace as text: a node's recorded `stack_trace` (torch.fx), a
traceback dynamo logs, the call torch.export quotes in its message."""

from __future__ import annotations

import re
from typing import NamedTuple

_HEADER = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<function>\S+)')


class Frame(NamedTuple):
    """One frame: its file, line, function and the line's code ('' where the trace quotes none)."""

    file: str
    line: int
    function: str
    code: str


def frames(text: str | None) -> list[Frame]:
    """Every frame in `text`, outermost first (a trace's order), each with the code line under
    its 'File "...", line N, in f' line."""
    text = text or ""
    found = []
    for m in _HEADER.finditer(text):
        after = text[m.end():].split("\n", 2)
        code = after[1].strip() if len(after) > 1 else ""
        if _HEADER.match(code):  # no code quoted: the next line is the next frame
            code = ""
        found.append(Frame(m["file"], int(m["line"]), m["function"], code))
    return found


__all__ = ["Frame", "frames"]
