"""Built-in models with random weights (no downloads), and generated aten graphs for scale.

    model, example_inputs = hv.zoo.load("resnet18")
    gm = hv.zoo.synthetic(200_000)          # an aten GraphModule of 200k nodes
    gm(*hv.zoo.synthetic_inputs(gm))

Every model is built under `torch.manual_seed(SEED)` inside a forked RNG, so two loads give
identical weights and inputs and the caller's random state is left alone.
"""

from __future__ import annotations

import random
from typing import Callable

import torch
from torch import nn

from hierviz.errors import ConfigError, checked_arguments
from hierviz.foundation.gcpause import gc_paused

SEED = 0

# Small transformer sizes: a few layers, so capture takes seconds, not minutes.
_VOCAB = 1000
_SEQ = 16
_HIDDEN = 128
_HEADS = 4
_LAYERS = 2


class TinyConv(nn.Module):
    """conv-bn-relu twice, as in upstream Torch-TensorRT's hierarchical partitioner example."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=3, stride=1, padding=1)
        self.bn1 = nn.BatchNorm2d(64)
        self.conv2 = nn.Conv2d(64, 128, kernel_size=3, stride=1, padding=1)
        self.bn2 = nn.BatchNorm2d(128)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(x)))


class TensorOutput(nn.Module):
    """A Hugging Face model that returns one plain tensor (`logits` or `last_hidden_state`),
    so torch.export sees no ModelOutput or cache object."""

    def __init__(self, model: nn.Module, field: str) -> None:
        super().__init__()
        self.model = model
        self.field = field

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        out = self.model(input_ids=input_ids, use_cache=False, return_dict=True) \
            if self.field == "logits" else self.model(input_ids=input_ids, return_dict=True)
        return getattr(out, self.field)


def _image() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 3, 224, 224),)


def _tokens() -> tuple[torch.Tensor, ...]:
    return (torch.randint(0, _VOCAB, (1, _SEQ), dtype=torch.long),)


def _tiny_conv() -> tuple[nn.Module, tuple]:
    return TinyConv(), _image()


def _calibrate_batchnorm(model: nn.Module, inputs: tuple) -> None:
    """Set BatchNorm running statistics from one pass over `inputs`. With default statistics
    (mean 0, var 1) random-weight mobile nets shrink their activations to ~1e-10, which makes
    output comparisons meaningless."""
    norms = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    momenta = [m.momentum for m in norms]
    for m in norms:
        m.reset_running_stats()
        m.momentum = None  # a plain average over the passes made
    model.train()
    with torch.no_grad():
        model(*inputs)
    for m, momentum in zip(norms, momenta):
        m.momentum = momentum
    model.eval()


def _randomize_zero_heads(model: nn.Module) -> None:
    """torchvision starts some classifier heads at zero (ViT); give them small random weights
    so the output is not identically zero."""
    for m in model.modules():
        if isinstance(m, nn.Linear) and not m.weight.any():
            nn.init.normal_(m.weight, std=0.02)


def _torchvision(name: str, calibrate: bool = False) -> Callable[[], tuple[nn.Module, tuple]]:
    def build() -> tuple[nn.Module, tuple]:
        import torchvision

        model, inputs = getattr(torchvision.models, name)(weights=None), _image()
        _randomize_zero_heads(model)
        if calibrate:
            _calibrate_batchnorm(model, inputs)
        return model, inputs

    build.__name__ = name
    return build


def _bert() -> tuple[nn.Module, tuple]:
    from transformers import BertConfig, BertModel

    config = BertConfig(vocab_size=_VOCAB, hidden_size=_HIDDEN, num_hidden_layers=_LAYERS,
                        num_attention_heads=_HEADS, intermediate_size=4 * _HIDDEN,
                        max_position_embeddings=64, use_cache=False)
    return TensorOutput(BertModel(config, add_pooling_layer=False), "last_hidden_state"), _tokens()


def _gpt2() -> tuple[nn.Module, tuple]:
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(vocab_size=_VOCAB, n_embd=_HIDDEN, n_layer=_LAYERS, n_head=_HEADS,
                        n_positions=64, use_cache=False,
                        bos_token_id=_VOCAB - 1, eos_token_id=_VOCAB - 1)
    return TensorOutput(GPT2LMHeadModel(config), "logits"), _tokens()


def _llama() -> tuple[nn.Module, tuple]:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=_VOCAB, hidden_size=_HIDDEN, intermediate_size=2 * _HIDDEN,
                         num_hidden_layers=_LAYERS, num_attention_heads=_HEADS,
                         num_key_value_heads=_HEADS // 2, max_position_embeddings=64,
                         use_cache=False)
    return TensorOutput(LlamaForCausalLM(config), "logits"), _tokens()


_MODELS: dict[str, Callable[[], tuple[nn.Module, tuple]]] = {
    "tiny_conv": _tiny_conv,
    "resnet18": _torchvision("resnet18"),
    "resnet50": _torchvision("resnet50"),
    "mobilenet_v3_small": _torchvision("mobilenet_v3_small", calibrate=True),
    "efficientnet_b0": _torchvision("efficientnet_b0", calibrate=True),
    "vit_b_16": _torchvision("vit_b_16"),
    "bert": _bert,
    "gpt2": _gpt2,
    "llama": _llama,
}

_DESCRIPTIONS = {
    "tiny_conv": "conv-bn-relu x2 (upstream's partitioner example), input 1x3x224x224",
    "resnet18": "torchvision resnet18, input 1x3x224x224",
    "resnet50": "torchvision resnet50, input 1x3x224x224",
    "mobilenet_v3_small": "torchvision mobilenet_v3_small, input 1x3x224x224",
    "efficientnet_b0": "torchvision efficientnet_b0, input 1x3x224x224",
    "vit_b_16": "torchvision vit_b_16, input 1x3x224x224",
    "bert": f"BERT encoder, {_LAYERS} layers, hidden {_HIDDEN}, input ids 1x{_SEQ}",
    "gpt2": f"GPT-2 LM, {_LAYERS} layers, hidden {_HIDDEN}, input ids 1x{_SEQ}",
    "llama": f"Llama LM, {_LAYERS} layers, hidden {_HIDDEN}, GQA, input ids 1x{_SEQ}",
}


def names() -> list[str]:
    """The names `load` accepts."""
    return list(_MODELS)


def describe(name: str) -> str:
    """One line saying what a zoo model is."""
    _check(name)
    return _DESCRIPTIONS[name]


def _check(name: str) -> None:
    if not isinstance(name, str) or name not in _MODELS:
        raise ConfigError(f"unknown zoo model {name!r}; choose one of: {', '.join(_MODELS)}.")


@checked_arguments
def load(name: str) -> tuple[nn.Module, tuple]:
    """`(model, example_inputs)`: the model in eval mode with random weights seeded by SEED
    (identical on every load), example_inputs a tuple of tensors."""
    _check(name)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        try:
            model, inputs = _MODELS[name]()
        except ImportError as exc:
            raise ConfigError(
                f"zoo model {name!r} needs {exc.name or 'an optional package'}: "
                "pip install 'hierviz[zoo]' (torchvision, transformers)."
            ) from exc
    return model.eval(), tuple(inputs)


# ---------------------------------------------------------------------------- synthetic graphs

SYNTHETIC_SHAPE = (2, 8)

_aten = torch.ops.aten
# Elementwise ops on one float tensor that keep its shape. The last ones have no TensorRT
# converter, so a synthetic graph always has something to split off.
_UNARY = [
    (_aten.relu.default, 6), (_aten.sigmoid.default, 4), (_aten.tanh.default, 4),
    (_aten.neg.default, 2), (_aten.abs.default, 2), (_aten.exp.default, 1),
    (_aten.frac.default, 1), (_aten.special_i0e.default, 1),
]
_BINARY = [
    (_aten.add.Tensor, 6), (_aten.mul.Tensor, 4), (_aten.sub.Tensor, 2),
    (_aten.maximum.default, 1), (_aten.copysign.Tensor, 1), (_aten.hypot.default, 1),
]
# Ops in SYNTHETIC_UNSUPPORTED are absent from Torch-TensorRT's converter registry (2.14).
SYNTHETIC_UNSUPPORTED = frozenset({
    "torch.ops.aten.frac.default", "torch.ops.aten.special_i0e.default",
    "torch.ops.aten.copysign.Tensor", "torch.ops.aten.hypot.default",
})


@checked_arguments
def synthetic(nodes: int, *, seed: int = 0) -> torch.fx.GraphModule:
    """An aten GraphModule of exactly `nodes` nodes (2 placeholders, 1 output), built directly
    with `torch.fx.Graph` so it scales to hundreds of thousands of nodes.

    Elementwise aten ops on `SYNTHETIC_SHAPE` float32 tensors, with branches (a node feeding
    several others), skip connections (inputs from up to ~1000 nodes back) and a few `view`s;
    a few percent of the ops have no TensorRT converter. Every node carries `meta["val"]` and
    `meta["tensor_meta"]`. The same `nodes` and `seed` give the same graph; run it with
    `gm(*synthetic_inputs(gm))`.

    The module's Python code is generated on first use (a lazy GraphModule, as TorchInductor
    uses), so building costs only the graph; the first call or `.code` of a 200k-node graph
    then takes torch.fx's usual several seconds of code generation.
    """
    for name, value in (("nodes", nodes), ("seed", seed)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"synthetic: {name} must be an int, not {type(value).__name__} {value!r:.40}.")
    if nodes < 4:
        raise ConfigError(f"synthetic graphs need at least 4 nodes, got {nodes}.")
    with gc_paused():  # the collector would rescan the growing graph again and again
        graph = _synthetic_graph(nodes, seed)
    gm = _graph_module(graph)
    gm.meta["synthetic"] = {"nodes": nodes, "seed": seed, "shape": SYNTHETIC_SHAPE}
    return gm


def _graph_module(graph: torch.fx.Graph) -> torch.fx.GraphModule:
    try:
        from torch.fx._lazy_graph_module import _LazyGraphModule
    except ImportError:  # older torch: generate the code now
        return torch.fx.GraphModule(torch.nn.Module(), graph, class_name="SyntheticGraph")
    return _LazyGraphModule(torch.nn.Module(), graph, class_name="SyntheticGraph")


def _synthetic_graph(nodes: int, seed: int) -> torch.fx.Graph:
    from torch.fx.passes.shape_prop import _extract_tensor_metadata

    rng = random.Random(seed)
    unary_ops = [op for op, _ in _UNARY]
    unary_w = [w for _, w in _UNARY]
    binary_ops = [op for op, _ in _BINARY]
    binary_w = [w for _, w in _BINARY]
    # Draw all choices up front: far faster than one rng call per decision.
    body = nodes - 3
    kinds = rng.choices(("unary", "binary", "view"), weights=(55, 42, 3), k=body)
    unary_draw = iter(rng.choices(unary_ops, unary_w, k=body))
    binary_draw = iter(rng.choices(binary_ops, binary_w, k=body))

    template = torch.empty(SYNTHETIC_SHAPE)
    tensor_meta = _extract_tensor_metadata(template)  # immutable, shared by every node
    shape = list(SYNTHETIC_SHAPE)

    graph = torch.fx.Graph()

    def mark(node: torch.fx.Node) -> torch.fx.Node:
        node.meta["val"] = torch.empty(SYNTHETIC_SHAPE)
        node.meta["tensor_meta"] = tensor_meta
        return node

    x = mark(graph.placeholder("x"))
    y = mark(graph.placeholder("y"))
    recent: list[torch.fx.Node] = [x]
    bypassed: list[torch.fx.Node] = [y]  # nodes a branch left behind; merged back when drawn

    def earlier() -> torch.fx.Node:
        """An input for a branch or skip: a recently bypassed node first, else one from the past."""
        while bypassed and bypassed[-1].users:
            bypassed.pop()
        if bypassed and rng.random() < 0.7:
            return bypassed[rng.randrange(max(0, len(bypassed) - 4), len(bypassed))]
        span = 1000 if rng.random() < 0.05 else 32
        return recent[rng.randrange(max(0, len(recent) - span), len(recent))]

    for kind in kinds:
        last = recent[-1]
        if kind == "view":
            node = graph.call_function(_aten.view.default, (last, shape))
        elif kind == "unary":
            src = last if rng.random() < 0.85 else earlier()
            node = graph.call_function(next(unary_draw), (src,))
        else:
            other = earlier()
            if other is last:
                other = recent[-2] if len(recent) > 1 else y
            node = graph.call_function(next(binary_draw), (last, other))
        if not last.users:
            bypassed.append(last)
        recent.append(mark(node))
        if len(recent) > 4096:
            del recent[:2048]
    final = recent[-1]
    outputs = [final] + [n for n in dict.fromkeys(bypassed) if not n.users and n is not final]
    graph.output(tuple(outputs) if len(outputs) > 1 else outputs[0])
    return graph


def synthetic_inputs(gm: torch.fx.GraphModule, seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Random inputs for a graph from `synthetic` (one per placeholder, its meta shape)."""
    gen = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(tuple(n.meta["val"].shape), generator=gen)
                 for n in gm.graph.nodes if n.op == "placeholder")


__all__ = ["names", "describe", "load", "synthetic", "synthetic_inputs", "SYNTHETIC_SHAPE",
           "SYNTHETIC_UNSUPPORTED", "SEED"]
