"""How readable hierviz's pictures are, per model and view, measured on graphviz's own layout.

    python benchmarks/picture_quality.py            # the zoo and the models outside it (minutes)
    python benchmarks/picture_quality.py --quick    # tiny_conv, bert and a small Qwen2 only
    python benchmarks/picture_quality.py --save DIR # also write each picture as DIR/<model>-<view>.png

For each view (auto, full, modules, collapsed, focus on the middle subgraph) it lays the diagram out with
`dot -Tjson` and reads from the positions:

- size: the laid-out picture in pixels at 96 dpi (what a .png gets), width x height;
- overlaps: edge labels (label, xlabel, head/tail labels) whose text box overlaps a node
  (any node, and the title of a cluster) or another edge label;
- crossings: edges whose line runs through a cluster's title;
- upward: the share of drawn edges whose head sits above its tail, against the data flow
  (top to bottom).

Goals (issue 24), checked for every model: auto <= 8,000 px tall and <= 4,000 px wide; zero
label overlaps in every view; <= 5 % upward edges in the module and collapsed views. The exit
status is 1 when a goal is missed. A reduced form runs in the tests
(tests/drawing/test_picture_quality.py).

Models outside the zoo (random weights, small configs): torchvision swin_t, convnext_tiny,
deeplabv3_mobilenet_v3_large (segmentation), SSDlite320 (detection: backbone and head, without
the box decoding and NMS, which torch.export cannot capture); transformers DistilBERT (encoder),
Qwen2 (decoder, 12 layers), T5 (encoder-decoder). The full view of a model over max_nodes is
not drawn by auto; it is measured anyway up to FULL_LIMIT nodes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

import hierviz as hv

PX_PER_PT = 96 / 72
MAX_HEIGHT_PX, MAX_WIDTH_PX = 8000, 4000
MAX_UPWARD = 0.05
VIEWS = ("auto", "full", "modules", "collapsed", "focus")
FULL_LIMIT = 2000  # the full view of bigger graphs takes dot minutes: not measured


# ---------------------------------------------------------------------------- measuring
def _boxes_of_text(draw_ops: list[dict]) -> list[tuple[float, float, float, float]]:
    """Text boxes (x0, y0, x1, y1) of an xdot draw list: each T op at its font size."""
    size = 14.0
    boxes = []
    for op in draw_ops or ():
        if op.get("op") == "F":
            size = float(op.get("size", size))
        elif op.get("op") == "T":
            x, y = op["pt"]
            w = float(op.get("width", 0))
            align = op.get("align", "c")
            x0 = x - w / 2 if align == "c" else (x - w if align == "r" else x)
            boxes.append((x0, y - size * 0.25, x0 + w, y + size * 0.8))
    return boxes


def _spline_points(draw_ops: list[dict] | None, steps: int = 8) -> list[tuple[float, float]]:
    """Points along an edge's B-spline (xdot 'b' ops: cubic Bezier segments)."""
    out = []
    for op in draw_ops or ():
        if op.get("op") not in ("b", "B"):
            continue
        pts = op["points"]
        for k in range(0, len(pts) - 3, 3):
            (x0, y0), (x1, y1), (x2, y2), (x3, y3) = pts[k:k + 4]
            for n in range(steps + 1):
                t = n / steps
                u = 1 - t
                out.append((u ** 3 * x0 + 3 * u * u * t * x1 + 3 * u * t * t * x2 + t ** 3 * x3,
                            u ** 3 * y0 + 3 * u * u * t * y1 + 3 * u * t * t * y2 + t ** 3 * y3))
    return out


def _segment_hits(p: tuple[float, float], q: tuple[float, float], box: tuple) -> bool:
    """Whether the segment p-q passes through the box (x0, y0, x1, y1) (Liang-Barsky clipping)."""
    x0, y0, x1, y1 = box
    dx, dy = q[0] - p[0], q[1] - p[1]
    lo, hi = 0.0, 1.0
    for d, a, b in ((dx, p[0] - x0, x1 - p[0]), (dy, p[1] - y0, y1 - p[1])):
        for num, den in ((a, -d), (b, d)):  # Liang-Barsky: p_k = den, q_k = num
            if den == 0:
                if num < 0:
                    return False
                continue
            t = num / den
            if den < 0:
                lo = max(lo, t)
            else:
                hi = min(hi, t)
            if lo > hi:
                return False
    return True


def _union(boxes: list[tuple[float, float, float, float]]) -> tuple[float, float, float, float] | None:
    if not boxes:
        return None
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def _overlap(a: tuple, b: tuple, slack: float = 1.0) -> bool:
    return a[0] + slack < b[2] and b[0] + slack < a[2] and a[1] + slack < b[3] and b[1] + slack < a[3]


