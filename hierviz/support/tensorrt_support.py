"""Torch-TensorRT's converter registry as a support source: `TensorRTSupport` (the live registry
or the shipped snapshot `SNAPSHOT_FILE`, read on first use by `_tensorrt_names`), the per-thread
validation session its `checking()` opens (the registry's validators set up once, and only when a
node has no verdict stored with its graph), `record_verdicts` (the validated verdicts to store
with a capture, hierviz.support.stored_verdicts) and `tensorrt_version`.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import threading
from importlib import resources
from typing import Any, Iterator

import torch

from hierviz import trt

from hierviz.support import stored_verdicts
from hierviz.foundation.opnames import CALLABLE_OPS as _CALLABLE_OPS
from hierviz.foundation.opnames import qualname
from hierviz.support.op_sets import OpSetSupport
from hierviz.support.verdict import ACCEPTED, VALIDATOR, Verdict, refused

logger = logging.getLogger(__name__)


_NO_CONVERTER = refused("no TensorRT converter")
_VALIDATOR_REJECTED = refused("converter exists, validator rejected this node", VALIDATOR)


SNAPSHOT_FILE = "trt_converters.json"
_HAS_CONVERTER: dict[Any, bool] = {}  # op target -> it has a converter (TensorRTSupport._has_converter)


@functools.lru_cache(maxsize=1)
def _tensorrt_names() -> tuple[frozenset[str], str, str]:
    stored = stored_verdicts.registry() if not trt.loaded() else None
    if stored is not None:  # a stored record of this install: the live registry's, without importing it
        return stored[0], "live", stored[1]
    if trt.available():
        names = frozenset(qualname(t) for t in trt.converter_targets())
        return names, "live", str(trt.info().version)
    data = json.loads(resources.files("hierviz.data").joinpath(SNAPSHOT_FILE).read_text())
    return frozenset(data["ops"]), "snapshot", data["torch_tensorrt_version"]


class TensorRTSupport(OpSetSupport):
    """Torch-TensorRT's converter registry (live, or the shipped snapshot), loaded on first use.

    Validated (the default): a node is supported when a converter for its op exists and that
    converter's capability validator accepts the node, as torch_tensorrt.compile asks
    (`node in DYNAMO_CONVERTERS`). `validate=False`: op names only, as upstream's hierarchical
    partitioner checks. The snapshot (no torch_tensorrt installed) has names only and cannot
    validate; its description says so."""

    # The registry is read on first use (names, source, version, description are properties),
    # so that every TensorRTSupport describes itself the same way.
    packets = frozenset()

    def __init__(self, validate: bool) -> None:  # not super().__init__: it would set what the registry answers
        self._key = ("tensorrt", validate)
        self.kind = "tensorrt"
        self._reject = "no TensorRT converter"
        self._validate = validate

    @property
    def per_node(self) -> bool:  # type: ignore[override]  # read-only here: whether the registry validates
        return self.validate

    names = property(lambda self: _tensorrt_names()[0], doc="the op names with a converter")
    source = property(lambda self: _tensorrt_names()[1], doc='"live" (the installed registry) or "snapshot"')
    version = property(lambda self: _tensorrt_names()[2], doc="the Torch-TensorRT version the names are from")

    @property
    def validate(self) -> bool:
        return self._validate and _tensorrt_names()[1] == "live"

    @property
    def description(self) -> str:  # type: ignore[override]  # read-only here: the registry's, on first use
        if self.source != "live":
            return (f"Torch-TensorRT {self.version} converter registry (snapshot; op names only: "
                    "it cannot run the capability validators without torch_tensorrt installed)")
        if not self._validate:
            return (f"Torch-TensorRT {self.version} converter registry (live; op names only, "
                    "validators not run: tensorrt(validate=False))")
        return f"Torch-TensorRT {self.version} converter registry ({self.source})"

    def checking(self) -> Any:
        """The context the engine checks many nodes in: the converter registry set up once
        (hierviz.trt.validating) instead of once per node, and only when a node needs it (the
        verdicts stored with a captured graph need no validator: hierviz.support.stored_verdicts)."""
        return _validating_on_demand() if self.validate else contextlib.nullcontext()

    def verdict(self, node: torch.fx.Node) -> Verdict:
        if self.validate:
            stored = _stored(node)
            if stored is not None:
                return stored
        if not self._has_converter(node.target):
            return _NO_CONVERTER
        if self.validate:
            try:
                validator = _session_validator()
                if validator is None:  # outside checking(): set the registry up for this node
                    with trt.validating() as validator:
                        ok = validator.accepts(node)
                else:
                    ok = validator.accepts(node)
            except Exception as exc:  # Torch-TensorRT's validator crashing counts as a rejection
                logger.debug("the validator of %s failed", node.target, exc_info=True)
                return refused(f"converter exists, validator failed: {type(exc).__name__}: {exc}", VALIDATOR)
            if not ok:
                return _VALIDATOR_REJECTED
        return ACCEPTED

    def constant_for(self, node: torch.fx.Node) -> bool:
        """No converter, op names only, or a converter the Validator of the open checking()
        context keeps per target (hierviz.trt.Validator.constant); a stored verdict is per node."""
        if not self._has_converter(node.target) or not self.validate:
            return True
        if _stored(node) is not None:
            return False
        validator = trt.current_validator()
        return validator is not None and validator.constant(node)

    def _has_converter(self, target: Any) -> bool:
        """accepts_name(qualname(target)), kept per target (the registry's names never change)."""
        try:
            return _HAS_CONVERTER[target]
        except KeyError:
            ok = _HAS_CONVERTER[target] = self.accepts_name(qualname(target))
            return ok
        except TypeError:  # an unhashable target
            return self.accepts_name(qualname(target))

    def to_dict(self) -> dict:
        return {"kind": "tensorrt", "validate": self._validate}


class _Session(threading.local):
    """This thread's open TensorRTSupport.checking() context: its depth, the stack that holds
    the converter registry's validating() once a node needed it, and the stored verdicts of
    each graph met (None: none that hold)."""

    depth = 0
    stack: contextlib.ExitStack | None = None
    graphs: dict | None = None


_SESSION = _Session()
_TENSORRT_VALIDATED = {"kind": "tensorrt", "validate": True}  # tensorrt().to_dict(): the stored verdicts' support


@contextlib.contextmanager
def _validating_on_demand() -> Iterator[None]:
    """A checking() context for validated TensorRT support: hierviz.trt.validating() entered on
    the first node that needs a validator (never, when every node has a stored verdict), and
    left with the outermost context; re-entrant."""
    if _SESSION.depth:
        _SESSION.depth += 1
        try:
            yield
        finally:
            _SESSION.depth -= 1
        return
    with contextlib.ExitStack() as stack:
        _SESSION.depth, _SESSION.stack, _SESSION.graphs = 1, stack, {}
        try:
            yield
        finally:
            _SESSION.depth, _SESSION.stack, _SESSION.graphs = 0, None, None


def _session_validator() -> Any:
    """The open validating() context's Validator, entering it for this thread's checking()
    context when that has none yet; None outside both."""
    validator = trt.current_validator()
    if validator is None and _SESSION.stack is not None:
        validator = _SESSION.stack.enter_context(trt.validating())
    return validator


def _stored(node: torch.fx.Node) -> Verdict | None:
    """The verdict stored with the node's graph (hierviz.support.stored_verdicts), inside a checking()
    context (the graph's record checked once per context); None where none holds."""
    graphs = _SESSION.graphs
    if graphs is None:
        return None
    graph = node.graph
    if graph not in graphs:
        graphs[graph] = stored_verdicts.held(graph, _TENSORRT_VALIDATED)
    verdicts = graphs[graph]
    found = verdicts.get(node.name) if verdicts is not None else None
    return None if found is None else Verdict(*found)


def record_verdicts(gm: torch.fx.GraphModule) -> dict | None:
    """The validated TensorRT verdicts of every callable node of `gm`, asked of the live
    converter registry now, as a record to store with its capture (hierviz.support.stored_verdicts);
    None without torch_tensorrt (the snapshot cannot validate)."""
    sup = TensorRTSupport(validate=True)  # what tensorrt() makes
    if not sup.validate or not trt.loaded() or _has_symbolic_shapes(gm):
        # a validator reading a symbolic size guards on it, which would narrow the captured
        # graph's dynamic range to the example's size: such graphs are validated when partitioned
        return None
    verdicts = {}
    with trt.validating():  # outside checking(): every verdict asked of the registry itself
        for n in gm.graph.nodes:
            if n.op in _CALLABLE_OPS:
                v = sup.verdict(n)
                verdicts[n.name] = (v.ok, v.code, v.why)
    return stored_verdicts.make(gm.graph, sup.to_dict(), sup.names, sup.version, verdicts)


def _has_symbolic_shapes(gm: torch.fx.GraphModule) -> bool:
    """True when an input of `gm` has a symbolic (dynamic) size."""
    for n in gm.graph.nodes:
        if n.op == "placeholder":
            val = n.meta.get("val")
            if isinstance(val, torch.Tensor) and any(isinstance(d, torch.SymInt) for d in val.shape):
                return True
    return False


def tensorrt_version() -> str | None:
    """The Torch-TensorRT version whose live converter registry hv.support.tensorrt() answers
    with (from a stored record, without importing it, where one held), None with the snapshot."""
    _, source, version = _tensorrt_names()
    return version if source == "live" else None


__all__ = ["SNAPSHOT_FILE", "TensorRTSupport", "record_verdicts", "tensorrt_version"]
