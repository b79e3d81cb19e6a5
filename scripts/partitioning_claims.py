"""Run the examples of docs/partitioning.md: for each deliberate difference from upstream's
partitioner, what upstream does and what hierviz does. Needs torch_tensorrt (CPU is enough).

    python scripts/partitioning_claims.py
"""
import operator

import torch

import hierviz as hv
from hierviz import trt
from hierviz.partitioner.upstream.hierarchical import copy_graph_module
from torch.fx.passes.shape_prop import ShapeProp

aten = torch.ops.aten
A = "torch.ops.aten."


def graph(build, *inputs):
    g = torch.fx.Graph()
    xs = [g.placeholder(f"x{i}") for i in range(len(inputs))]
    out = build(g, *xs)
    g.output(out)
    gm = torch.fx.GraphModule(torch.nn.Module(), g)
    ShapeProp(gm).propagate(*inputs)
    return gm


X = torch.randn(2, 3)

print("== 1 preference / fewer subgraphs: resnet18, inductor={conv} first, mbs=2")
m, x = hv.zoo.load("resnet18")
r18 = hv.capture(m, x)
cfg = hv.Config(priority=("inductor", "tensorrt"), support={"inductor": hv.support.ops([A + "convolution.default"])},
                min_block_size=2)
ours = hv.partition(r18, config=cfg).stats["subgraphs"]
ups = []
keep = []
for k in range(5):
    keep.append([object() for _ in range(100 * (k + 1))])
    ups.append(hv.partition(r18, config=cfg, engine="torch_tensorrt").stats["subgraphs"])
print("hierviz", ours, "upstream", ups)

print("== 2 mutation / DCE / second call")


def dead(g, x):
    a = g.call_function(aten.relu.default, (x,))
    g.call_function(aten.neg.default, (x,))
    return a
gm = graph(dead, X)
before = len(gm.graph.nodes)
p = hv.partition(gm, min_block_size=1)
print("hierviz: nodes before/after", before, len(gm.graph.nodes), "backend of dead neg:", p.backend_of("neg_default"),
      "module ok:", torch.equal(p.module(X), gm(X)))
trt.run_upstream_partitioner(gm, min_block_size=1)
print("upstream: nodes after", len(gm.graph.nodes),
      "tagged:", [getattr(n, "tag", None) for n in gm.graph.nodes if n.op == "call_function"])
try:
    trt.run_upstream_partitioner(gm, min_block_size=1)
except hv.ConfigError as e:  # upstream's FxNetSplitterInternalError: relu_default was already tagged
    print("upstream second call:", type(e).__name__, e)

print("== 3 op counts")
_, tester = trt.run_upstream_partitioner(copy_graph_module(r18))
print("upstream supported_operators (first 3):", list(tester.supported_operators.items())[:3])
ops = hv.partition(r18).ops().set_index("op")
print("hierviz ops() conv count:", ops.loc[A + "convolution.default", "count"],
      "relu:", ops.loc[A + "relu.default", "count"])

print("== 4 require_full_compilation")
m, x = hv.zoo.load("tiny_conv")
tc = hv.capture(m, x)
cfg2 = hv.Config(priority=("inductor", "tensorrt"), support={"inductor": hv.support.ops([A + "convolution.default"])},
                 require_full_compilation=True)
print("hierviz:", [sg.tag for sg in hv.partition(tc, config=cfg2).subgraphs])
try:
    trt.run_upstream_partitioner(copy_graph_module(tc), backend_priority=["inductor", "tensorrt"],
                                 backend_support_map={"inductor": {A + "convolution.default"},
                                                      "tensorrt": hv.support.tensorrt().names},
                                 require_full_compilation=True)
except AssertionError as e:
    print("upstream: AssertionError:", e)


def unsup(g, x):
    return g.call_function(aten.relu.default, (g.call_function(aten.frac.default, (x,)),))
