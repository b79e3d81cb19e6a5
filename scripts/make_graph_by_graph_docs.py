"""Regenerate the graph-by-graph picture of the README and docs/graph-by-graph.md, and print
that page's tables, from torchvision's fasterrcnn_mobilenet_v3_large_320_fpn (random weights,
nothing downloaded) partitioned as torch.compile(model, backend="torch_tensorrt") runs it.

    .venv/bin/python scripts/make_graph_by_graph_docs.py

Writes docs/images/fasterrcnn-graphs.svg and .png (MultiGraphPartition.save) and prints the
graphs, graph breaks and blockers tables pasted into docs/graph-by-graph.md.
"""

import warnings
from pathlib import Path

import torch

import hierviz as hv
from hierviz.drawing.by_graph.graphs_export import breaks_table, graphs_table

OUT = Path(__file__).resolve().parent.parent / "docs" / "images"
BLOCKER_COLUMNS = ["graph", "op", "kind", "nodes", "subgraphs_if_fixed", "subgraphs_saved", "accelerated_ops_gained",
                   "change"]


def fasterrcnn() -> tuple:
    from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn

    torch.manual_seed(0)
    model = fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None).eval()
    return model, ([torch.rand(3, 320, 320)],)


def markdown(table, columns=None) -> str:
    """A Markdown table (no tabulate needed)."""
    columns = list(columns or table.columns)
    rows = [columns, ["---"] * len(columns)]
    rows += [[str(v).replace("|", "\\|").replace("\n", " ") for v in r] for r in table[columns].itertuples(index=False)]
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    model, inputs = fasterrcnn()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        part = hv.partition(model, inputs, ir="torch_compile")
    print(part)
    for suffix in ("svg", "png"):
        print(part.save(OUT / f"fasterrcnn-graphs.{suffix}"))
    print("\n### graphs\n")
    print(markdown(graphs_table(part)))
    print("\n### graph breaks\n")
    print(markdown(breaks_table(part), ["break", "after", "ended a graph", "at", "code", "type"]))
    blockers = getattr(part, "blockers", None)
    if blockers is not None:
        print("\n### blockers\n")
        table = blockers()
        print(markdown(table.head(12), [c for c in BLOCKER_COLUMNS if c in table.columns]))


if __name__ == "__main__":
    main()
