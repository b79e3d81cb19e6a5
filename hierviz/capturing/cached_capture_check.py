"""The check of a cached capture: whether the graph a capture entry holds is still the model's
capture. The record kept with an entry (the graph's digest, the model's computation digest, or the
graph's outputs), and the check against it: the computations then and now compared, else the
outputs of the model and the graph on the example inputs, within the dtype's rounding. A graph
whose outputs differ from the model's by Torch-TensorRT's own lowering (an attention it made
causal although its mask was not: hierviz.capturing.forced_causal) keeps the model's outputs
instead, and the model's outputs now are checked against them."""

from __future__ import annotations

import copy
import logging
from typing import Any

import torch
from torch.fx import GraphModule

from hierviz.capturing import forced_causal
from hierviz.capturing.computation_trace import computation_digest
from hierviz.capturing.graph_codec import fetch_attr
from hierviz.capturing.model_copy import private_copy
from hierviz.foundation import torch_output
from hierviz.foundation.digests import digest, tensor_digest

logger = logging.getLogger(__name__)


CHECKED = "hierviz_checked"  # a capture entry's record of what it was checked against (`checked_record`)
OUTPUTS_MAX_BYTES = 256 * 1024**2  # outputs larger than this are not kept (the entry is checked by running both)
CHECK = "the capture cache's check"  # what torch printed meanwhile is held back under this name (--verbose)
STALE = ("capture: the cached graph's outputs differed from the model's on the example inputs, "
         "so the model was captured again")
MODEL_STALE = ("capture: the model's outputs on the example inputs differed from its outputs when it was captured, "
               "so the model was captured again")


# what running a cached graph that no longer fits the model or its inputs raises (torch's ops:
# RuntimeError, NotImplementedError; a call that does not match: TypeError, IndexError, ...)
STALE_GRAPH_ERRORS = (RuntimeError, TypeError, ValueError, AttributeError, KeyError, IndexError, AssertionError)


def _outputs(fn: Any, args: tuple, kwargs: dict | None) -> list:
    """The leaves of `fn`'s outputs on copies of the example inputs, with the random seed 0."""
    a, k = copy.deepcopy((args, kwargs or {}))
    torch.manual_seed(0)
    with torch.no_grad():
        return torch.utils._pytree.tree_leaves(fn(*a, **k))


def _model_outputs(model: torch.nn.Module, args: tuple, kwargs: dict | None) -> list | None:
    """The model's outputs on the example inputs (run on a private copy), or None when it fails:
    the model's own failure, not the entry's, which capturing again reports (a CaptureError)."""
    try:
        return _outputs(private_copy(model), args, kwargs)
    except Exception:
        logger.debug("the model failed while a cached capture was checked; capturing again", exc_info=True)
        return None


def _graph_outputs(gm: GraphModule, args: tuple, kwargs: dict | None) -> list | None:
    """The graph's outputs on the example inputs, or None when it cannot run on them (a cached
    graph that no longer fits them is stale); running out of memory is raised, not stale."""
    try:
        return _outputs(gm, args, kwargs)
    except torch.cuda.OutOfMemoryError:  # a failure, not a stale entry
        raise
    except STALE_GRAPH_ERRORS:
        return None


def _agree(expected: list, got: list) -> bool:
    """Whether outputs `got` are the model's `expected` ones: equal structure, shapes and dtypes,
    equal integers and other values, floats within `output_tolerance` of the model's."""
    if len(expected) != len(got):
        return False
    for e, g in zip(expected, got):
        if isinstance(e, torch.Tensor) != isinstance(g, torch.Tensor):
            return False
        if not isinstance(e, torch.Tensor):
            if e != g:
                return False
        elif e.shape != g.shape or e.dtype != g.dtype:
            return False
        else:
            g = g.to(e.device)
            tolerance = output_tolerance(e)
            if tolerance is None and not torch.equal(e, g):
                return False
            if tolerance is not None and not torch.allclose(e, g, *tolerance, equal_nan=True):
                return False
    return True


def _same_outputs(model: torch.nn.Module, gm: GraphModule, args: tuple, kwargs: dict | None) -> bool:
    """Whether `gm` gives the model's outputs on the example inputs (both run now): the check of
    an entry that holds no outputs of its graph, or whose graph is not the one that gave them."""
    expected = _model_outputs(model, args, kwargs)
    if expected is None:
        return False
    got = _graph_outputs(gm, args, kwargs)
    return got is not None and _agree(expected, got)


ULPS = 8  # how many of the dtype's eps a cached graph's output may differ by (relative, and of the output's scale)


def output_tolerance(expected: torch.Tensor) -> tuple[float, float] | None:
    """(rtol, atol) within which a cached graph's output matches the model's `expected` output;
    None for integers and bools, which must be equal.

    The model run eagerly and the lowered graph compute in different orders (a decomposed SiLU,
    fused arithmetic), so a float output differs by a few eps (the dtype's machine epsilon: 2**-7
    in bf16, 2**-10 in fp16) of the values it was computed from: measured up to 0.7 eps of the
    output's largest finite value on a 3-layer bf16 MLP, 2.1 on a 12-layer Llama, 3.0 on a 1.1B
    16-layer one. So rtol is ULPS eps of the dtype and atol ULPS eps of that largest value, never
    tighter than the check has always been for fp32 and fp64 (rtol 1e-2, atol 1e-3): in bf16,
    6 % and 6 % of the scale. The key already sees the weights and the code; this check catches a
    graph that computes something else (one weight row raised by 0.1: 70 eps of the scale), not a
    difference smaller than the dtype's rounding of a deep model.
    """
    if not (expected.is_floating_point() or expected.is_complex()):
        return None
    eps = torch.finfo(expected.dtype.to_real()).eps
    finite = expected[torch.isfinite(expected)]
    scale = float(finite.detach().abs().max()) if finite.numel() else 0.0
    return max(1e-2, ULPS * eps), max(1e-3, ULPS * eps * scale)


