"""The build cache's keys: what makes two builds the same engine.

A build is keyed by a SHA-256 over
  - the subgraph's content: its ops and their arguments (node names left out), the shape and
    dtype of each input (`meta['val']`, what Torch-TensorRT builds the engine's inputs from),
    the weights' shapes, dtypes and values (an engine holds its weights);
  - each input's optimization profile (min, opt and max shapes: a dynamic dimension's range
    and its example size, `optimization_profiles`), which a symbol's name alone does not say;
  - the conversion settings (the user's trt_settings, and TF32 on or off);
  - the installed torch, Torch-TensorRT and TensorRT versions (read from their metadata).
"""

from __future__ import annotations

from typing import Any

import torch

from hierviz.building.optimization_profiles import key_of as profile_key
from hierviz.capturing.graph_codec import fetch_attr
from hierviz.foundation.digests import digest, tensor_digest, tensor_digests, tensor_key
from hierviz.trt.loading import installed_distribution, library_version
from hierviz.trt.compilation_settings import conversion_fields, settings_digest

# v2: profile and effective settings; v3: upstream's shape check first; v4: a failed build names the
# builder's error, not a CUDA runtime error logged after it; v5: a failed conversion names the error
# TensorRT logged, where it logged one; v6: a line cut to fit says so (EngineBuild.error_cut), cut after a whole word
KEY_VERSION = "hierviz-build-v6"


def _value(value: Any) -> Any:
    """What Torch-TensorRT reads of an input's recorded value: shape (symbols by name) and dtype."""
    if isinstance(value, torch.Tensor):
        return ("T", tuple(str(d) for d in value.shape), str(value.dtype))
    if isinstance(value, torch.SymInt):
        return ("S", str(value))
    return ("O", repr(value))


def subgraph_content(gm: torch.fx.GraphModule) -> tuple:
    """The subgraph's content: ops with their arguments (nodes by position), the inputs' shapes
    and dtypes, the weights by shape, dtype and values wherever an op reads them. Equal for
    equal subgraphs in every process, and on any device: where a weight's get_attr sits, its
    stride and device are left out, so the split module's submodule and hv.measure's rebuilt
    one (weights gathered first, on the GPU) share a key. Each weight is hashed once per
    process (foundation.digests remembers it by storage and version)."""
    index: dict[torch.fx.Node, Any] = {}
    rows: list[tuple] = []
    weights = [w for w in (fetch_attr(gm, n.target) for n in gm.graph.nodes if n.op == "get_attr")
               if isinstance(w, torch.Tensor)]
    tensor_digests(weights)  # the big ones side by side; remembered for the loop below
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            value = fetch_attr(gm, n.target)
            index[n] = (("W", tuple(value.shape), str(value.dtype), tensor_digest(value))
                        if isinstance(value, torch.Tensor) else ("A", repr(type(value))))
            continue
        index[n] = f"%{len(rows)}"
        if n.op == "placeholder":
            rows.append(("placeholder", _value(n.meta.get("val"))))
        elif n.op == "output":  # its values, flat: (x,) and ((x,),) return the same engine outputs
            leaves: list[Any] = []
            torch.fx.node.map_arg(n.args, lambda a: leaves.append(index[a]))
            rows.append(("output", repr(leaves)))
        else:
            target = n.target if isinstance(n.target, str) else f"{getattr(n.target, '__module__', '')}." \
                                                                  f"{getattr(n.target, '__qualname__', n.target)}"
            args = torch.fx.node.map_arg((n.args, n.kwargs), lambda a: index[a])
            rows.append((n.op, str(target), repr(args)))
    return tuple(rows)


def run_key(gm: torch.fx.GraphModule, inputs: Any) -> str:
    """The store's key for running the lowered graph `gm` once in PyTorch on `inputs`."""
    values = tuple(tensor_digest(v) if isinstance(v, torch.Tensor) else repr(v) for v in inputs)
    return digest((KEY_VERSION, "run", subgraph_content(gm), profile_key(gm), tuple(map(tensor_key, inputs)),
                   values, torch.__version__))


def build_key(gm: torch.fx.GraphModule, trt_settings: Any, tf32: bool = False) -> str:
    """The store's key for building `gm` with these settings on this install: `trt_settings` as
    part.build() takes them (a dict or None, with `tf32`), or the CompilationSettings hv.measure
    converts with (its TF32 read from it)."""
    fields, on = conversion_fields(trt_settings)
    return digest((KEY_VERSION, subgraph_content(gm), profile_key(gm), settings_digest(fields), bool(tf32 or on),
                   torch.__version__, installed_distribution(), library_version()))


__all__ = ["KEY_VERSION", "build_key", "subgraph_content", "run_key"]
