"""Write the tutorial notebooks in notebooks/ from the cell sources below, without outputs.

    .venv/bin/python scripts/make_notebooks.py            # (re)write notebooks/*.ipynb
    .venv/bin/python scripts/make_notebooks.py --check    # exit 1 if a notebook differs

The notebooks are generated so that they stay clean (no outputs, no execution counts, stable
cell ids) and reproducible: edit the cells here, not in JupyterLab, then run this script.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from textwrap import dedent

import nbformat
from nbformat import v4

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"name": "python", "pygments_lexer": "ipython3",
                 "codemirror_mode": {"name": "ipython", "version": 3}}

# A quiet start: Torch-TensorRT and torch print import-time warnings that are noise here.
SETUP = '''\
import logging
import warnings

warnings.filterwarnings("ignore")
logging.getLogger("torch_tensorrt").setLevel(logging.ERROR)

import torch
import hierviz as hv

print(hv.trt.info())'''


def md(text: str) -> tuple[str, str]:
    return ("markdown", dedent(text).strip("\n"))


def code(text: str) -> tuple[str, str]:
    return ("code", dedent(text).strip("\n"))


# ---------------------------------------------------------------------------- 01
EXPLORE = [
    md("""
    # 01 · Explore a partition interactively

    Torch-TensorRT's hierarchical adjacency partitioner splits a model's aten graph into
    subgraphs, one backend each, following a **priority** list of backends,
    **`min_block_size`** and **`torch_executed_ops`**. This notebook shows the partition of
    ResNet-50 and BERT and lets you turn those knobs with `hv.explore` and see the result at
    once.

    Everything here runs on a CPU: partitioning needs Torch-TensorRT's converter registry and
    lowering, not a GPU. The models come from `hv.zoo` (random weights, nothing downloaded).
    """),
    code(SETUP),
    md("""
    ## ResNet-50 with Torch-TensorRT's defaults

    `hv.partition` exports the model, applies Torch-TensorRT's lowering and partitions the aten
    graph exactly as `torch_tensorrt.compile` would see it. A `Partition` displays itself:
    one coloured box (cluster) per subgraph, green for TensorRT.
    """),
    code("""
    model, inputs = hv.zoo.load("resnet50")
    part = hv.partition(model, inputs)      # default hv.Config(): priority tensorrt > inductor, min_block_size 5
    part
    """),
    md("""
    Every op of ResNet-50 has a TensorRT converter, so the whole graph is one TensorRT engine.
    Things get interesting when some ops must stay in PyTorch. Suppose the residual additions
    (`aten.add.Tensor`) are forced to PyTorch with `torch_executed_ops`, and TorchInductor is
    available as a second backend for everything it can compile.

    Run the next cell and play with the controls:

    * **priority**: backends, highest first. Drag to reorder; remove a backend to switch it off.
    * **min_block_size**: accelerated subgraphs with fewer nodes go back to PyTorch.
    * **torch_executed_ops**: type an op name (autocomplete lists the ops of this graph).
    * **view**: `full` draws every node, `collapsed` one box per subgraph, `modules` one box
      per `nn.Module`, `focus` the neighbourhood of one node or subgraph. Here it starts at
      `full`, every node inside its subgraph's box; left at `auto`, a model as long as
      resnet50 is drawn in the module view, so the picture stays under 8,000 px.

    The tabs below the diagram hold the per-op table, the subgraphs, the dryrun-style report,
    the history of every setting you tried, and a diff against the previous setting.
    """),
    code("""
    config = hv.Config(
        priority=("tensorrt", "inductor"),
        support={"inductor": hv.support.inductor()},           # inductor may take any op it can lower
        torch_executed_ops={"torch.ops.aten.add.Tensor"},       # the residual adds run in PyTorch
        min_block_size=5,
    )
    explorer = hv.explore(model, inputs, config, name="resnet50", view="full")
    explorer
    """),
    md("""
    **Try this first:** the nodes outlined in **red** are what blocks the most; the Selection
    panel beside the diagram says which op it is and what fixing it gives. Press **select it**
    (or click a red node), then **apply its fix**: the diagram and the counts show the new
    partition. **back** puts your setting back.
    """),
    md("""
    The controls are ordinary widgets, so you can also drive the explorer from code, for
    example to reproduce a setting exactly. `explorer.controls` maps each `Config` field (plus
    `view` and `measure`) to its widget; setting `.value` re-partitions as a click would.
    A bottleneck block of ResNet-50 has about a dozen nodes between two residual adds, so a
    `min_block_size` above that sends whole blocks back to PyTorch:
    """),
    code("""
    explorer.controls["min_block_size"].value = 15
    print(explorer.partition)
    explorer.partition.stats["subgraphs_by_backend"]
    """),
    md("""
    `explorer.history` is a DataFrame with one row per setting you tried (from the widgets or
    from code): the settings, subgraph counts per backend, coverage and the boundary tensors
    that cross between subgraphs (each one is a copy between engines at run time).
    """),
    code("""
    explorer.history[["run", "priority", "min_block_size", "subgraphs", "subgraphs_tensorrt",
                      "subgraphs_torch", "accelerated_coverage", "boundary_tensors"]]
    """),
    md("""
    Why does a node run where it runs? `reason_of` answers for one node, `ops()` for every op:
    """),
    code("""
    current = explorer.partition
    demoted = [n for sg in current.subgraphs if sg.backend == "torch" for n in sg.nodes]
    print(current.reason_of(demoted[0]))
    current.ops().head(10)
    """),
    md("""
    Set `min_block_size` back to 5. The widget above stays live: scroll up and keep exploring.
    """),
    code("""
    explorer.controls["min_block_size"].value = 5
    print(explorer.partition)
    """),
    md("""
    ## BERT

    A 2-layer BERT encoder (hidden size 128). Here TorchInductor goes **first** but may only
    take the matrix multiplications (`aten.linear`); TensorRT takes the rest. The graph then
    alternates between the two backends, which is where `min_block_size` matters most: try
    raising it, or remove `inductor` from the priority.
    """),
    code("""
    bert, bert_inputs = hv.zoo.load("bert")
    bert_config = hv.Config(
        priority=("inductor", "tensorrt"),
        support={"inductor": hv.support.ops(["torch.ops.aten.linear.default"])},
        min_block_size=1,
    )
    bert_explorer = hv.explore(bert, bert_inputs, bert_config, name="bert")
    bert_explorer
    """),
    code("""
    bert_explorer.partition.summary()[["tag", "backend", "ops", "inputs", "outputs", "top_ops"]]
    """),
    md("""
    ## The model's own structure: the module view

    The diagrams above are by node and by subgraph. `view="modules"` (also a button of the
    explorer's view control) groups the nodes by the model's `nn.Module`s instead: one box per
    module with its class, op count, a bar of its backends' shares and the subgraphs it spans.
    Consecutive layers with the same class and the same partition pattern are drawn once
    (`layer.0\u20131 \u00d72`); a layer that differs is drawn apart.
    """),
    code("""
    bert_part = bert_explorer.partition
    bert_part.render(view="modules")
    """),
    md("""
    `focus=` with a module path draws that module's inside; `depth=` how many module levels
    are drawn. `against=` marks what another setting changes (both backends on the changed
    modules, the rest dimmed); here, the same BERT with TorchInductor switched off:
    """),
    code("""
    trt_only = hv.partition(bert_part.graph, bert_config, priority=("tensorrt",))
    print(len(hv.diff(bert_part, trt_only)), "nodes change backend or subgraph")
    bert_part.render(view="modules", depth=2, against=trt_only)
    """),
    md("""
    Next: `02_compare.ipynb` sweeps settings into a table and plots them; `03_export.ipynb`
    saves diagrams and HTML reports for sharing.
    """),
]

# ---------------------------------------------------------------------------- 02
COMPARE = [
    md("""
    # 02 · Compare settings: sweeps, tables, plots and diffs

    Instead of trying settings one at a time, `hv.sweep` partitions a model under every
    combination of a grid of `Config` values and returns a pandas DataFrame, one row per
    setting. With `measure=True` it also compiles and times each setting.
    """),
    code(SETUP + '''

import pandas as pd
import matplotlib.pyplot as plt
from hierviz.compare import plot_latency, plot_subgraphs

pd.set_option("display.max_columns", 30)
pd.set_option("display.width", 200)'''),
    md("""
    ## A sweep over `min_block_size` and priority

    Capture the model once with `hv.capture` (export + Torch-TensorRT lowering); every
    partition below reuses that graph. The residual adds are forced to PyTorch again, so that
    `min_block_size` has something to decide.
    """),
    code("""
    model, inputs = hv.zoo.load("resnet50")
    graph = hv.capture(model, inputs)

    base = hv.Config(support={"inductor": hv.support.inductor()},
                     torch_executed_ops={"torch.ops.aten.add.Tensor"})
    grid = {
        "min_block_size": [1, 5, 10, 15, 20],
        "priority": [("tensorrt", "inductor"), ("inductor", "tensorrt")],
    }
    table = hv.sweep(graph, None, grid, base=base, progress=False)
    table
    """),
    md("""
    The table is a plain DataFrame: filter, sort and pivot it as usual. For instance the
    number of subgraphs per setting, and the settings that keep at least 80 % of the compute
    ops accelerated:
    """),
    code("""
    table.pivot(index="min_block_size", columns="priority", values="subgraphs")
    """),
    code("""
    table[table["accelerated_coverage"] >= 0.8][
        ["priority", "min_block_size", "subgraphs", "acc_subgraphs", "accelerated_coverage", "boundary_tensors"]]
    """),
    md("""
    ## Plot: subgraphs per backend

    `plot_subgraphs` draws one stacked bar per setting, coloured like the diagrams.
    """),
    code("""
    ax = plot_subgraphs(table[table["priority"] == "tensorrt>inductor"], x="min_block_size")
    plt.show()
    """),
    md("""
    ## Plot: latency

    `measure=True` compiles every subgraph with its backend and times the split model
    (`hv.measure`) next to eager PyTorch. TensorRT needs an NVIDIA GPU, so on a CPU we measure
    TorchInductor settings only (a TensorRT setting would get an `error` row instead of a
    latency). We use the small `tiny_conv` model (conv-bn-relu twice) and few iterations to
    keep this notebook quick; on a GPU machine use your own model, `("tensorrt", "inductor")`
    and the defaults (`warmup=10, iters=100`).

    Forcing `relu` to PyTorch cuts the model into pieces; with `min_block_size=5` those pieces
    are too small and everything falls back to eager PyTorch:
    """),
    code("""
    tiny, tiny_inputs = hv.zoo.load("tiny_conv")
    latency = hv.sweep(
        tiny, tiny_inputs,
        {"min_block_size": [1, 5], "torch_executed_ops": [set(), {"torch.ops.aten.relu.default"}]},
        base=hv.Config(priority=("inductor",), support={"inductor": hv.support.inductor()}),
        measure={"warmup": 2, "iters": 10},
        progress=False,
    )
    latency[["torch_executed_ops", "min_block_size", "subgraphs", "subgraphs_inductor", "subgraphs_torch",
             "median_ms", "p10_ms", "p90_ms", "speedup", "error"]]
    """),
    code("""
    ax = plot_latency(latency)
    plt.show()
    """),
    md("""
    ## Let hierviz find the fastest setting: `hv.tune`

    `hv.tune` searches the settings by measured latency with Optuna's TPE sampler. Without a
    `space` it derives one from the graph: the priority orders of the backends that can be
    timed here, the `min_block_size` values that change the partition, and ops worth forcing
    to PyTorch. Settings that give the same partition are measured once
    (`status="duplicate"`), slow ones are stopped after a few calls (`"pruned"`), and a
    setting whose outputs differ from the model's is never `best`. `speedup` is against your
    `nn.Module` run eagerly, and a speed-up is claimed only when its 95% interval is narrow
    and clear of 1.0 by 5%. Without a GPU TensorRT cannot be timed: a search from a setting
    with TensorRT then keeps TensorRT's engines, ranks the parts that run outside them, and
    its verdict says what was not timed.
    """),
    code("""
    result = hv.tune(tiny, tiny_inputs, budget=6, measure={"warmup": 1, "iters": 5}, progress=False)
    result
    """),
    code("""
    result.trials[["trial", "priority", "min_block_size", "torch_executed_ops", "subgraphs",
                   "median_ms", "speedup", "outputs_match", "fallbacks", "status", "duplicate_of"]]
    """),
    code("""
    ax = result.plot()
    plt.show()
    """),
    md("""
    The best setting is a `hv.Config`. `Partition.compile()` turns it into the compiled split
    model, the very module `hv.measure` timed, to use in place of the model (and
    `.save(folder)` / `hierviz.latency.deploy.load(folder)` to keep it).
    """),
    code("""
    # TensorRT's engines run only on an NVIDIA GPU: without one, on_error="fallback" runs them in eager PyTorch
    on_error = "raise" if torch.cuda.is_available() else "fallback"
    compiled = hv.partition(tiny, tiny_inputs, result.best).compile(example_inputs=tiny_inputs, on_error=on_error)
    with torch.no_grad():
        print(result.best.label(), torch.allclose(compiled(*tiny_inputs), tiny(*tiny_inputs), atol=1e-4))
    """),
    md("""
    ## Diff two settings

    `hv.diff(a, b)` lists the nodes whose backend or subgraph differs between two partitions
    of the same graph, with the reason on each side.
    """),
    code("""
    a = hv.partition(graph, base, min_block_size=10)
    b = hv.partition(graph, base, min_block_size=15)
    changes = hv.diff(a, b)
    print(f"{len(changes)} of {a.stats['nodes']} nodes change subgraph or backend")
    changes.head(10)
    """),
    code("""
    changes.groupby(["backend_a", "backend_b"]).size().rename("nodes").reset_index()
    """),
    md("""
    `Partition.recommend()` re-partitions at a range of sizes and shows how many subgraphs each
    backend would get, like the recommendations at the end of Torch-TensorRT's dryrun report:
    """),
    code("""
    a.recommend([1, 5, 10, 12, 13, 14, 15, 20])
    """),
]

# ---------------------------------------------------------------------------- 03
EXPORT = [
    md("""
    # 03 · Diagrams and reports for sharing

    A partition can be saved as a diagram (SVG, PNG, PDF), as Graphviz DOT, as JSON, or as a
    standalone HTML report (diagram, settings, tables and the dryrun-style report in one file
    that opens in any browser). The format comes from the file's suffix.
    """),
    code(SETUP + '''

import json
import tempfile
from pathlib import Path
from IPython.display import HTML, SVG, Image, display

# Files go to a fresh temporary folder; set OUT to a folder of your own to keep them.
OUT = Path(tempfile.mkdtemp(prefix="hierviz-export-"))
OUT'''),
    code("""
    model, inputs = hv.zoo.load("resnet18")
    config = hv.Config(priority=("inductor", "tensorrt"),
                       support={"inductor": hv.support.ops(["torch.ops.aten.convolution.default"])},
                       min_block_size=1)
    part = hv.partition(model, inputs, config)
    print(part)
    """),
    md("""
    ## Views

    `render(view=...)` returns a `graphviz.Digraph`, which Jupyter draws as SVG. `full` draws
    every node; `collapsed` one box per subgraph with the tensors that cross between them (the
    view to use for large graphs); `focus` the neighbourhood of one node or subgraph; `auto`
    (the default) picks `full` or `collapsed` by size.
    """),
    code("""
    part.render(view="collapsed")
    """),
    code("""
    tag = part.subgraphs[3].tag
    part.render(view="focus", focus=tag)
    """),
    md("""
    ## The module view, measured time and differences

    `view="modules"` draws the model the way its author wrote it: one box per `nn.Module`
    (ResNet's `layer1` ... `layer4` and their blocks), each with the share of its ops per
    backend; identical consecutive blocks are drawn once. `focus=` opens one module.
    """),
    code("""
    part.render(view="modules", depth=2)
    """),
    code("""
    part.render(view="modules", focus="layer2")
    """),
    md("""
    With a measurement (`hv.measure`), every view shows the milliseconds of each subgraph (and
    of each module box: its ops' share of their subgraphs' time). On a CPU, TorchInductor and
    eager PyTorch can be timed; TensorRT needs an NVIDIA GPU. A small net with everything in
    TorchInductor but the ReLUs:
    """),
    code("""
    small, small_inputs = hv.zoo.load("tiny_conv")
    cpu_part = hv.partition(small, small_inputs, priority=("inductor",), min_block_size=1,
                            support={"inductor": hv.support.inductor()},
                            torch_executed_ops={"torch.ops.aten.relu.default"})
    measured = hv.measure(cpu_part, small_inputs, device="cpu", warmup=1, iters=5)
    print(measured)
    cpu_part.render(view="collapsed", measurement=measured)
    """),
    md("""
    `against=` draws the difference from another partition of the same graph: nodes, subgraphs
    and modules whose backend or subgraph changed are marked with both backends, the rest is
    dimmed (`hv.diff` lists the same nodes as a table).
    """),
    code("""
    all_trt = hv.partition(part.graph, config, priority=("tensorrt",))
    part.render(view="modules", depth=1, against=all_trt)
    """),
    md("""
    ## Model Explorer

    For graphs too large for Graphviz, `format="model_explorer"` writes a graph JSON that
    Google's Model Explorer (`pip install hierviz[model-explorer]`, then
    `model-explorer file.json`) opens with its built-in JSON loader: layers by module
    (and, in the second graph of the file, by subgraph), nodes colored by backend, with the
    backend, subgraph, reason, op and shapes in the side panel. With `measurement=` a
    per-node latency file is written beside it (`*.latency.json`, "Add per-node data").
    """),
    code("""
    me_file = part.save(OUT / "resnet18.model_explorer.json", format="model_explorer")
    doc = json.loads(me_file.read_text())
    print(me_file.name, [(g["id"], len(g["nodes"])) for g in doc["graphs"]])
    """),
    md("""
    ## Files

    `save` writes one file and returns its path.
    """),
    code("""
    written = [part.save(OUT / f"resnet18-inductor-first{suffix}")
               for suffix in (".svg", ".png", ".pdf", ".dot", ".json", ".html")]
    for path in written:
        print(f"{path.name:32} {path.stat().st_size:>10,} bytes")
    """),
    md("""
    The SVG and PNG are the same diagram; an SVG stays sharp when zoomed and its text can be
    searched.
    """),
    code("""
    display(Image(filename=str(OUT / "resnet18-inductor-first.png"), width=700))
    """),
    code("""
    data = json.loads((OUT / "resnet18-inductor-first.json").read_text())
    print(sorted(data))
    """),
    md("""
    ## The HTML report

    One self-contained file: send it to a colleague or attach it to a bug report. Here it is
    shown inline in an iframe; open the file in a browser to see it full size.
    """),
    code("""
    import html

    report = OUT / "resnet18-inductor-first.html"
    frame = "width:100%;height:520px;border:1px solid #ccc"
    HTML(f'<iframe srcdoc="{html.escape(report.read_text())}" style="{frame}"></iframe>')
    """),
    md("""
    The dryrun-style text report is also available as a string, for logs:
    """),
    code("""
    print(part.report())
    """),
    md("""
    ## Several settings side by side

    A loop over settings produces one report per setting. The sweep table from
    `02_compare.ipynb` is a DataFrame, so `to_csv`, `to_html` or `to_markdown` share it.
    """),
    code("""
    graph = hv.capture(model, inputs)
    for mbs in (1, 3, 5):
        p = hv.partition(graph, config, min_block_size=mbs)
        p.save(OUT / f"resnet18-mbs{mbs}.html")
    table = hv.sweep(graph, None, {"min_block_size": [1, 3, 5]}, base=config, progress=False)
    table.to_csv(OUT / "resnet18-sweep.csv", index=False)
    sorted(p.name for p in OUT.iterdir())
    """),
    md("""
    The explorer widget of `01_explore.ipynb` has the same exports under its **Export** tab
    (SVG of the diagram as shown, HTML report, history CSV), and in code
    `explorer.export("html")`.
    """),
    code("""
    explorer = hv.explore(graph, None, config, output_dir=OUT / "explorer", name="resnet18")
    print(explorer.export("html"))
    print(explorer.export("csv"))
    """),
]

# ---------------------------------------------------------------------------- 04
YOUR_MODEL = [
    md("""
    # 04 · Bring your own model

    Any `nn.Module` that `torch.export` can capture works, with example inputs shaped like the
    real ones. This notebook uses a small block with one op that **TensorRT has no converter
    for**, with a dynamic batch dimension, and shows how to read why each node runs where it
    runs and what to do about an unsupported op.
    """),
    code(SETUP),
    code("""
    from torch import nn


    class GatedMLP(nn.Module):
        \"\"\"LayerNorm -> Linear -> ReLU, gated by erfinv(tanh(.)), -> Linear, plus a residual.\"\"\"

        def __init__(self, dim: int = 64, hidden: int = 128) -> None:
            super().__init__()
            self.norm = nn.LayerNorm(dim)
            self.up = nn.Linear(dim, hidden)
            self.down = nn.Linear(hidden, dim)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = torch.relu(self.up(self.norm(x)))
            gate = torch.erfinv(torch.tanh(h) * 0.99)      # aten.erfinv: no TensorRT converter
            return x + self.down(h * gate)


    torch.manual_seed(0)
    model = GatedMLP().eval()
    inputs = (torch.randn(4, 64),)
    """),
    md("""
    ## Capture with a dynamic batch dimension

    Pass `dynamic_shapes` as you would to `torch.export.export`: here dimension 0 of `x` is a
    `torch.export.Dim` between 1 and 64. The captured graph carries symbolic shapes (`s…`),
    which show up in the diagram and the subgraph table. Capture once and partition the
    graph as often as you like.
    """),
    code("""
    batch = torch.export.Dim("batch", min=1, max=64)
    graph = hv.capture(model, inputs, dynamic_shapes={"x": {0: batch}})
    part = hv.partition(graph, min_block_size=1)
    part
    """),
    code("""
    part.summary()[["tag", "backend", "ops", "input_shapes", "output_shapes"]]
    """),
    md("""
    ## Why does a node run where it runs?

    `ops()` has one row per op with its count, where it runs and why; `reason_of(node)` explains
    one node. `erfinv` has no converter and no other backend is allowed to take it, so it runs
    in PyTorch, which splits the TensorRT work into two engines with tensors copied between
    them.
    """),
    code("""
    part.ops()
    """),
    code("""
    erfinv = next(n for sg in part.subgraphs for n in sg.nodes if "erfinv" in n)
    print(part.reason_of(erfinv))
    """),
    md("""
    The same information in Torch-TensorRT's dryrun format:
    """),
    code("""
    print(part.report())
    """),
    md("""
    ## What to do with an unsupported op

    **1. Accept the fallback, but keep the engines large.** Raising `min_block_size` sends small
    accelerated pieces back to PyTorch too; `recommend()` shows the trade-off.
    """),
    code("""
    part.recommend()
    """),
    md("""
    **2. Move more ops to PyTorch on purpose** with `torch_executed_ops`, e.g. to keep the gate
    computation together in one PyTorch subgraph instead of bouncing between engines:
    """),
    code("""
    gate_in_torch = hv.partition(graph, min_block_size=1,
                                 torch_executed_ops={"torch.ops.aten.tanh.default", "torch.ops.aten.mul.Tensor"})
    print(gate_in_torch)
    hv.diff(part, gate_in_torch)[["node", "backend_a", "backend_b", "reason_b"]]
    """),
    md("""
    **3. Give the op to another backend.** Torch-TensorRT's hierarchical partitioner can hand
    ops to TorchInductor when TensorRT cannot take them: add `inductor` to the priority and say
    what it supports with `support=` (`hv.support.inductor()` is every op TorchInductor can
    compile; `hv.support.ops([...])` an explicit list; `hv.support.where(fn)` decides per node).
    """),
    code("""
    with_inductor = hv.partition(
        graph,
        priority=("tensorrt", "inductor"),
        support={"inductor": hv.support.ops(["torch.ops.aten.erfinv.default"])},
        min_block_size=1,
    )
    print(with_inductor)
    print(with_inductor.reason_of(erfinv))
    with_inductor
    """),
    md("""
    **4. Check what TensorRT will really accept, and what `torch_tensorrt.compile` runs.** hierviz's
    default TensorRT support runs each converter's capability validator on each node (dtypes,
    shapes, arguments), as `torch_tensorrt.compile` does, so nodes that would be rejected at
    compile time show up now, with the reason "validator rejected";
    `hv.support.tensorrt(validate=False)` checks op names only, as upstream's hierarchical
    partitioner does. `engine="fast"` is the partition `torch_tensorrt.compile` itself makes
    (its fast partitioner, with its rules); `hv.compare_engines` puts every engine side by side:
    """),
    code("""
    names_only = hv.partition(graph, support={"tensorrt": hv.support.tensorrt(validate=False)}, min_block_size=1)
    today = hv.partition(graph, engine="fast", min_block_size=1)
    print(names_only)
    print(today)
    rejected = part.ops()
    rejected[rejected["reason"].str.contains("validator|no support")]
    """),
    code("""
    hv.compare_engines(graph, min_block_size=1)[["engine", "subgraphs", "subgraphs_tensorrt", "accelerated_ops",
                                                 "boundary_tensors"]]
    """),
    md("""
    ## Run it

    The split module runs and gives the same outputs as the captured graph, whatever the
    dynamic batch size. (Compiling it with TensorRT and timing it is `hv.measure`, which needs a
    GPU for the TensorRT subgraphs; see `02_compare.ipynb`.)
    """),
    code("""
    x = torch.randn(9, 64)
    with torch.no_grad():
        expected = model(x)
        got = with_inductor.module(x)
    got = got[0] if isinstance(got, (tuple, list)) else got
    print(tuple(got.shape), torch.allclose(expected, got, atol=1e-5))
    """),
]

# ---------------------------------------------------------------------------- 05
BUILD = [
    md("""
    # 05 · Build the TensorRT engines here, and file what fails

    A partition says which subgraphs *should* become TensorRT engines. `part.build()` finds out
    whether they *do*: it converts every TensorRT subgraph with the installed Torch-TensorRT's
    converters and builds its engine with the installed TensorRT, as `torch_tensorrt.compile`
    would. With TensorRT-RTX no GPU is needed: engines are built ahead of time on the CPU.

    This notebook builds ResNet-18 (with a fixed and with a dynamic batch), then GPT-2, whose
    attention makes TensorRT-RTX's builder fail: it shows the fix hierviz finds, builds it, and
    saves the smallest part of the graph that still fails as a standalone repro to report
    upstream. Builds are kept in a cache on disk, so running a cell again is quick.
    """),
    code(SETUP + """

