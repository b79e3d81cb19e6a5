"""Writing a partition to files: .svg .png .pdf .dot .json .html, by suffix or `format`.

`.dot` and `.json` need no graphviz install; the image formats and the HTML report's
diagram run `dot` (graphviz_run.py). The JSON reads the partition's public record only.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hierviz.drawing import palette
from hierviz.drawing.graphviz_run import layout
from hierviz.drawing.report_page import report_html
from hierviz.drawing.views import render
from hierviz.errors import RenderError
from hierviz.partitioner.saved.saved_partition import document

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner import Partition

FORMATS = (".svg", ".png", ".pdf", ".dot", ".gv", ".json", ".html")
IMAGE_FORMATS = {".svg": "svg", ".png": "png", ".pdf": "pdf"}


def save(p: "Partition", path: str | Path, *, view: str = "auto", timeout: float | None = None,
         format: str | None = None, **kwargs: Any) -> Path:
    """Write the partition to `path`, the format chosen by its suffix (or `format`):
    .svg .png .pdf (diagram), .dot/.gv (DOT text), .json (nodes, subgraphs, config),
    .html (standalone report: diagram, config, tables, text report);
    format="model_explorer": a graph JSON for Google's Model Explorer (see drawing.model_explorer)."""
    path, suffix = target(path, format)
    if suffix == "model_explorer":
        from hierviz.drawing import model_explorer

        return model_explorer.save(p, path, measurement=kwargs.get("measurement"), against=kwargs.get("against"),
                                   numerics=kwargs.get("numerics"))
    data: str | bytes
    if suffix in (".dot", ".gv"):
        data = render(p, view=view, **kwargs).source
    elif suffix == ".json":
        doc = to_json(p)
        data = json_text(doc, len(doc["nodes"]))
    elif suffix == ".html":
        data = report_html(p, view=view, timeout=timeout, **kwargs)
    else:
        data = layout(render(p, view=view, **kwargs), IMAGE_FORMATS[suffix], timeout=timeout)
    return write(path, data)


def target(path: Any, format: str | None) -> tuple[Path, str]:
    """(the path, the format to write: a suffix of FORMATS or 'model_explorer'), from the
    path's suffix or `format`; RenderError for anything else."""
    if not isinstance(path, (str, Path)):
        raise RenderError(f"save takes a file path (str or Path) such as 'part.svg', not {type(path).__name__}.")
    path = Path(path)
    if format == "model_explorer":
        return path, format
    suffix = path.suffix.lower()
    if format is not None:
        suffix = "." + str(format).lower().lstrip(".")
        if suffix not in FORMATS:
            raise RenderError(f"unknown format {format!r}; formats are model_explorer and "
                              f"{' '.join(f.lstrip('.') for f in FORMATS)}.")
    if suffix not in FORMATS:
        raise RenderError(f"cannot save {path.name!r}: unknown suffix {path.suffix!r}; use one of "
                          f"{' '.join(FORMATS)}.")
    return path, suffix


def json_text(doc: dict, nodes: int) -> str:
    """A saved document as JSON text: indented when a person might read it (at most 5,000 nodes)."""
    small = nodes <= 5000
    return json.dumps(doc, indent=1 if small else None, separators=None if small else (",", ":"))


def write(path: Path, data: str | bytes) -> Path:
    """`data` written to `path` (its folder made); RenderError saying why it could not be."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, bytes):
            path.write_bytes(data)
        else:
            path.write_text(data, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise RenderError(f"cannot save {str(path)!r}: {exc}") from exc
    return path


def to_json(p: "Partition") -> dict:
    """The saved-partition document (hierviz.partitioner.saved.saved_partition.document: nodes, subgraphs,
    config, stats, versions; `hv.load_partition` reads it back) plus each backend's colour."""
    doc = document(p)
    doc["colors"] = {b: palette.color(b) for b in p.backends}
    return doc


__all__ = ["save", "to_json", "target", "json_text", "write", "FORMATS", "IMAGE_FORMATS"]