def quality(layout_json: str | bytes) -> dict[str, Any]:
    """Size, label overlaps and upward edges of one `dot -Tjson` layout."""
    g = json.loads(layout_json)
    x0, y0, x1, y1 = (float(v) for v in g["bb"].split(","))
    nodes: dict[int, tuple[float, float, float, float]] = {}
    for obj in g.get("objects", ()):
        if "pos" not in obj or obj.get("style") == "invis":
            continue  # clusters (no pos) and invisible nodes
        x, y = (float(v) for v in obj["pos"].split(","))
        w, h = float(obj.get("width", 0)) * 72, float(obj.get("height", 0)) * 72
        nodes[obj["_gvid"]] = (x - w / 2, y - h / 2, x + w / 2, y + h / 2)
    titles = [box for obj in g.get("objects", ()) if "pos" not in obj
              for box in [_union(_boxes_of_text(obj.get("_ldraw_")))] if box is not None]  # cluster titles
    labels: list[tuple[float, float, float, float]] = []
    crossings = 0
    upward = drawn = 0
    for e in g.get("edges", ()):
        if e.get("style") == "invis":
            continue
        tail, head = nodes.get(e["tail"]), nodes.get(e["head"])
        if tail is not None and head is not None:
            drawn += 1
            if (head[1] + head[3]) / 2 > (tail[1] + tail[3]) / 2 + 1:  # dot's y grows upward
                upward += 1
        points = _spline_points(e.get("_draw_"))
        inner = [(t[0] + 1, t[1] + 1, t[2] - 1, t[3] - 1) for t in titles]
        if any(_segment_hits(p, q, box) for box in inner for p, q in zip(points, points[1:])):
            crossings += 1
        for key in ("_ldraw_", "_xldraw_", "_hldraw_", "_tldraw_"):
            box = _union(_boxes_of_text(e.get(key)))
            if box is not None:
                labels.append(box)
    overlaps = 0
    node_boxes = list(nodes.values()) + titles
    for n, box in enumerate(labels):
        if any(_overlap(box, nb) for nb in node_boxes) or any(_overlap(box, other) for other in labels[n + 1:]):
            overlaps += 1
    return {"width_px": round((x1 - x0) * PX_PER_PT), "height_px": round((y1 - y0) * PX_PER_PT),
            "labels": len(labels), "overlaps": overlaps, "title_crossings": crossings, "edges": drawn,
            "upward": upward, "upward_share": upward / drawn if drawn else 0.0}


def measure(part: hv.Partition, view: str, *, save: Path | None = None, name: str = "") -> dict[str, Any]:
    """One row: the view auto chose (for 'auto'), the quality figures, the layout time. The
    focus view is drawn around the middle subgraph."""
    from hierviz.drawing import graphviz_run

    focus = part.subgraphs[len(part.subgraphs) // 2].tag if view == "focus" else None
    g = part.render(view, focus=focus)
    start = time.perf_counter()
    out = graphviz_run.layout(g, "json", timeout=600)
    row = {"view": view, "drawn": g.info["view"], "dot_s": round(time.perf_counter() - start, 2), **quality(out)}
    if save is not None:
        save.mkdir(parents=True, exist_ok=True)
        (save / f"{name}-{view}.png").write_bytes(graphviz_run.layout(g, "png", timeout=600))
    return row


def goals(row: dict[str, Any]) -> list[str]:
    """The goals this row misses (empty when it meets them)."""
    missed = []
    if row["view"] == "auto" and (row["height_px"] > MAX_HEIGHT_PX or row["width_px"] > MAX_WIDTH_PX):
        missed.append(f"auto {row['width_px']}x{row['height_px']} px > {MAX_WIDTH_PX}x{MAX_HEIGHT_PX}")
    if row["overlaps"]:
        missed.append(f"{row['overlaps']} label overlaps")
    if row["drawn"] in ("modules", "collapsed") and row["upward_share"] > MAX_UPWARD:
        missed.append(f"{row['upward_share']:.1%} upward edges")
    return missed


# ---------------------------------------------------------------------------- models
def _torchvision(name: str, module: str = "") -> Callable[[], tuple]:
    def build() -> tuple:
        import torchvision

        ns = getattr(torchvision.models, module) if module else torchvision.models
        kwargs: dict[str, Any] = {"weights": None}
        if module:
            kwargs["weights_backbone"] = None
        return getattr(ns, name)(**kwargs).eval(), (torch.randn(1, 3, 224, 224),)
    return build


class DetectionHead(torch.nn.Module):
    """SSDlite's backbone and head: class logits and box regressions, before decoding and NMS."""

    def __init__(self) -> None:
        super().__init__()
        import torchvision

        ssd = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                         num_classes=5)
        self.backbone, self.head = ssd.backbone, ssd.head

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        features = list(self.backbone(x).values())
        out = self.head(features)
        return out["cls_logits"], out["bbox_regression"]


