"""The compiled split model handed to the user: `Partition.compile()` returns a CompiledModel
(the very module `hv.measure` times), which saves to a folder and loads back.

A split mixes backends, and no single format holds a TensorRT engine, TorchInductor code and
eager PyTorch together, so `save(folder)` writes what rebuilds the same module, all of it data
that loading cannot run (a folder may be sent to someone else):
  hierviz.json  the format, the Config (as `Config.to_dict`) and what ran where (JSON)
  graph.json    the captured graph (hierviz.capturing.graph_json: ops by name, no code)
  weights.pt    its weights, inputs.pt the example inputs (tensors, read with weights_only=True)
  inputs.json   what the graph accepts (InputSpec: shapes, dynamic ranges)
  artifacts/    each compiled subgraph through the compile cache's disk format: TensorRT engines
                (data, their pickled settings checked before Torch-TensorRT reads them) and
                TorchInductor's `standalone_compile` artifacts (code)
`load(folder)` re-partitions (deterministic: the same subgraphs; `save` checks that) and takes
every TensorRT subgraph from its engine instead of building it; TorchInductor's artifacts are
used only with `load(folder, trusted=True)`, otherwise those subgraphs are compiled again.
Subgraphs whose backend cannot save an artifact are compiled again at load; `save` says which.
A folder of the first format (pickles, which run code when loaded) is refused unopened.
"""

from __future__ import annotations

import dataclasses
import io
import json
import warnings
from pathlib import Path
from typing import Any

import torch
from torch.utils._pytree import tree_leaves, tree_map, tree_unflatten

from hierviz.errors import (ConfigError, MeasureError, SavedModelNotFoundError, checked_arguments, parameter_names,
                            unknown_arguments, user_stacklevel)
from hierviz.capturing.example_inputs import example_from_graph
from hierviz.capturing.graph_json import graph_from_json, graph_json, restore_tensor_meta
from hierviz.capturing.input_spec import DIM_NAMES, InputSpec, spec_of
from hierviz.capturing.input_structure import check_structure
from hierviz.capturing.inputs import mismatch
from hierviz.latency import saved_model_files as files
from hierviz.latency.compiling.backend_compilers import Compiler, get_compiler
from hierviz.latency.compiling.compile_cache import CompileCache
from hierviz.latency.measurement import MeasureWarning
from hierviz.latency.compiling.compiled_split import CompiledSplit, compile_split
from hierviz.partitioner import Partition, partition
from hierviz.settings.config import Config

FORMAT = "hierviz-compiled-v2"
PICKLED_FORMAT = "hierviz-compiled-v1"  # its config, graph and inputs were pickles: never opened
META, GRAPH, WEIGHTS, SPEC, INPUTS, ARTIFACTS = (
    "hierviz.json", "graph.json", "weights.pt", "inputs.json", "inputs.pt", "artifacts")


