"""How long hierviz's diagrams take, from zoo models to LLM-sized synthetic graphs.

    python benchmarks/render_scale.py            # everything (several minutes, mostly captures)
    python benchmarks/render_scale.py --quick    # tiny_conv, bert, resnet50, 10k/50k; no 4k full view
    python benchmarks/render_scale.py --modules  # the module view of a 24-layer Llama; 200k auto

Each row: the view `auto` picked, what it drew, the time to build the DOT text and the time
graphviz's `dot` took to lay it out as SVG (the total is what a notebook waits for).
Targets (issue 4): auto view <= 3 s at 50k nodes; resnet50 full view <= 1 s.
Targets (issue 14): module view of a 24-layer Llama (SDPA, sigmoid in PyTorch) <= 1 s to SVG and
under 2,000 px high; auto view of a 200k-node synthetic graph <= 3 s.

Beside them, in the same run: graphviz on the full view of a 4k-node graph (why auto
collapses), and upstream torch.fx's FxGraphDrawer on a small graph (needs pydot).
Partitions use an inductor/tensorrt mix: TensorRT's converter registry without add, gelu and
layer_norm, which go to TorchInductor (zoo models); TensorRT plus TorchInductor for what
TensorRT lacks (synthetic graphs).
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hierviz as hv
from hierviz.foundation.opnames import qualname
from hierviz.drawing import budget, graphviz_run, views

MIX_TO_INDUCTOR = ("torch.ops.aten.add.Tensor", "torch.ops.aten.gelu.default",
                   "torch.ops.aten.native_layer_norm.default")


def mix_config(synthetic: bool) -> dict:
    if synthetic:
        return {"support": {"inductor": hv.support.inductor()}}
    trt = hv.support.tensorrt()
    without = hv.support.where(lambda n: qualname(n.target) not in MIX_TO_INDUCTOR and trt.check(n)[0],
                               name="tensorrt_minus_add_gelu_layernorm")
    return {"support": {"tensorrt": without, "inductor": hv.support.inductor()}, "min_block_size": 2}


def dot_svg(source: str, timeout: float) -> float | None:
    """Seconds dot takes to lay `source` out as SVG (uncached); None past `timeout`."""
    start = time.perf_counter()
    try:
        subprocess.run([graphviz_run.check_dot(), "-Tsvg"], input=source.encode("utf-8"), capture_output=True,
                       timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return time.perf_counter() - start


def row(label: str, part: "hv.Partition", view: str = "auto", timeout: float = 600.0, **kw) -> None:
    start = time.perf_counter()
    graph = part.render(view, **kw)
    built = time.perf_counter() - start
    laid = dot_svg(graph.source, timeout)
    info = graph.info
    drawn = f"{info['nodes']:,} {'boxes+io' if info['view'] == 'collapsed' else 'nodes'}"
    if info.get("grouped"):
        drawn += f" ({info['group_size']} subgraphs/box)"
    laid_text = f"> {timeout:.0f} s" if laid is None else f"{laid:6.2f} s"
    total = "" if laid is None else f"{built + laid:6.2f} s"
    print(f"{label:28s} {part.stats['nodes']:>8,} {len(part.subgraphs):>6,}  {info['view']:9s} "
          f"{drawn:30s} {built:6.2f} s {laid_text:>9s} {total:>9s}", flush=True)


def header() -> None:
    print(f"{'graph':28s} {'nodes':>8s} {'subgr':>6s}  {'view':9s} {'drawn':30s} "
          f"{'DOT':>8s} {'dot':>9s} {'total':>9s}")


def zoo_rows(names: list[str]) -> dict[str, "hv.Partition"]:
    parts = {}
    for name in names:
        model, inputs = hv.zoo.load(name)
        gm = hv.capture(model, inputs)
        part = hv.partition(gm, **mix_config(False))
        parts[name] = part
        row(name, part)
    return parts


def synthetic_rows(sizes: list[int]) -> None:
    for n in sizes:
        gm = hv.zoo.synthetic(n)
        start = time.perf_counter()
        part = hv.partition(gm, **mix_config(True))
        took = time.perf_counter() - start
        row(f"synthetic({n:,})", part)
        print(f"{'':28s} (partitioning, not counted: {took:.1f} s)", flush=True)


def residual_chain(nodes: int) -> "torch.fx.GraphModule":  # noqa: F821
    """An aten graph shaped like a real network: blocks of mm-relu-add-... with a residual
    connection per block (local skips only, unlike zoo.synthetic's long-range ones)."""
    import torch
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    aten = torch.ops.aten
    graph = torch.fx.Graph()
    val = torch.empty(4, 16)
    meta = _extract_tensor_metadata(val)

    def mark(node):
        node.meta["val"], node.meta["tensor_meta"] = torch.empty(4, 16), meta
        return node

    x = mark(graph.placeholder("x"))
    w = mark(graph.placeholder("w"))
    w.meta["val"] = torch.empty(16, 16)
    pattern = [aten.mm.default, aten.relu.default, aten.mul.Tensor, aten.special_i0e.default,
               aten.sigmoid.default, aten.mm.default, aten.tanh.default, aten.add.Tensor]
    cur, block_in, count = x, x, 3
    while count < nodes:
        for op in pattern:
            if count >= nodes:
                break
            if op is aten.mm.default:
                cur = graph.call_function(op, (cur, w))
            elif op is aten.add.Tensor:
                cur = graph.call_function(op, (cur, block_in))
                block_in = cur
            elif op is aten.mul.Tensor:
                cur = graph.call_function(op, (cur, cur))
            else:
                cur = graph.call_function(op, (cur,))
            mark(cur)
            count += 1
    graph.output(cur)
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def full_view_4k(timeout: float) -> None:
    print("\nWhy auto collapses: graphviz on the FULL view of 1k-4k-node graphs (auto draws them "
          f"collapsed; dot abandoned after {timeout:.0f} s)")
    header()
    chains = {n: hv.partition(residual_chain(n), **mix_config(True)) for n in (1_000, 2_000, 4_000)}
    for n, part in chains.items():
        row(f"residual_chain({n:,}) full", part, "full", timeout=timeout)
    # what the full view costs when dot places the edge labels itself (hierviz switches to
    # xlabels above its label budget: budget.py decides before the DOT is written)
    row("  same 1k, dot-placed labels", chains[1_000], "full", timeout=min(timeout, 60.0), max_nodes=10**9)
    row("residual_chain(4,000) auto", chains[4_000])
    part = hv.partition(hv.zoo.synthetic(4_000), **mix_config(True))
    row("synthetic(4,000) full", part, "full", timeout=timeout)
    row("synthetic(4,000) auto", part)


def upstream_drawer(parts: dict[str, "hv.Partition"]) -> None:
    print("\nUpstream torch.fx FxGraphDrawer on the same graphs (one node per aten node, no partition):")
    try:
        import pydot  # noqa: F401
        from torch.fx.passes.graph_drawer import FxGraphDrawer
    except ImportError as exc:
        print(f"  skipped: {exc} (pip install pydot)")
        return
    for name, part in parts.items():
        start = time.perf_counter()
        try:
            drawer = FxGraphDrawer(part.graph, name)
            dot = drawer.get_dot_graph()
            built = time.perf_counter() - start
            start = time.perf_counter()
            dot.create_svg()
            laid = time.perf_counter() - start
            print(f"  {name:26s} {len(part.graph.graph.nodes):>6,} nodes  DOT {built:6.2f} s  dot {laid:6.2f} s  "
                  f"total {built + laid:6.2f} s", flush=True)
        # reported, the benchmark goes on: pydot missing (FxGraphDrawer's RuntimeError), a node it cannot
        # draw (its AssertionError), dot missing (OSError) or failing (pydot's AssertionError)
        except (RuntimeError, AssertionError, OSError, ValueError, TypeError) as exc:
            print(f"  {name:26s} failed: {type(exc).__name__}: {str(exc)[:200]}")
        if name == "resnet50":
            start = time.perf_counter()
            hv_svg = graphviz_run._run_dot(graphviz_run.check_dot(), part.render("full").source, "svg", 600)
            print(f"  {'(hierviz full view, same)':26s} {'':>12s}  total {time.perf_counter() - start:6.2f} s "
                  f"({len(hv_svg) // 1024} KiB SVG)")


def llama_24() -> "torch.fx.GraphModule":  # noqa: F821
    """A 24-layer Llama-style decoder (transformers config, random weights, use_cache=False), captured."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=24,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, use_cache=False)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = hv.zoo.TensorOutput(LlamaForCausalLM(config).eval(), "logits")
        ids = torch.randint(0, 1000, (1, 16))
    return hv.capture(model, (ids,))


def height_px(svg: bytes) -> int:
    import re

    m = re.search(rb'<svg width="([\d.]+)pt" height="([\d.]+)pt"', svg)
    return round(float(m.group(2)) * 4 / 3) if m else -1


def module_view_rows(timeout: float) -> None:
    """Issue 14: the module view of a 24-layer Llama with SDPA and sigmoid forced to PyTorch:
    <= 1 s to a laid-out SVG, image height < 2,000 px thanks to the roll-up; beside it the
    collapsed and full views of the same partition."""
    start = time.perf_counter()
    gm = llama_24()
    print(f"(capture of the 24-layer Llama, not counted: {time.perf_counter() - start:.1f} s)")
    part = hv.partition(gm, torch_executed_ops={"torch.ops.aten.scaled_dot_product_attention.default",
                                                "torch.ops.aten.sigmoid.default"})
    print(f"{'view':10s} {'nodes':>7s} {'subgr':>6s} {'drawn':>6s} {'DOT':>8s} {'dot':>8s} {'total':>8s} "
          f"{'height':>9s}  rolled up")
    for view in ("modules", "collapsed", "full"):
        start = time.perf_counter()
        graph = part.render(view)
        built = time.perf_counter() - start
        start = time.perf_counter()
        try:
            proc = subprocess.run([graphviz_run.check_dot(), "-Tsvg"], input=graph.source.encode("utf-8"),
                                  capture_output=True, timeout=timeout, check=True)
        except subprocess.TimeoutExpired:
            print(f"{view:10s} dot > {timeout:.0f} s")
            continue
        laid = time.perf_counter() - start
        info = graph.info
        print(f"{view:10s} {part.stats['nodes']:>7,} {len(part.subgraphs):>6,} {info['nodes']:>6,} {built:6.2f} s "
              f"{laid:6.2f} s {built + laid:6.2f} s {height_px(proc.stdout):>6,} px  "
              f"{', '.join(info.get('rolled_up', [])) or '-'}", flush=True)
    print("Targets: modules total <= 1 s and height < 2,000 px.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer models, no 200k graph, no 4k full view")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a dot run is abandoned")
    parser.add_argument("--modules", action="store_true",
                        help="only the module-view rows (24-layer Llama) and the 200k-node auto view")
    args = parser.parse_args()

    dot_version = subprocess.run([graphviz_run.check_dot(), "-V"], capture_output=True, text=True).stderr.strip()
    print(f"hierviz {hv.__version__}, {dot_version}, Python {platform.python_version()}, "
          f"{os.cpu_count()} CPUs; auto view: full up to max_nodes={views.DEFAULT_MAX_NODES} "
          f"(and layout work <= {budget.layout_budget(views.DEFAULT_MAX_NODES):,}), else collapsed\n")
    if args.modules:
        print("Module view (issue 14):")
        module_view_rows(args.timeout)
        print("\nTarget: auto view of a 200k-node synthetic graph <= 3 s")
        header()
        synthetic_rows([200_000])
        return
    models = ["tiny_conv", "bert", "resnet50"] if args.quick else \
        ["tiny_conv", "resnet18", "resnet50", "mobilenet_v3_small", "efficientnet_b0", "vit_b_16", "bert", "gpt2",
         "llama"]
    print("Auto view (what Partition.render() / the notebook draw):")
    header()
    parts = zoo_rows(models)
    synthetic_rows([10_000, 50_000] if args.quick else [10_000, 50_000, 200_000])

    print("\nTarget: resnet50 full view <= 1 s")
    header()
    row("resnet50 full", parts["resnet50"], "full")

    if not args.quick:
        print("\nModule view (issue 14):")
        module_view_rows(args.timeout)
        full_view_4k(args.timeout)
    upstream_drawer({k: parts[k] for k in ("bert", "resnet50") if k in parts})


if __name__ == "__main__":
    main()
