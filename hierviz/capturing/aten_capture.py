"""Capture: turn a model into the aten graph Torch-TensorRT would partition.

The pipeline is Torch-TensorRT's own compile front half: `torch.export`, then
`pre_export_lowering`, the Torch-TensorRT decompositions, then `post_lowering`. Without
torch_tensorrt installed, torch's default decompositions are used instead.

The user's model is never changed: export and lowering run on a private copy (parameters
are shared, never written; buffers and every other attribute are copied), and the RNG state
is restored. Torch-TensorRT's constant folding would otherwise run the model's in-place
buffer updates on the model itself (BatchNorm's `num_batches_tracked` in train mode).
"""

from __future__ import annotations

import copy
import inspect
import logging
import threading
import warnings
import weakref
from typing import Any, Mapping

import torch
from torch.fx import GraphModule

from hierviz import trt
from hierviz.capturing import disk_cache as capture_cache, forced_causal
from hierviz.capturing.by_graph.cached_graphs import capture_graphs
from hierviz.capturing.capture_key import capture_key
from hierviz.capturing.by_graph.dynamo_capture import NOTES as CAPTURE_NOTES, DynamoCapture
from hierviz.capturing.cached_capture_check import CHECKED, cached_graph_holds, checked_record
from hierviz.capturing.export_failure import export_error, specialised_dims
from hierviz.capturing.inputs import as_args, check_capture_extras
from hierviz.capturing.model_copy import private_copy, rng_preserved
from hierviz.capturing.target_device import (DEFAULT_TARGET, TARGET_META, check_lowered, check_target_device, mark,
                                             retraced_as_on, target_key, with_target_rules)
from hierviz.errors import CaptureError, ConfigError, checked_arguments, user_stacklevel
from hierviz.foundation import torch_output
from hierviz.support import stored_verdicts
from hierviz.support.tensorrt_support import record_verdicts

logger = logging.getLogger(__name__)

_CACHE: "weakref.WeakKeyDictionary[Any, dict[Any, GraphModule | DynamoCapture]]" = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()  # _CACHE and its per-model dicts: read by source_of while captures write them


UPDATES = "hierviz_updates"  # GraphModule.meta key: what updates_of() returns
NOTES = CAPTURE_NOTES  # GraphModule.meta key: what capture_notes() returns (a graph run eagerly says so too)


class CaptureWarning(UserWarning):
    """The captured graph does not do everything the model does (see the message)."""


def _spec(value: Any) -> Any:
    """A hashable description of inputs: shapes, dtypes and devices, not values."""
    if isinstance(value, torch.Tensor):
        return ("T", tuple(value.shape), str(value.dtype), value.device.type)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_spec(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), _spec(v)) for k, v in value.items())))
    return ("V", repr(value))


def required_arguments(model: torch.nn.Module) -> list[str]:
    """The arguments the model's forward needs (those without a default); a forward without
    any is captured with no inputs. A forward whose signature cannot be read needs some."""
    try:
        params = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return ["its inputs"]
    needed = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD,
              inspect.Parameter.KEYWORD_ONLY)
    return [p.name for p in params if p.kind in needed and p.default is inspect.Parameter.empty]


def is_aten_graph(gm: GraphModule) -> bool:
    """True when every call in gm is an aten/prims op (or operator.getitem & co.): a graph
    that can be partitioned as it is. A graph with call_module (including an exported
    `_guards_fn`), call_method or torch.* function calls must be captured first."""
    for node in gm.graph.nodes:
        if node.op in ("call_module", "call_method"):
            return False
        if node.op == "call_function" and not isinstance(node.target, (torch._ops.OpOverload,
                                                                        torch._ops.HigherOrderOperator)):
            if getattr(node.target, "__module__", "") not in ("_operator", "operator"):
                return False
    return True


def _drop_guards(gm: GraphModule) -> GraphModule:
    """Remove the exported `_guards_fn` call so it does not become a subgraph of its own."""
    changed = False
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and str(node.target).startswith("_guards_fn") and not node.users:
            gm.graph.erase_node(node)
            changed = True
    # Torch-TensorRT's post_lowering already drops the node but leaves the submodule behind.
    called = {str(n.target) for n in gm.graph.nodes if n.op == "call_module"}
    for name, _ in list(gm.named_children()):
        if name.startswith("_guards_fn") and name not in called:
            delattr(gm, name)
            changed = True
    if changed:
        gm.recompile()
    return gm