import os
import tempfile
from pathlib import Path"""),
    md("""
    ## Build every engine of a partition

    `part.build()` returns an `hv.Builds`: a headline, and `.df` with one row per TensorRT
    subgraph: whether it built (`stage`), its TensorRT layers, the engine's size and how long
    converting and building took.
    """),
    code("""
    model, inputs = hv.zoo.load("resnet18")
    part = hv.partition(model, inputs)
    builds = part.build()
    print(builds)
    builds.df[["subgraph", "ops", "stage", "layers", "engine_bytes", "convert_s", "build_s"]]
    """),
    md("""
    ## A dynamic batch: the engine's optimization profile

    With `dynamic_shapes`, the engine is built for a range of sizes. TensorRT calls that range an
    *optimization profile* (min → opt → max for each input); the `profile` column shows it. The
    example input has a batch of 2, because a dimension of size 1 is taken as fixed by
    `torch.export`.
    """),
    code("""
    batch = torch.export.Dim("batch", min=1, max=8)
    dynamic = hv.partition(model, (torch.randn(2, 3, 224, 224),), dynamic_shapes=({0: batch},))
    dynamic_builds = dynamic.build()
    dynamic_builds.df[["subgraph", "profile", "stage", "engine_bytes"]]
    """),
    md("""
    ## An engine that fails: GPT-2

    With `min_block_size=3`, GPT-2's attention lands in a TensorRT engine that TensorRT-RTX's
    builder refuses. `builds.lines()` says where it failed, what `torch_tensorrt.compile` would do
    then, and the fix hierviz found: the ops to run in PyTorch (`torch_executed_ops`) so that
    every engine builds, shown to build before it is offered.
    """),
    code("""
    model, inputs = hv.zoo.load("gpt2")
    gpt2 = hv.partition(model, inputs, min_block_size=3)
    gpt2_builds = gpt2.build()
    print("\\n".join(gpt2_builds.lines()))
    """),
    md("""
    The picture marks each engine: a failed one gets a thick red border and says why.
    """),
    code("""
    gpt2.render("collapsed", builds=gpt2_builds)
    """),
    md("""
    ## Apply the fix and build it

    `builds.fixed()` is the partition with the fix applied. Its engines were already built while
    the fix was searched, so building it again reads them from the cache.
    """),
    code("""
    fixed = gpt2_builds.fixed()
    print(fixed)
    fixed_builds = fixed.build()
    print(fixed_builds)
    fixed_builds.df[["subgraph", "ops", "stage", "engine_bytes"]]
    """),
    md("""
    ## The smallest failing part, as a repro to report upstream

    The fix gets your model running; the TensorRT team needs the failure itself, as small as
    possible. `builds.repro()` cuts the failed engine down to the smallest part that still fails
    the same way (same stage, same error). `repro.save(folder)` writes it as files that need only
    torch and torch_tensorrt: `repro.pt2` (the part, exported), `repro.py` (compiles it with
    `torch_tensorrt.dynamo.compile`; exits 1 when the failure reproduces) and `README.md` (an
    issue text: the error, the versions, the nodes and the lines of your model that made them).
    `save` then runs `repro.py` in a fresh Python (about 20 s) and says whether it reproduced.
    `weights="random"` saves random weights of the same shapes instead of your model's.
    """),
    code("""
    repro = gpt2_builds.repro()
    print(repro)
    print(repro.nodes)
    """),
    code("""
    folder = Path(tempfile.mkdtemp(prefix="hierviz-repro-"))  # a folder of your own to keep it
    saved = repro.save(folder)
    print(saved)
    for name in sorted(os.listdir(folder)):
        print(f"{name:12} {(folder / name).stat().st_size:>10,} bytes")
    """),
    code("""
    print(saved.issue_text()[:1200])
    """),
    md("""
    ## The repro in the picture

    `builds.with_repros()` adds the smallest failing part of every failed engine to the builds;
    the picture then says how many nodes it has, and the full view (`view="full"`) draws those
    nodes with an orange border. From the command line, `hierviz check gpt2 --min-block-size 3
    --build --repro DIR` writes one repro per failed engine.
    """),
    code("""
    with_repros = gpt2_builds.with_repros()
    gpt2.render("collapsed", builds=with_repros)
    """),
]

NOTEBOOK_CELLS = {
    "01_explore.ipynb": EXPLORE,
    "02_compare.ipynb": COMPARE,
    "03_export.ipynb": EXPORT,
    "04_your_model.ipynb": YOUR_MODEL,
    "05_build.ipynb": BUILD,
}


def build(name: str) -> nbformat.NotebookNode:
    stem = name.split("_", 1)[0]
    nb = v4.new_notebook()
    nb.metadata = {"kernelspec": dict(KERNELSPEC), "language_info": dict(LANGUAGE_INFO)}
    for i, (kind, source) in enumerate(NOTEBOOK_CELLS[name]):
        cell = v4.new_markdown_cell(source) if kind == "markdown" else v4.new_code_cell(source)
        cell.id = f"nb{stem}-{i:02d}"
        nb.cells.append(cell)
    nbformat.validate(nb)
    return nb


def text_of(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="report notebooks that differ, write nothing")
    parser.add_argument("--out", type=Path, default=NOTEBOOKS, help="folder to write to (default notebooks/)")
    args = parser.parse_args(argv)
    stale = []
    for name in NOTEBOOK_CELLS:
        path = args.out / name
        text = text_of(build(name))
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(path)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    if stale:
        print("out of date (run scripts/make_notebooks.py): " + ", ".join(str(p) for p in stale), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