def graph_digest(gm: torch.fx.GraphModule) -> str:
    """A digest of what the graph computes from: its code and every attribute it reads (a tensor
    by its values, stride and device: `tensor_digest`, remembered per process, so the model's
    own weights, hashed for the key, are not hashed again). Equal for a graph and its copy read
    back from an entry; a weight or a node changed in the entry changes it."""
    parts: list[Any] = [gm.code]
    for node in gm.graph.nodes:
        if node.op == "get_attr":
            value = fetch_attr(gm, str(node.target))
            if isinstance(value, torch.Tensor):
                parts.append((str(node.target), tuple(value.stride()), value.device.type, tensor_digest(value)))
            else:
                parts.append((str(node.target), type(value).__qualname__, repr(value)))
    return digest(parts)


def checked_record(model: torch.nn.Module, gm: GraphModule, args: tuple, kwargs: dict | None) -> dict:
    """What a capture entry keeps so that a new process checks it cheaply: the graph's digest
    (`graph_digest`) and the model's `computation_digest`; for a model that cannot be
    traced on fake tensors, the graph's outputs on the example inputs instead (on the CPU; not
    when they are over OUTPUTS_MAX_BYTES or the graph cannot run on them), or the model's own
    ("model_outputs") where Torch-TensorRT's lowering made the graph's differ from them
    (hierviz.capturing.forced_causal). What torch prints or logs meanwhile (a meta kernel that
    refuses the fake run) is held back, for --verbose."""
    with torch_output.held_back(CHECK, native=False):
        return _record(model, gm, args, kwargs)


def _record(model: torch.nn.Module, gm: GraphModule, args: tuple, kwargs: dict | None) -> dict:
    record: dict[str, Any] = {"graph": graph_digest(gm),
                              "computation": computation_digest(model, args, kwargs), "outputs": None}
    if record["computation"] is None:
        differs = bool(forced_causal.forced_of(gm))
        try:
            got = _model_outputs(model, args, kwargs) if differs else _graph_outputs(gm, args, kwargs)
        except torch.cuda.OutOfMemoryError:  # the capture itself worked: kept without its outputs
            got = None
        if got is not None and sum(t.nbytes for t in got if isinstance(t, torch.Tensor)) <= OUTPUTS_MAX_BYTES:
            record["model_outputs" if differs else "outputs"] = \
                [t.detach().cpu() if isinstance(t, torch.Tensor) else t for t in got]
    return record


def cached_graph_holds(model: torch.nn.Module, gm: GraphModule, record: Any, args: tuple,
                       kwargs: dict | None) -> tuple[bool, str]:
    """Whether the cached `gm` is still the model's capture, and the note that says how that was
    checked (or why it is stale). When the entry's graph is the one its record was taken with
    (`graph_digest`: the same code and tensor values), the record answers:
    - the model's `computation_digest` then and now: equal, the model does the very computation
      it did when it was captured (the same ops on the same weights, constants and shapes), so
      the graph captured from it is still its capture, without a number computed; different,
      the graph is stale;
    - else the graph's outputs then, against the model's now (one forward instead of two);
    - else the model's outputs then (a graph whose outputs differ from the model's by Torch-TensorRT's
      lowering), against the model's now: the same, so the graph captured from it is still its capture.
    Otherwise (an entry without a record, a graph changed since, a model that cannot be traced
    now) both are run on the example inputs and compared, as they always were. What torch prints
    or logs meanwhile is held back, for --verbose."""
    with torch_output.held_back(CHECK, native=False):
        return _holds(model, gm, record, args, kwargs)


def _holds(model: torch.nn.Module, gm: GraphModule, record: Any, args: tuple,
           kwargs: dict | None) -> tuple[bool, str]:
    if isinstance(record, dict) and record.get("graph") == graph_digest(gm):
        if record.get("computation") is not None:
            now = computation_digest(model, args, kwargs)
            if now == record["computation"]:
                return True, ("the model does the computation it did when it was captured (the same aten ops on "
                              "the same weights, constants and shapes, traced on fake tensors)")
            if now is not None:
                return False, ("capture: the cached graph was stale (the model's forward now runs other aten ops, "
                               "shapes or constants than when it was captured), so the model was captured again")
        elif record.get("outputs") is not None:
            expected = _model_outputs(model, args, kwargs)
            held = expected is not None and _agree(expected, list(record["outputs"]))
            return held, ("the model's outputs on the example inputs were checked against the cached graph's "
                          "(computed when it was stored)") if held else STALE
        elif record.get("model_outputs") is not None:
            outputs_now = _model_outputs(model, args, kwargs)
            held = outputs_now is not None and _agree(list(record["model_outputs"]), outputs_now)
            return held, ("the model's outputs on the example inputs were checked against its outputs when it was "
                          "captured (the graph's differ from them by Torch-TensorRT's lowering)") if held \
                else MODEL_STALE
    held = _same_outputs(model, gm, args, kwargs)
    return held, "its outputs were checked against the model's on the example inputs" if held else STALE


__all__ = ["CHECKED", "checked_record", "cached_graph_holds", "graph_digest", "output_tolerance"]