class CompiledModel(torch.nn.Module):
    """A partition compiled for one device: call it like the model (TensorRT subgraphs run as
    engines, TorchInductor ones as compiled code, the rest eagerly).

    `.module` is the split GraphModule `hv.measure` times; `.records` says per subgraph what
    ran; `.fallbacks` the subgraphs whose backend failed and run eagerly; `.config` the setting;
    `.frozen_random` the random ops its TensorRT engines hold, drawn once when Torch-TensorRT built
    them (hierviz.building.frozen_random: every call gives the same values; `save` writes them).
    """

    def __init__(self, partition: Partition, split: CompiledSplit, example_inputs: Any) -> None:
        super().__init__()
        self.module = split.module
        self.records = split.records
        self.fallbacks = split.fallbacks
        self.frozen_random = split.frozen_random
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
        """Write this model to `folder` (created) as data that loading cannot run (see the module
        docstring); `hierviz.latency.deploy.load(folder)` rebuilds it. Warns (MeasureWarning)
        naming the subgraphs that will be compiled again at load."""
        folder = Path(folder).expanduser()
        config = config_document(self.config)
        try:
            graph, weights = graph_json(self._partition.graph)
        except ValueError as exc:
            raise MeasureError(f"this model cannot be saved: {exc}.") from None
        inputs = files.tensors_as_data(tree_map(lambda x: x.detach().cpu() if isinstance(x, torch.Tensor) else x,
                                                self._example_inputs), "the example inputs")
        spec = spec_of(self._partition.graph)
        same_partition(self._partition, rebuilt(graph, weights, spec, torch.load(io.BytesIO(inputs), weights_only=True),
                                                self.config, folder))
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MeasureError(f"cannot write {folder}: {exc.strerror or exc}") from None
        # compile once more into the folder: a fresh cache, so every artifact is written there
        with warnings.catch_warnings(record=True):  # its notes are the warning below
            warnings.simplefilter("always")
            split = compile_split(self._partition, self._example_inputs, self.device, cache=CompileCache(),
                                  cache_dir=folder / ARTIFACTS, who="CompiledModel.save")
        not_saved = [f"{tag} was not written to the disk cache: {why}" for tag, why in split.unsaved.items()]
        files.write(folder / GRAPH, json.dumps(graph))
        files.write(folder / WEIGHTS, files.tensors_as_data(weights, "the graph's weights"))
        files.write(folder / SPEC, spec.to_json())
        # the inputs as the model takes them (nested dicts and lists kept): load checks them against the graph
        files.write(folder / INPUTS, inputs)
        eager = [t for t, r in split.records.items() if r.status == "eager"]
        files.write(folder / META, json.dumps({
            "format": FORMAT, "config": config, "label": self.config.label(), "device": str(self.device),
            "subgraphs": {t: r.ran for t, r in split.records.items()}, "eager": eager,
            "recompiled_at_load": not_saved, "frozen_random": [dataclasses.asdict(f) for f in split.frozen_random],
            "torch": torch.__version__}, indent=1))
        if not_saved:
            warnings.warn(f"{len(not_saved)} subgraph(s) have no savable artifact and will be compiled again "
                          f"when loaded: {'; '.join(not_saved[:3])}", MeasureWarning, stacklevel=2)
        return folder


def config_document(config: Config) -> dict:
    """The Config as JSON-safe data that reads back equal; MeasureError for one that cannot be
    written as data (a support given as a Python function)."""
    data = config.to_dict()
    try:
        same = Config.from_dict(json.loads(json.dumps(data))) == config
    except ConfigError:
        same = False
    if not same:
        raise MeasureError(f"this Config cannot be saved: a saved model holds no code, and its support "
                           f"({data.get('support')}) is a Python function (hv.support.where) or cannot be rebuilt from "
                           "its description. Save a partition whose support is made of hv.support.ops, .inductor, "
                           ".tensorrt and .none (combined with | & -).")
    return data


def rebuilt(graph: Any, weights: Any, spec: InputSpec, inputs: Any, config: Config, folder: Path) -> Partition:
    """The partition a saved model's files describe: the graph read from its JSON and weights,
    its values propagated again from the example inputs, partitioned with the saved config
    (deterministic: the saved subgraphs). MeasureError naming the file that does not fit."""
    try:
        gm = graph_from_json(graph, weights)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError, RuntimeError) as exc:
        raise files.damaged(folder / GRAPH, str(exc)) from None
    leaves = tree_leaves(inputs)
    problem = mismatch(spec, leaves) if len(leaves) == len(spec.args) else (
        f"{len(leaves)} input(s) where the graph takes {len(spec.args)}", "")
    if problem is not None:
        raise files.damaged(folder / INPUTS, f"its inputs do not fit the graph: {problem[0]}")
    try:
        recorded_meta(gm, spec, inputs)
    except Exception as exc:  # torch's fake-tensor propagation of a graph that does not fit its ops' schemas
        raise files.damaged(folder / GRAPH, f"its ops do not run on the saved inputs: {type(exc).__name__}: "
                            f"{str(exc).splitlines()[0][:200] if str(exc) else ''}") from exc
    restore_tensor_meta(gm)
    part = partition(gm, config=config)
    if not isinstance(part, Partition):  # a saved model is one aten graph: never graph by graph
        raise MeasureError(f"{folder} does not hold one graph's model; {files.AGAIN}.")
    return part