class Seq2Seq(torch.nn.Module):
    """T5 with fixed decoder ids: logits as one tensor."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, decoder_input_ids: torch.Tensor) -> torch.Tensor:
        return self.model(input_ids=input_ids, decoder_input_ids=decoder_input_ids, use_cache=False,
                          return_dict=True).logits


def _distilbert() -> tuple:
    from transformers import DistilBertConfig, DistilBertModel

    from hierviz.zoo import TensorOutput

    config = DistilBertConfig(vocab_size=1000, dim=128, hidden_dim=256, n_layers=4, n_heads=4,
                              max_position_embeddings=64)
    return TensorOutput(DistilBertModel(config), "last_hidden_state").eval(), (torch.randint(0, 1000, (1, 16)),)


def qwen2(layers: int = 12) -> tuple:
    """A small Qwen2 decoder (the issue's example has 12 layers)."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from hierviz.zoo import TensorOutput

    config = Qwen2Config(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, use_cache=False)
    return TensorOutput(Qwen2ForCausalLM(config), "logits").eval(), (torch.randint(0, 256, (1, 8)),)


def _t5() -> tuple:
    from transformers import T5Config, T5ForConditionalGeneration

    config = T5Config(vocab_size=256, d_model=64, d_kv=16, d_ff=128, num_layers=2, num_decoder_layers=2,
                      num_heads=4, decoder_start_token_id=0, use_cache=False)
    return Seq2Seq(T5ForConditionalGeneration(config)).eval(), (torch.randint(0, 256, (1, 8)),
                                                                torch.randint(0, 256, (1, 4)))


OUTSIDE: dict[str, Callable[[], tuple]] = {
    "swin_t": _torchvision("swin_t"),
    "convnext_tiny": _torchvision("convnext_tiny"),
    "deeplabv3_mobilenet_v3_large": _torchvision("deeplabv3_mobilenet_v3_large", "segmentation"),
    "ssdlite320_head": lambda: (DetectionHead().eval(), (torch.randn(1, 3, 320, 320),)),
    "distilbert": _distilbert,
    "qwen2_12": qwen2,
    "t5_small": _t5,
}
QUICK = ("tiny_conv", "bert", "qwen2_2")


def load(name: str) -> tuple:
    torch.manual_seed(0)
    if name in hv.zoo.names():
        return hv.zoo.load(name)
    if name == "qwen2_2":
        return qwen2(2)
    return OUTSIDE[name]()


# Two settings per model: the default (one TensorRT subgraph for most models) and one that
# splits the graph, every add (residuals) and every SDPA forced to PyTorch, so the views also
# draw many subgraphs, boundary tensors and their labels.
SPLIT = {"torch_executed_ops": {"torch.ops.aten.add.Tensor", "torch.ops.aten.scaled_dot_product_attention.default"},
         "min_block_size": 1}


def rows_for(name: str, save: Path | None = None, settings: tuple[str, ...] = ("default", "split")) -> list[dict]:
    model, inputs = load(name)
    graph = hv.capture(model, inputs)
    rows = []
    for setting in settings:
        part = hv.partition(graph, **(SPLIT if setting == "split" else {}))
        for view in VIEWS:
            if view == "full" and part.stats["nodes"] > FULL_LIMIT:
                continue
            row = {"model": name, "setting": setting, "nodes": part.stats["nodes"],
                   "subgraphs": part.stats["subgraphs"], **measure(part, view, save=save, name=f"{name}-{setting}")}
            row["missed"] = goals(row)
            rows.append(row)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--save", type=Path, default=None)
    ap.add_argument("models", nargs="*")
    args = ap.parse_args()
    names = args.models or (list(QUICK) if args.quick else hv.zoo.names() + list(OUTSIDE))
    print(f"{'model':30} {'setting':>7} {'nodes':>6} {'subgr':>5} {'view':>9} {'drawn':>9} {'size px':>12} "
          f"{'labels':>6} {'overlap':>7} {'upward':>7} {'cross':>5} {'dot s':>6}  goals")
    missed_any = False
    for name in names:
        for r in rows_for(name, args.save):
            missed_any = missed_any or bool(r["missed"])
            print(f"{r['model']:30} {r['setting']:>7} {r['nodes']:>6} {r['subgraphs']:>5} {r['view']:>9} "
                  f"{r['drawn']:>9} {r['width_px']:>5}x{r['height_px']:<6} {r['labels']:>6} {r['overlaps']:>7} "
                  f"{r['upward_share']:>6.1%} {r['title_crossings']:>5} {r['dot_s']:>6}  "
                  f"{'; '.join(r['missed']) or 'met'}", flush=True)
    return 1 if missed_any else 0


if __name__ == "__main__":
    sys.exit(main())
