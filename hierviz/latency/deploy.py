"""The compiled split model handed to the user: `Partition.compile()` returns a CompiledModel
(the very module `hv.measure` times), which saves to a folder and loads back.

A split mixes backends, and no single format holds a TensorRT engine, TorchInductor code and
eager PyTorch together, so `save(folder)` writes what rebuilds the same module: the captured
graph (as plain data, see graphdata.pack_graph), the Config, example inputs, and
each compiled subgraph's artifact through the compile cache's disk format (TensorRT engines
through their state_dict, TorchInductor code through `torch._inductor.standalone_compile`).
`load(folder)` re-partitions (deterministic: the same subgraphs) and takes every subgraph
from those artifacts instead of compiling it. Subgraphs whose backend cannot save an artifact
are compiled again at load; `save` says which.
"""

from __future__ import annotations

import json
import pickle
import warnings
from pathlib import Path
from typing import Any

import torch
from torch.utils._pytree import tree_leaves, tree_map, tree_unflatten

from hierviz.errors import (ConfigError, MeasureError, SavedModelNotFoundError, checked_arguments, parameter_names,
                            unknown_arguments)
from hierviz.capturing.example_inputs import example_from_graph
from hierviz.capturing.input_spec import DIM_NAMES, InputSpec, spec_of
from hierviz.capturing.input_structure import check_structure
from hierviz.capturing.graph_codec import pack_graph, unpack_graph
from hierviz.latency.compiling.compile_cache import CompileCache
from hierviz.latency.measurement import MeasureWarning
from hierviz.latency.compiling.compiled_split import CompiledSplit, compile_split
from hierviz.partitioner import Partition, partition

FORMAT = "hierviz-compiled-v1"


class CompiledModel(torch.nn.Module):
    """A partition compiled for one device: call it like the model (TensorRT subgraphs run as
    engines, TorchInductor ones as compiled code, the rest eagerly).

    `.module` is the split GraphModule `hv.measure` times; `.records` says per subgraph what
    ran; `.fallbacks` the subgraphs whose backend failed and run eagerly; `.config` the setting.
    """

    def __init__(self, partition: Partition, split: CompiledSplit, example_inputs: Any) -> None:
        super().__init__()
        self.module = split.module
        self.records = split.records
        self.fallbacks = split.fallbacks
        self.device = split.device
        self.compile_s = split.compile_s
        self.config = partition.config
        self._partition = partition
        self._example_inputs = example_inputs
        info = getattr(getattr(partition.graph.graph, "_codegen", None), "pytree_info", None)
        self._out_spec = getattr(info, "out_spec", None)

    def forward(self, *args: Any) -> Any:
        """The model's outputs, in the model's own structure (a tensor, a tuple, a dict ...)."""
        check_structure("CompiledModel", self._partition.graph, args, {})
        out = self.module(*tree_leaves(args))
        if self._out_spec is None:
            return out
        flat = list(out) if isinstance(out, (tuple, list)) else [out]
        return tree_unflatten(flat, self._out_spec)

    def extra_repr(self) -> str:
        ran: dict[str, int] = {}
        for r in self.records.values():
            ran[r.ran] = ran.get(r.ran, 0) + 1
        by = ", ".join(f"{b} {n}" for b, n in ran.items())
        return f"{self.config.label()} on {self.device}: {len(self.records)} subgraphs ({by})"

    def save(self, folder: str | Path) -> Path:
        """Write this model to `folder` (created); `hierviz.latency.deploy.load(folder)` rebuilds it.
        Warns (MeasureWarning) naming the subgraphs that will be compiled again at load."""
        folder = Path(folder).expanduser()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            config = pickle.dumps(self.config)
        except OSError as exc:
            raise MeasureError(f"cannot write {folder}: {exc.strerror or exc}") from None
        except (pickle.PicklingError, TypeError, AttributeError) as exc:  # e.g. hv.support.where(lambda ...)
            raise MeasureError(f"this Config cannot be saved ({type(exc).__name__}: {exc}); a support given as "
                               "hv.support.where(lambda ...) does not pickle: use a module-level function.") from None
        # compile once more into the folder: a fresh cache, so every artifact is written there
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            split = compile_split(self._partition, self._example_inputs, self.device, cache=CompileCache(),
                                  cache_dir=folder / "artifacts", who="CompiledModel.save")
        not_saved = [w for w in split.warnings if "not written" in w] + \
                    [str(w.message) for w in caught if "not written" in str(w.message)]
        (folder / "graph.pkl").write_bytes(pickle.dumps(pack_graph(self._partition.graph)))
        (folder / "inputs.json").write_text(spec_of(self._partition.graph).to_json())
        (folder / "config.pkl").write_bytes(config)
        # the inputs as the model takes them (nested dicts and lists kept): load checks them against the graph
        torch.save(tree_map(lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x, self._example_inputs),
                   folder / "inputs.pt")
        eager = [t for t, r in split.records.items() if r.status == "eager"]
        (folder / "hierviz.json").write_text(json.dumps({
            "format": FORMAT, "config": self.config.label(), "device": str(self.device),
            "subgraphs": {t: r.ran for t, r in split.records.items()}, "eager": eager,
            "recompiled_at_load": not_saved, "torch": torch.__version__}, indent=1))
        if not_saved:
            warnings.warn(f"{len(not_saved)} subgraph(s) have no savable artifact and will be compiled again "
                          f"when loaded: {'; '.join(not_saved[:3])}", MeasureWarning, stacklevel=2)
        return folder