def same_partition(original: Partition, again: Partition) -> None:
    """MeasureError unless the partition rebuilt from the files is the one that was saved."""
    def subgraphs(p: Partition) -> list[tuple[str, str, tuple[str, ...]]]:
        return [(s.tag, s.backend, tuple(s.nodes)) for s in p.subgraphs]

    if subgraphs(original) != subgraphs(again):
        raise MeasureError("this model cannot be saved faithfully: its graph, read back from the saved data, "
                           f"partitions into {len(again.subgraphs)} subgraphs where the model has "
                           f"{len(original.subgraphs)}; please report it with the model.")


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
def load(folder: str | Path, device: Any = None, *, trusted: bool = False) -> CompiledModel:
    """The CompiledModel saved in `folder`. Nothing in the folder runs while it loads: the graph,
    settings and inputs are data, TensorRT engines are data. TorchInductor's saved artifacts are
    compiled code, so they are used only with `trusted=True` (a folder you saved yourself, or got
    from someone you trust); otherwise those subgraphs are compiled again here (slower to load,
    same outputs). A missing or damaged file is one error naming it."""
    if not isinstance(folder, (str, Path)):
        raise ConfigError(f"load takes the folder a compiled model was saved in (str or Path), "
                          f"not {type(folder).__name__}.")
    if not isinstance(trusted, bool):
        raise ConfigError(f"trusted= is True or False (whether to run the TorchInductor code saved in the folder), "
                          f"not {trusted!r}.")
    folder = Path(folder).expanduser()
    if not folder.exists():
        raise SavedModelNotFoundError(f"no saved hierviz model at {folder}: the folder does not exist; save one "
                                      "with part.compile().save(folder).", str(folder))
    if not (folder / META).is_file():
        raise SavedModelNotFoundError(f"{folder} holds no saved hierviz model (no {META}); save one with "
                                      "part.compile().save(folder).", str(folder))
    meta = files.read_json(folder / META)
    if not isinstance(meta, dict):
        raise files.damaged(folder / META, "not a JSON object")
    if meta.get("format") == PICKLED_FORMAT:
        raise MeasureError(f"{folder} was saved by an older hierviz ({PICKLED_FORMAT}), whose files are pickles that "
                           f"run code when loaded; this hierviz does not open them. Compile the partition and save "
                           f"it again (part.compile().save(folder)).")
    if meta.get("format") != FORMAT:
        raise MeasureError(f"{folder} was saved in format {meta.get('format')!r}; this hierviz reads {FORMAT!r}.")
    config = _saved_config(meta.get("config"), folder / META)
    inputs = files.read_tensors(folder / INPUTS)
    try:
        spec = InputSpec.from_json(files.read_bytes(folder / SPEC).decode("utf-8"))
    except (ValueError, KeyError, TypeError) as exc:
        raise files.damaged(folder / SPEC, f"not an input description: {type(exc).__name__}: {exc}") from None
    part = rebuilt(files.read_json(folder / GRAPH), files.read_tensors(folder / WEIGHTS), spec, inputs, config,
                   folder)
    compilers, skipped = (None, []) if trusted else _without_code(part, folder / ARTIFACTS)
    saved_device = meta.get("device")
    split = compile_split(part, inputs, device if device is not None else
                          saved_device if isinstance(saved_device, str) else None,
                          cache=CompileCache(), cache_dir=folder / ARTIFACTS, compilers=compilers,
                          who="hierviz.latency.deploy.load")
    if skipped:
        warnings.warn(f"{folder}: the saved {' and '.join(skipped)} artifacts are code and were not run; those "
                      "subgraphs were compiled again. Pass trusted=True to use them for a folder you saved yourself "
                      "or got from someone you trust.", MeasureWarning, stacklevel=user_stacklevel())
    return CompiledModel(part, split, inputs)


def _saved_config(data: Any, where: Path) -> Config:
    if not isinstance(data, dict):
        raise files.damaged(where, "its config is not a JSON object")
    try:
        return Config.from_dict(data)
    except ConfigError as exc:
        raise files.damaged(where, f"its config cannot be read: {str(exc).splitlines()[0]}") from None


def _without_code(part: Partition, artifacts: Path) -> tuple[dict[str, Compiler], list[str]]:
    """The compilers of `part`'s backends whose saved artifacts are code, neither reading nor
    writing the folder's artifacts, and those backends that have artifacts there."""
    overrides: dict[str, Compiler] = {}
    skipped: list[str] = []
    for backend in dict.fromkeys(s.backend for s in part.subgraphs):
        compiler = get_compiler(backend)
        if compiler is None or compiler.load is None or not compiler.artifacts_run_code:
            continue
        overrides[backend] = dataclasses.replace(compiler, load=None, save=None)
        if (artifacts / backend).is_dir() and any((artifacts / backend).iterdir()):
            skipped.append(backend)
    return overrides, skipped


__all__ = ["CompiledModel", "compiled_model", "load", "example_from_graph"]