def _dict_hint(model: torch.nn.Module, args: tuple, kwargs: dict | None) -> str | None:
    """The hint for one dict passed as example_inputs to a forward that takes several named
    arguments (a Hugging Face encoder-decoder's input_ids, decoder_input_ids): it arrived as
    the first argument; its entries belong in kwargs=. None when that is not the case."""
    if kwargs or len(args) != 1 or not isinstance(args[0], Mapping):
        return None
    try:
        params = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return None
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    named = [k for k in args[0] if k in names]
    if len(names) < 2 or not named:
        return None
    return (f"example_inputs is one dict, so {type(model).__name__}.forward got it as its first argument "
            f"({names[0]!r}); pass its entries ({', '.join(map(repr, named))}) as keyword arguments: "
            "hv.partition(model, (), kwargs=inputs) (hv.capture(model, (), kwargs=inputs) too).")


def _export(model: torch.nn.Module, args: tuple, kwargs: dict | None, dynamic_shapes: Any) -> Any:
    """torch.export; on failure, a CaptureError with a short first line (hierviz.capturing.export_failure),
    and what torch printed and logged meanwhile (its partial graph) kept off the screen. After
    a success it is held back too (torch_output.hold: the CLI's --verbose shows it)."""
    printed = torch_output.KeptOutput()
    try:
        with torch_output.kept() as printed:
            exported = torch.export.export(model, args, kwargs=kwargs, dynamic_shapes=dynamic_shapes, strict=False)
    except Exception as exc:  # whatever the model's forward or torch.export raised: the CaptureError's cause
        raise export_error(type(model).__name__, exc, dynamic_shapes=dynamic_shapes is not None,
                           torch_output=printed.text(), hint=_dict_hint(model, args, kwargs),
                           specialised=specialised_dims(model, args, kwargs, dynamic_shapes)) from exc
    torch_output.hold("torch.export", printed.text())  # what it printed meanwhile is held back, for --verbose
    return exported