try:
    hv.partition(graph(unsup, X), require_full_compilation=True)
except hv.ConfigError as e:
    print("hierviz ConfigError:", e)

print("== 5 non-compute nodes")


def gi(g, x):
    s = g.call_function(aten.sort.default, (x,))
    r = g.call_function(aten.relu.default, (x,))
    v = g.call_function(operator.getitem, (s, 0))
    return (r, v)
gm = graph(gi, X)
cfg5 = hv.Config(min_block_size=1, torch_executed_ops={A + "sort.default"})
ours = hv.partition(gm, config=cfg5)
theirs = hv.partition(gm, config=cfg5, engine="torch_tensorrt")
print("getitem of a torch sort after a tensorrt relu: hierviz", ours.backend_of("getitem"),
      [(s.tag, s.nodes) for s in ours.subgraphs],
      "| upstream eligible", theirs.eligible_backend_of("getitem"), [(s.tag, s.nodes) for s in theirs.subgraphs])


def vw(g, x):
    f = g.call_function(aten.frac.default, (x,))
    v = g.call_function(aten.view.default, (f, [3, 2]))
    return g.call_function(aten.special_i0e.default, (v,))
gm = graph(vw, X)
ours = hv.partition(gm, min_block_size=1)
theirs = hv.partition(gm, min_block_size=1, engine="torch_tensorrt")
print("view between two unsupported ops: hierviz", [s.tag for s in ours.subgraphs],
      "| upstream", [s.tag for s in theirs.subgraphs])



def vd(g, x):
    r = g.call_function(aten.relu.default, (x,))
    v = g.call_function(aten.view.dtype, (r, torch.int32))
    return g.call_function(aten.add.Tensor, (v, 1))
gm = graph(vd, X)
for validate in (False, True):
    ours = hv.partition(gm, min_block_size=1, support={"tensorrt": hv.support.tensorrt(validate=validate)})
    print(f"relu -> view(int32) -> add, validate={validate}: hierviz", [(s.tag, s.nodes) for s in ours.subgraphs])
theirs = hv.partition(gm, min_block_size=1, engine="torch_tensorrt")
print("  upstream", [(s.tag, s.nodes) for s in theirs.subgraphs])

print("== 5b what TorchInductor compiles: bert (2 layers), priority=('inductor',)")
m, x = hv.zoo.load("bert")
bert = hv.capture(m, x)
for fb in (True, False):
    p = hv.partition(bert, priority=("inductor",), support={"inductor": hv.support.inductor(fallbacks=fb)},
                     min_block_size=1)
    print(f"inductor(fallbacks={fb}):", p.stats["subgraphs_by_backend"])
p = hv.partition(bert, priority=("inductor",), support={"inductor": hv.support.inductor()}, min_block_size=1)
rc = next(n.name for n in bert.graph.nodes if "_reshape_copy" in str(n.target))
print(" ", rc, "->", p.reason_of(rc))
print("  nonzero:", hv.support.inductor().rejection(A + "nonzero.default"))

print("== 6 fallback name")
gm = graph(unsup, X)
w = copy_graph_module(gm)
trt.run_upstream_partitioner(w, min_block_size=1)
print("upstream node.backend:", [getattr(n, "backend", None) for n in w.graph.nodes if n.op == "call_function"],
      "| hierviz backend_of:",
      [hv.partition(gm, min_block_size=1).backend_of(n) for n in ("frac_default", "relu_default")])

print("== 7 torch_executed_ops forms")


def adds(g, x):
    a = g.call_function(aten.add.Tensor, (x, x))
    b = g.call_function(aten.add.Scalar, (a, 1.0))
    return g.call_function(aten.relu.default, (b,))
