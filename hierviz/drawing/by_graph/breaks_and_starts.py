"""The graph-by-graph picture's words for breaks and starts: source files as the picture shows them
(`short_path`, `where`), why each graph starts (`graph_start`, `start_lines`, `graph_start_kind`), the
breaks after each graph and repeated ones counted once (`breaks_after`, `repeats`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.capturing.by_graph.graph_break import GraphBreak
    from hierviz.partitioner import MultiGraphPartition


EAGER = "the Python from here to the next graph runs eagerly in PyTorch (not compiled)"


_ABS_PATH = re.compile(r"(?:[A-Za-z]:)?[/\\][^\s():,]+\.py\b")


def short_path(file: str) -> str:
    """A source file as the picture shows it: from the package folder for installed code
    ('torchvision/models/detection/transform.py'), else its folder and name ('tests/dynamo_models.py');
    the tooltips keep the full path."""
    parts = file.replace("\\", "/").split("/")
    if "site-packages" in parts:
        return "/".join(parts[parts.index("site-packages") + 1:])
    return "/".join(parts[-2:])


def where(file: str, line: int) -> str:
    """'tests/dynamo_models.py:25' ('' when the file is unknown)."""
    return f"{short_path(file)}:{line}" if file else ""


def short_path_text(text: str) -> str:
    """`text` with every absolute source path in it shortened (short_path)."""
    return _ABS_PATH.sub(lambda m: short_path(m.group(0)), text)


_START_PARTS = re.compile(r"(?P<what>.*?)(?P<called>, called from .*?)?(?P<after> after (?:the|a) graph break.*)?",
                          re.S)


def start_lines(starts: str, with_break: bool = True) -> list[str]:
    """A graph's `starts` as the picture shows it: source paths shortened (short_path), one
    line for what starts ('dynamo resumes forward (file:line)'), one for where it is called
    from, one for the break it follows (left out without `with_break`: a break's own marker)."""
    found = _START_PARTS.fullmatch(short_path_text(starts.strip()))
    assert found is not None, "every text matches: each part is optional"
    parts = [found["what"], found["called"], found["after"] if with_break else None]
    return [part.strip(" ,") for part in parts if part and part.strip(" ,")]


def graph_start_kind(mp: "MultiGraphPartition", k: int) -> str:
    """How graph k starts as its capture recorded it (DynamoGraph.start_kind: 'resumed',
    'new-frame'), else 'other' (the css class of the start marker)."""
    return str(getattr(mp.capture.graphs[k], "start_kind", "") or "other")


def graph_start(mp: "MultiGraphPartition", k: int) -> str:
    """Why graph k starts, as its capture says ('' for the first, or a file saved before it was kept)."""
    return str(getattr(mp.capture.graphs[k], "starts", "") or "") if k > 0 else ""


def breaks_after(mp: "MultiGraphPartition") -> dict[int, list[tuple[int, "GraphBreak"]]]:
    """The graph breaks by the graph they follow (-1: before the first), with their index."""
    after: dict[int, list[tuple[int, "GraphBreak"]]] = {}
    for j, b in enumerate(mp.breaks):
        after.setdefault(b.after_graph, []).append((j, b))
    return after


def repeats(breaks: list[tuple[int, "GraphBreak"]]) -> list[tuple[int, "GraphBreak", int]]:
    """Consecutive breaks at the same line for the same reason (a loop, a list comprehension)
    as one: (the first's index, the first, how many)."""
    out: list[tuple[int, "GraphBreak", int]] = []
    for j, b in breaks:
        if out and _same(out[-1][1], b) and out[-1][0] + out[-1][2] == j:
            out[-1] = (out[-1][0], out[-1][1], out[-1][2] + 1)
        else:
            out.append((j, b, 1))
    return out


def _same(a: "GraphBreak", b: "GraphBreak") -> bool:
    return (a.file, a.line, a.short, a.ended_graph) == (b.file, b.line, b.short, b.ended_graph)