def _dims_key(value: Any) -> Any:
    """A hashable description of dynamic_shapes: a Dim's repr omits some bounds (and a
    derived Dim's its root's), so each Dim is keyed by repr, min and max."""
    if isinstance(value, dict):
        return ("dict", tuple(sorted((repr(k), _dims_key(v)) for k, v in value.items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_dims_key(v) for v in value))
    return (repr(value), getattr(value, "min", None), getattr(value, "max", None))


_PLAIN = (type(None), bool, int, float, str)


def _plain_attributes(module: torch.nn.Module) -> tuple:
    """A module's own plain attributes (None, numbers, text, and short lists or tuples of
    them), which its forward may read and change (torchvision's MultiScaleRoIAlign sets
    `scales` on its first call): a change makes an earlier capture stale."""
    out = []
    for name, value in vars(module).items():
        if name.startswith("_") or name == "training":
            continue
        if isinstance(value, _PLAIN) or (isinstance(value, (list, tuple)) and len(value) <= 64
                                         and all(isinstance(v, _PLAIN) for v in value)):
            out.append((name, type(value).__name__, repr(value)))
    return tuple(out)


def _state_key(model: Any) -> tuple:
    """What makes an earlier capture of the same object stale: modes, weights (identity and
    in-place version), each module's plain attributes, and for a GraphModule its code."""
    if not isinstance(model, torch.nn.Module):
        return ()
    tensors = [*model.named_parameters(remove_duplicate=False), *model.named_buffers(remove_duplicate=False)]
    key: tuple = (tuple(m.training for m in model.modules()),
                  tuple((name, id(t), t._version) for name, t in tensors),
                  tuple(_plain_attributes(m) for m in model.modules()))
    if isinstance(model, GraphModule):
        key += (model.code,)
    return key


def _mutations(ep: torch.export.ExportedProgram) -> tuple[list[str], list[str]]:
    """Buffers (and parameters) and user inputs that the exported program updates in place."""
    sig = ep.graph_signature
    state = sorted({*sig.buffers_to_mutate.values(), *getattr(sig, "parameters_to_mutate", {}).values()})
    return state, sorted(set(sig.user_inputs_to_mutate.values()))


def _warn_mutations(name: str, state: list[str], inputs: list[str]) -> None:
    what = []
    if state:
        what.append("updates buffer(s) " + ", ".join(repr(b) for b in state))
    if inputs:
        what.append("writes into input(s) " + ", ".join(repr(i) for i in inputs))
    warnings.warn(
        f"hv.capture: {name}.forward {' and '.join(what)} in place. Torch-TensorRT's lowering drops "
        "these updates, as its compiled module would (hierviz does the same without "
        "torch_tensorrt): the captured graph, Partition.module and "
        "hv.measure compute each call from the values at capture time and update nothing, so "
        "the first call matches the model and later calls of the model may differ.",
        CaptureWarning, stacklevel=user_stacklevel(),
    )


def _lower(ep: torch.export.ExportedProgram, name: str, target: str = DEFAULT_TARGET) -> GraphModule:
    """Torch-TensorRT's lowering of an ExportedProgram that may be changed (torch's defaults
    without it), for `target` (hierviz.capturing.target_device); warns when the model's in-place
    updates are dropped."""
    if trt.available():
        lowering = trt.lowering()
        settings = trt.default_settings()
        try:
            with trt.lowering_device():
                ep = lowering.pre_export_lowering(ep, settings)
                ep = ep.run_decompositions(with_target_rules(lowering.get_decompositions(False), target))
                state, inputs = _mutations(ep)
                _unshare(ep, state)
                with forced_causal.recorded() as forced:
                    gm = retraced_as_on(ep.module(), target, lambda module: lowering.post_lowering(module, settings))
                gm = forced_causal.mark(gm, forced)
        except Exception as exc:
            raise CaptureError(
                f"Torch-TensorRT's lowering failed: {type(exc).__name__}: {exc}\n"
                "Hint: this is a Torch-TensorRT limitation for this model; try "
                "hv.capture on a smaller part of the model to find the op."
            ) from exc
    else:
        try:
            ep = ep.run_decompositions(with_target_rules(torch.export.default_decompositions(), target))
            state, inputs = _mutations(ep)
            gm = _drop_updates(ep.module()) if state or inputs else ep.module()
        except Exception as exc:
            raise CaptureError(f"run_decompositions failed: {type(exc).__name__}: {exc}") from exc
    if state or inputs:
        _warn_mutations(name, state, inputs)
    gm = mark(check_lowered(_drop_guards(gm), target, name), target)
    gm.meta[UPDATES] = (tuple(state), tuple(inputs))
    return gm


def updates_of(graph: GraphModule) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(buffers, inputs) that the captured model's forward updates in place, which the graph
    does not reproduce (see CaptureWarning); empty for a graph hv.capture did not make. Whoever
    runs the model itself (hv.measure's baseline) runs a copy, on copies of the inputs."""
    return graph.meta.get(UPDATES, ((), ()))


def _drop_updates(gm: GraphModule) -> GraphModule:
    """Remove the in-place updates ExportedProgram.module() writes back to buffers and inputs
    (`copy_` into a get_attr or placeholder), as Torch-TensorRT's lowering does, so the graph
    is the same with and without torch_tensorrt."""
    for node in list(gm.graph.nodes):
        if (node.op == "call_function" and node.target is torch.ops.aten.copy_.default and not node.users
                and isinstance(node.args[0], torch.fx.Node) and node.args[0].op in ("get_attr", "placeholder")):
            gm.graph.erase_node(node)
    gm.graph.eliminate_dead_code()
    gm.recompile()
    return gm


def _unshare(ep: torch.export.ExportedProgram, names: list[str]) -> None:
    """Give the exported program its own copy of each parameter it updates in place (buffers
    are already private), so running or constant-folding the graph never writes to the model."""
    for name in names:
        value = ep.state_dict.get(name)
        if isinstance(value, torch.nn.Parameter):
            ep.state_dict[name] = torch.nn.Parameter(value.detach().clone(), requires_grad=value.requires_grad)


def source_of(graph: GraphModule | DynamoCapture) -> Any:
    """The model `graph` was captured from (an nn.Module or ExportedProgram), while it is
    alive; None for a graph hv.capture did not make. hv.measure times this model as the eager
    baseline, so `speedup` answers "how much faster than my model"."""
    with _CACHE_LOCK:
        for model, per_model in _CACHE.items():
            if any(gm is graph for gm in per_model.values()):
                return model
    return None


def capture_notes(graph: GraphModule) -> tuple[str, ...]:
    """What the capture of `graph` says about itself (it came from the disk cache, or the
    cached graph was stale and the model was captured again; Torch-TensorRT's lowering made an
    attention causal whose mask was not: hierviz.capturing.forced_causal); () otherwise."""
    forced = forced_causal.note(graph)
    return tuple(graph.meta.get(NOTES, ())) + ((forced,) if forced else ())


def _warn_forced_causal(captured: GraphModule | DynamoCapture) -> None:
    """One CaptureWarning for the attentions Torch-TensorRT's lowering of `captured` made causal although
    their masks were not (hierviz.capturing.forced_causal), naming the graph of a DynamoCapture."""
    graphs = [(f"graph {g.index}: ", g.graph) for g in captured.graphs] if isinstance(captured, DynamoCapture) \
        else [("", captured)]
    said = [f"{where}{text}" for where, gm in graphs if (text := forced_causal.note(gm))]
    if said:
        warnings.warn(f"hv.capture: {' '.join(said)}.", CaptureWarning, stacklevel=user_stacklevel())


def _capture_module(model: torch.nn.Module, args: tuple, kwargs: dict | None, dynamic_shapes: Any,
                    inputs_key: Any, cache: bool, target: str = DEFAULT_TARGET) -> GraphModule:
    """Export and lower `model` for `target`, or take its capture from the disk cache
    (hierviz.capturing.disk_cache) when the cached graph gives the model's outputs on the example inputs."""
    name = type(model).__name__
    key = capture_key(model, inputs_key, _dims_key(dynamic_shapes), target_key(target)) \
        if capture_cache.enabled(cache) and not isinstance(model, GraphModule) else None
    store = capture_cache.CaptureStore() if key is not None else None
    notes: tuple[str, ...] = ()
    if store is not None and key is not None:  # (store is None when key is)
        gm, meta = store.load(key, model)
        if gm is not None:
            holds, said = cached_graph_holds(model, gm, meta.pop(CHECKED, None), args, kwargs)
            if holds:
                verdicts = meta.pop(stored_verdicts.META, None)
                gm.meta.update(meta)
                if verdicts is not None:  # the partition then needs no torch_tensorrt import
                    stored_verdicts.attach(gm, verdicts)
                state, inputs = updates_of(gm)
                if state or inputs:  # said again, as the capture said it
                    _warn_mutations(name, list(state), list(inputs))
                gm.meta[NOTES] = (f"capture: from the disk cache ({store.folder}); {said}",)
                return gm
            notes = (said,)
        elif store.not_read is not None:  # it names a custom op this process cannot register
            notes = (store.not_read,)
    gm = _lower(_export(private_copy(model), args, kwargs, dynamic_shapes), name, target)
    if store is not None and key is not None and (trt.available() or trt.installed_distribution() is None):
        # (an install that does not import lowered with torch's decompositions: not kept under its key)
        record: dict[str, Any] = {UPDATES: updates_of(gm), TARGET_META: gm.meta[TARGET_META]}
        if forced_causal.forced_of(gm):
            record[forced_causal.FORCED_CAUSAL] = forced_causal.forced_of(gm)
        verdicts = record_verdicts(gm)
        if verdicts is not None:  # kept with the graph: a new process partitions it without importing torch_tensorrt
            stored_verdicts.attach(gm, verdicts)
            record[stored_verdicts.META] = verdicts
        if capture_cache.storable(gm):  # what a new process checks the entry against (`cached_graph_holds`)
            record[CHECKED] = checked_record(model, gm, args, kwargs)
        store.save(key, gm, record, model)
    if notes:
        gm.meta[NOTES] = notes
    return gm


IRS = ("dynamo", "torch_compile")  # hv.capture(ir=...): torch.export's path, torch.compile's


def check_ir(ir: Any) -> str:
    """`ir` as given when it is one of IRS, else ConfigError naming them."""
    if ir not in IRS:
        raise ConfigError(f"ir={ir!r:.60} is not one of {', '.join(repr(i) for i in IRS)}: 'dynamo' (the default) "
                          "captures with torch.export, as torch_tensorrt.compile does; 'torch_compile' captures "
                          "graph by graph, as torch.compile(model, backend='torch_tensorrt') does.")
    return ir


@checked_arguments
def capture(model: Any, example_inputs: Any = None, *, dynamic_shapes: Any = None,
            kwargs: dict | None = None, cache: bool = True, ir: str = "dynamo",
            target_device: str = DEFAULT_TARGET) -> GraphModule | DynamoCapture:
    """The aten-level graph Torch-TensorRT would partition for `model`.

    Accepts an `nn.Module`, an `ExportedProgram` or a `GraphModule`; a GraphModule that is not
    aten-level (from `torch.fx.symbolic_trace`, or `ExportedProgram.module()`) is exported
    again with `example_inputs`. The model, its parameters, buffers and training flags and
    the RNG state are left exactly as they were. Captures are cached by model identity, input
    specs, modes and weight versions, so calling this again (e.g. to re-partition) does not
    re-export, and a model changed since is captured anew. `cache` (default True; HIERVIZ_CACHE=0
    turns it off): an nn.Module's capture is also kept on disk (hierviz.capturing.disk_cache), keyed by
    everything that can change the graph, and taken from there in a new process once the model
    is shown to do the computation it did when it was captured (traced on fake tensors: the same
    aten ops on the same weights, constants and shapes; a model that cannot be traced so is run
    and its outputs compared; `cached_graph_holds`), as `capture_notes` says.

    `ir="torch_compile"`: the graphs `torch.compile(model, backend="torch_tensorrt")` compiles,
    one per graph break, as a `hierviz.capturing.by_graph.dynamo_capture.DynamoCapture` (an nn.Module only; kept
    in memory like the rest, and on disk under the same kind of key: a new process reads it back
    without running torch.compile, and its `notes` say so).

    `target_device="cuda"` (the default): the graph Torch-TensorRT lowers on a CUDA GPU, whatever
    machine runs this (attention, recurrent layers: as the reference GPU's kernels decompose them,
    hierviz.capturing.target_device); `"cpu"`: as lowered on a CPU. A graph given already lowered is
    kept as it is.
    """
    check_ir(ir)
    target = check_target_device(target_device)
    check_capture_extras(dynamic_shapes, kwargs)
    if not isinstance(cache, bool):
        raise ConfigError(f"hv.capture(cache=...) is True (keep captures on disk, the default) or False, "
                          f"not {type(cache).__name__} {cache!r:.40}.")
    if not isinstance(model, (torch.nn.Module, torch.export.ExportedProgram)):  # before the cache sees it
        raise CaptureError(f"capture takes an nn.Module, ExportedProgram or GraphModule, not {type(model).__name__}.")
    args = as_args(example_inputs)
    if isinstance(model, GraphModule) and not is_aten_graph(model) and not args and not kwargs \
            and required_arguments(model):
        raise ConfigError(
            "this GraphModule is not an aten-level graph (it has call_module, call_method or "
            "torch.* calls, e.g. from torch.fx.symbolic_trace or ExportedProgram.module()), so it "
            "must be captured with example inputs: pass them, e.g. hv.partition(gm, (x,)) or "
            "hv.capture(gm, (x,)).")
    if ir == "torch_compile":
        if not isinstance(model, torch.nn.Module):
            raise CaptureError("ir='torch_compile' captures a model by running it under torch.compile: pass the "
                               f"nn.Module itself, not {type(model).__name__}.")
        if dynamic_shapes is not None:
            raise ConfigError("ir='torch_compile' captures with dynamic=False, as torch_tensorrt.compile("
                              "ir='torch_compile') does: drop dynamic_shapes, or use ir='dynamo'.")
    key = (_spec(args), _spec(kwargs or {}), _dims_key(dynamic_shapes), _state_key(model), ir, target_key(target))
    try:
        with _CACHE_LOCK:
            per_model = _CACHE.setdefault(model, {})
    except TypeError:
        per_model = {}
    with _CACHE_LOCK:
        got = per_model.get(key)
    if got is not None:
        return got

    gm: GraphModule | DynamoCapture
    with rng_preserved():
        if isinstance(model, torch.export.ExportedProgram):
            gm = _lower(copy.deepcopy(model), "ExportedProgram", target)
        elif isinstance(model, GraphModule) and is_aten_graph(model):
            gm = _drop_guards(copy.deepcopy(model))
            if args and any("val" not in n.meta for n in gm.graph.nodes if n.op == "placeholder"):
                from torch.fx.passes.fake_tensor_prop import FakeTensorProp

                FakeTensorProp(gm).propagate(*args)
        elif ir == "torch_compile":
            gm = capture_graphs(model, args, kwargs, key[:2], cache, target)
        elif isinstance(model, torch.nn.Module):
            needed = required_arguments(model) if not args and not kwargs else []
            if needed:
                raise CaptureError(f"capture needs example_inputs for {type(model).__name__}: its forward takes "
                                   f"{', '.join(needed)}; e.g. hv.capture(model, (torch.randn(1, 3, 224, 224),))")
            gm = _capture_module(model, args, kwargs, dynamic_shapes, key[:3], cache, target)
        else:
            raise CaptureError(
                f"capture takes an nn.Module, ExportedProgram or GraphModule, not {type(model).__name__}."
            )
    _warn_forced_causal(gm)
    with _CACHE_LOCK:
        for stale in [k for k in per_model if k[3] != key[3]]:  # captured before the model changed
            del per_model[stale]
        per_model[key] = gm
    return gm


__all__ = ["capture", "capture_notes", "is_aten_graph", "updates_of", "source_of", "CaptureWarning", "IRS", "check_ir"]