gm = graph(adds, X)
ours = hv.partition(gm, min_block_size=1, torch_executed_ops={"torch.ops.aten.add"})
theirs = hv.partition(gm, min_block_size=1, torch_executed_ops={"torch.ops.aten.add"}, engine="torch_tensorrt")
print("packet 'torch.ops.aten.add': hierviz", [ours.backend_of(n) for n in ("add_tensor", "add_scalar")],
      "| upstream", [theirs.backend_of(n) for n in ("add_tensor", "add_scalar")])
w = copy_graph_module(gm)
trt.run_upstream_partitioner(w, min_block_size=1, torch_executed_ops={"torch.ops.aten.add.Tensr"})
print("typo 'add.Tensr': upstream silently",
      [getattr(n, "backend", None) for n in w.graph.nodes if n.op == "call_function"])
try:
    hv.partition(gm, torch_executed_ops={"torch.ops.aten.add.Tensr"})
except hv.ConfigError as e:
    print("hierviz:", e)

print("== 8 validators")


def md(g, x):
    m = g.call_function(aten.max.dim, (x, 1))
    return (g.call_function(operator.getitem, (m, 0)), g.call_function(operator.getitem, (m, 1)))
gm = graph(md, X)
ours = hv.partition(gm, min_block_size=1, support={"tensorrt": hv.support.tensorrt(validate=True)})
theirs = hv.partition(gm, min_block_size=1, engine="torch_tensorrt")
print("max.dim with both outputs used: hierviz validate=True", ours.backend_of("max_dim"),
      "|", ours.reason_of("max_dim"), "| upstream", theirs.backend_of("max_dim"))

print("== 9 _guards_fn")


class Tiny(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x) + 1
ep = torch.export.export(Tiny(), (X,))
mod = ep.module()
print("exported module has _guards_fn:",
      any(n.op == "call_module" and "_guards_fn" in str(n.target) for n in mod.graph.nodes))
up, _ = trt.run_upstream_partitioner(copy_graph_module(mod), min_block_size=1)  # hv.partition would capture it
print("upstream on ep.module():", [n for n, _ in up.named_children()])
cap = hv.capture(Tiny(), (X,))
print("hv.capture call_modules:", [n.target for n in cap.graph.nodes if n.op == "call_module"],
      "| partition:", [n for n, _ in hv.partition(cap, min_block_size=1).module.named_children()])

print("== 11 fusion groups in graph order")
from torch.fx.passes.tools_common import FxNetAccFusionsFinder


def fz(g, x):
    t = g.call_function(aten.tanh.default, (x,))
    u = g.call_function(aten.frac.default, (t,))
    m = g.call_function(aten.mul.Tensor, (u, u))
    k = g.call_function(aten.relu.default, (m,))
    return g.call_function(aten.add.Tensor, (t, k))
gm = graph(fz, X)
for n in gm.graph.nodes:
    if n.name in ("tanh_default", "mul_tensor"):
        del n.meta["tensor_meta"]
acc = [n for n in gm.graph.nodes if n.op == "call_function" and n.name != "frac_default"]


class Ordered(set):
    def __init__(self, items, order):
        super().__init__(items)
        self.order = order
    def __iter__(self): return iter([n for n in self.order if set.__contains__(self, n)])
for name, order in (("graph order", acc), ("reversed", acc[::-1])):
    res = FxNetAccFusionsFinder(gm, Ordered(acc, order))()
    print(f"torch.fx finder, seeds in {name}:",
          sorted({n.name: sorted(m.name for m in g) for n, g in res.items()}.items()))
from hierviz.partitioner.engine.graph_index import index_graph
from hierviz.partitioner.engine.passes.fusion import fusions
idx = index_graph(gm)
p = hv.partition(gm, min_block_size=1)
eligible = [p.eligible_backend_of(n) != "torch" and idx.callable[i] for i, n in enumerate(idx.names)]
print("hierviz:", {idx.names[i]: sorted(idx.names[j] for j in g) for i, g in fusions(idx, eligible).items()})

print("== 10 linear time: run benchmarks/partition_scale.py")