def compiled_model(partition: Partition, device: Any = None, *, example_inputs: Any = None,
                      **options: Any) -> CompiledModel:
    """`Partition.compile`: the compiled split model of `partition`, each subgraph compiled
    with `example_inputs` (default: random inputs shaped like the graph's); `options` are
    hv.measure's."""
    unknown_arguments("Partition.compile", options, parameter_names(
        compile_split, skip=("partition", "example_inputs", "device", "who")))
    inputs = example_inputs if example_inputs is not None else example_from_graph(partition.graph)
    split = compile_split(partition, inputs, device, who="Partition.compile", **options)
    return CompiledModel(partition, split, inputs)


def recorded_meta(graph: torch.fx.GraphModule, spec: InputSpec, example_inputs: Any) -> None:
    """Fill `graph`'s meta['val'] again, as the capture had it: every dimension the capture
    made dynamic is the same symbol with the same range (so the rebuilt split module accepts,
    and refuses, the same sizes, and TorchInductor compiles for the whole range); the others
    take the example inputs' sizes."""
    import sympy
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.symbolic_shapes import ShapeEnv
    from torch.fx.passes.fake_tensor_prop import FakeTensorProp
    from torch.utils._sympy.value_ranges import ValueRanges

    env = ShapeEnv()
    mode = FakeTensorMode(shape_env=env, allow_non_fake_inputs=True)
    ranges = {name: (lo, hi) for name, lo, hi in spec.ranges}
    symbols: dict[str, Any] = {}

    def size(dim: Any, actual: int) -> Any:
        if isinstance(dim, int) or not str(dim).isidentifier():  # fixed, or a derived size such as 2*s0
            return actual
        if dim not in symbols:
            sym = sympy.Symbol(dim, integer=True, positive=True)
            lo, hi = ranges.get(dim, (2, None))
            env._update_var_to_range(sym, ValueRanges(lo, sympy.oo if hi is None else hi))
            env.var_to_val[sym] = sympy.Integer(actual)
            if hasattr(env, "backed_var_to_val"):
                env.backed_var_to_val[sym] = sympy.Integer(actual)
            symbols[dim] = env.create_symintnode(sym, hint=actual)
        return symbols[dim]

    fakes = []
    for arg, value in zip(spec.args, tree_leaves(example_inputs)):
        if arg.kind == "tensor" and isinstance(value, torch.Tensor) and arg.shape is not None:
            with mode:
                fakes.append(torch.empty([size(d, int(n)) for d, n in zip(arg.shape, value.shape)], dtype=value.dtype))
        else:
            fakes.append(value)
    FakeTensorProp(graph, mode).propagate_dont_convert_inputs(*fakes)
    # as torch.export leaves them: the declared ranges in `range_constraints` (what the split
    # module checks), the shape environment's from 2 on (0/1 specialisation; part of cache keys)
    constraints = {}
    for name, sym_int in symbols.items():
        lo, hi = ranges.get(name, (2, None))
        upper = sympy.oo if hi is None else hi
        constraints[sym_int.node.expr] = ValueRanges(lo, upper)
        env.var_to_range[sym_int.node.expr] = ValueRanges(max(lo, 2), upper)
    graph.range_constraints = constraints  # type: ignore[assignment]  # torch types Module attributes Tensor | Module
    graph.meta[DIM_NAMES] = dict(spec.names)  # the user's Dim names, for the messages


@checked_arguments
def load(folder: str | Path, device: Any = None) -> CompiledModel:
    """The CompiledModel saved in `folder`, its subgraphs taken from the saved artifacts."""
    if not isinstance(folder, (str, Path)):
        raise ConfigError(f"load takes the folder a compiled model was saved in (str or Path), "
                          f"not {type(folder).__name__}.")
    folder = Path(folder).expanduser()
    meta_path = folder / "hierviz.json"
    if not folder.exists():
        raise SavedModelNotFoundError(f"no saved hierviz model at {folder}: the folder does not exist; save one "
                                      "with part.compile().save(folder).", str(folder))
    if not meta_path.is_file():
        raise SavedModelNotFoundError(f"{folder} holds no saved hierviz model (no hierviz.json); save one with "
                                      "part.compile().save(folder).", str(folder))
    meta = json.loads(meta_path.read_text())
    if meta.get("format") != FORMAT:
        raise MeasureError(f"{folder} was saved in format {meta.get('format')!r}; this hierviz reads {FORMAT!r}.")
    inputs = torch.load(folder / "inputs.pt", weights_only=False)
    graph = unpack_graph(pickle.loads((folder / "graph.pkl").read_bytes()))
    spec = folder / "inputs.json"
    recorded_meta(graph, InputSpec.from_json(spec.read_text()) if spec.is_file() else spec_of(graph), inputs)
    config = pickle.loads((folder / "config.pkl").read_bytes())
    part = partition(graph, config=config)
    if not isinstance(part, Partition):  # a saved model is one aten graph: never graph by graph
        raise MeasureError(f"{folder} does not hold one graph's model; save it again with part.compile().save(folder).")
    split = compile_split(part, inputs, device if device is not None else meta.get("device"), cache=CompileCache(),
                          cache_dir=folder / "artifacts", who="hierviz.latency.deploy.load")
    return CompiledModel(part, split, inputs)


__all__ = ["CompiledModel", "compiled_model", "load", "example_from_graph"]
