"""Backend support sources: which nodes a backend can take, and why not.

`Support.verdict(node)` answers a `Verdict(ok, code, why)`: accepted, or the code of the
refusal (`unsupported`, or `validator_rejected` when a converter exists but its capability
validator refuses the node) and its reason; `check(node)` is the same as `(ok, why)`. Sources
compose as torch.fx's OperatorSupportBase does: `chain(a, b)` takes a node when every source
does, `any_chain(a, b)` when one does. Most sources decide per op target, which the engine
caches; `where(...)` and `tensorrt()` (validated, the default) look at each node.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import threading
import warnings
from importlib import resources
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import torch

from hierviz import trt

from hierviz.support import stored_verdicts
from hierviz.errors import ConfigError
from hierviz.foundation.arguments import check_bool
from hierviz.support.inductor_ops import fallback_refusal, lowered_names
from hierviz.foundation.opnames import CALLABLE_OPS as _CALLABLE_OPS
from hierviz.foundation.opnames import in_op_set, packets_in, normalize_all, qualname
from hierviz.support.support_key import callable_content

logger = logging.getLogger(__name__)


# The codes of a verdict (the partitioner's reason codes of the same names, hierviz.partitioner).
SUPPORTED = "supported"
UNSUPPORTED = "unsupported"
VALIDATOR = "validator_rejected"  # a converter exists, but its capability validator refuses the node


@dataclass(frozen=True)
class Verdict:
    """What a support source says of one node: `ok`, else the refusal's `code` and `why`."""

    ok: bool
    code: str = SUPPORTED
    why: str = ""


ACCEPTED = Verdict(True)


def refused(why: str, code: str = UNSUPPORTED) -> Verdict:
    return Verdict(False, code, why)


_NO_CONVERTER = refused("no TensorRT converter")
_VALIDATOR_REJECTED = refused("converter exists, validator rejected this node", VALIDATOR)


class Support:
    """Which nodes a backend accepts. Hashable and comparable by what it describes."""

    per_node: bool = False  # True when check() depends on more than the node's target

    def __init__(self, key: tuple, description: str) -> None:
        self._key = key
        self.description = description

    def __hash__(self) -> int:
        return hash(self._key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Support) and self._key == other._key

    def __repr__(self) -> str:
        return f"Support({self.description})"

    def accepts_name(self, name: str) -> bool:
        """Whether an op with this qualified name is supported (target-level answer)."""
        raise NotImplementedError

    def verdict(self, node: torch.fx.Node) -> Verdict:
        """Whether this source takes one node, and if not, the code and reason."""
        if type(self).check is not Support.check:  # a subclass that answers check() itself
            ok, why = self.check(node)
            return ACCEPTED if ok else refused(why)
        name = qualname(node.target)
        return ACCEPTED if self.accepts_name(name) else refused(self.rejection(name))

    def check(self, node: torch.fx.Node) -> tuple[bool, str]:
        """(accepted, reason when not accepted) for one node: `verdict(node)` as a pair."""
        v = self.verdict(node)
        return v.ok, v.why

    def rejection(self, name: str) -> str:
        return f"not in {self.description}"

    def constant_for(self, node: torch.fx.Node) -> bool:
        """Whether `verdict(node)` is the verdict of every node with this node's target in the
        same graph while the current `checking()` context is open, so that a caller may keep
        it per target. True for sources that decide per op target."""
        return not self.per_node

    def checking(self) -> Any:
        """A context that `check` is called in for many nodes at once (set-up done once)."""
        return contextlib.nullcontext()

    def how(self, name: str) -> str:
        """How the backend runs an accepted op, when it has several ways ('' otherwise)."""
        return ""

    def to_dict(self) -> dict:
        raise NotImplementedError

    def content(self) -> Any:
        """What this source takes, as JSON-able content that is the same in every process
        (hierviz.support.support_key): its to_dict() form, unless the source holds code."""
        return self.to_dict()


class OpSetSupport(Support):
    def __init__(self, names: frozenset[str], key: tuple, description: str, kind: str,
                 reject: str = "") -> None:
        super().__init__(key, description)
        self.names = names
        self.packets = packets_in(names)
        self.kind = kind
        self._reject = reject

    def accepts_name(self, name: str) -> bool:
        return in_op_set(name, self.names, self.packets)

    def rejection(self, name: str) -> str:
        return self._reject or f"not in {self.description}"

    def to_dict(self) -> dict:
        if self.kind == "ops":
            return {"kind": "ops", "ops": sorted(self.names)}
        return {"kind": self.kind}


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


class PredicateSupport(Support):
    per_node = True

    def __init__(self, predicate: Callable[[torch.fx.Node], bool], name: str | None) -> None:
        label = name or getattr(predicate, "__name__", "predicate")
        super().__init__(("where", predicate), f"where({label})")
        self.predicate = predicate
        self._warned = False

    def accepts_name(self, name: str) -> bool:  # pragma: no cover - per-node only
        raise TypeError("where() support is decided per node")

    def verdict(self, node: torch.fx.Node) -> Verdict:
        try:
            ok = bool(self.predicate(node))
        except Exception as exc:  # the user's predicate; reported, not fatal
            logger.debug("%s raised on node %s", self.description, node.name, exc_info=True)
            why = f"{self.description} raised {type(exc).__name__}: {exc}"
            if not self._warned:  # once per support: a broken predicate fails on every node
                self._warned = True
                warnings.warn(f"hv.support.{why} on node {node.name!r} ({qualname(node.target)}); "
                              "the node is treated as not supported. Fix the predicate so that it "
                              "returns True/False for every node (this warning is shown once).",
                              RuntimeWarning, stacklevel=2)
            return refused(why)
        return ACCEPTED if ok else refused(f"rejected by {self.description}")

    def to_dict(self) -> dict:
        return {"kind": "where", "name": self.description}

    def content(self) -> Any:
        return {**self.to_dict(), "predicate": callable_content(self.predicate)}


class ComposedSupport(Support):
    """`chain(...)` (every source takes the node) or `any_chain(...)` (one does), as torch.fx's
    OperatorSupportBase composes; a refusal is validator_rejected when one of the refusals is."""

    def __init__(self, kind: str, parts: tuple[Support, ...]) -> None:
        bad = [p for p in parts if not isinstance(p, Support)]
        if not parts or bad:
            raise ConfigError(f"hv.support.{kind}() takes hv.Support sources (hv.support.ops(...), ...), "
                              f"not {[type(p).__name__ for p in bad] or 'nothing'}.")
        super().__init__((kind, parts), f"{kind}({', '.join(p.description for p in parts)})")
        self.kind, self.parts, self.per_node = kind, parts, any(p.per_node for p in parts)

    def constant_for(self, node: torch.fx.Node) -> bool:
        return all(p.constant_for(node) for p in self.parts)

    def accepts_name(self, name: str) -> bool:
        answers = (p.accepts_name(name) for p in self.parts)
        return all(answers) if self.kind == "chain" else any(answers)

    def verdict(self, node: torch.fx.Node) -> Verdict:
        verdicts = [p.verdict(node) for p in self.parts]
        refusals = [v for v in verdicts if not v.ok]
        accepted = not refusals if self.kind == "chain" else len(refusals) < len(verdicts)
        if accepted:
            return ACCEPTED
        code = VALIDATOR if any(v.code == VALIDATOR for v in refusals) else UNSUPPORTED
        return refused("; ".join(v.why for v in refusals), code)

    @contextlib.contextmanager
    def checking(self) -> Any:
        with contextlib.ExitStack() as stack:
            yield [stack.enter_context(p.checking()) for p in self.parts]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "of": [p.to_dict() for p in self.parts]}

    def content(self) -> Any:
        return {"kind": self.kind, "of": [p.content() for p in self.parts]}


def chain(*sources: Support) -> Support:
    """A node is supported when every source takes it (torch.fx's `chain`)."""
    return ComposedSupport("chain", sources)


def any_chain(*sources: Support) -> Support:
    """A node is supported when one of the sources takes it (torch.fx's `any_chain`)."""
    return ComposedSupport("any_chain", sources)


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


class InductorSupport(OpSetSupport):
    """What TorchInductor compiles: ops it lowers, plus (with `fallbacks`) every other
    OpOverload it runs as an implicit fallback kernel, minus the ops it refuses (even those
    it has a lowering for, e.g. nonzero: torch._inductor.compile fails on them)."""

    def __init__(self, fallbacks: bool) -> None:
        what = "lowerings and fallback kernels" if fallbacks else "lowerings"
        super().__init__(lowered_names(), ("inductor",) if fallbacks else ("inductor", False),
                         f"TorchInductor's {what}", "inductor", reject="no TorchInductor lowering")
        self.fallbacks = fallbacks

    def accepts_name(self, name: str) -> bool:
        if name == "_operator.getitem":
            return True
        if not self.fallbacks:
            return super().accepts_name(name) and not fallback_refusal(name)
        return not fallback_refusal(name)  # also refuses lowered ops such as nonzero

    def rejection(self, name: str) -> str:
        why = fallback_refusal(name)
        if why.startswith("TorchInductor cannot"):
            return why
        return (why or "no TorchInductor lowering") if self.fallbacks \
            else "no TorchInductor lowering (fallback kernels left out: inductor(fallbacks=False))"

    def how(self, name: str) -> str:
        """'lowered' or 'fallback kernel': how TorchInductor compiles an accepted op."""
        return "lowered" if super().accepts_name(name) else "fallback kernel"

    def to_dict(self) -> dict:
        return {"kind": "inductor"} if self.fallbacks else {"kind": "inductor", "fallbacks": False}


def tensorrt(validate: bool = True) -> Support:
    """Torch-TensorRT's converters, each converter's capability validator run on the node, as
    torch_tensorrt.compile does (squeezenet's max_pool2d(ceil_mode=True) has a converter that
    refuses it). `validate=False` checks op names only, as upstream's hierarchical partitioner
    does. Without torch_tensorrt installed: the shipped snapshot, op names only."""
    check_bool(validate, "hv.support.tensorrt(validate=...)")
    return TensorRTSupport(validate)


def inductor(fallbacks: bool = True) -> Support:
    """Every op TorchInductor compiles: its lowerings and decompositions ("lowered") and every
    other OpOverload it runs as an implicit fallback kernel ("fallback kernel"), except what
    `torch._inductor.compile` refuses on a captured subgraph: ops with data-dependent output
    shapes or values, and non-aten ops whose output aliases an input (prims.broadcast_in_dim). `fallbacks=False` keeps
    only the ops it lowers itself."""
    check_bool(fallbacks, "hv.support.inductor(fallbacks=...)")
    return InductorSupport(fallbacks)


def ops(names: Iterable[Any]) -> Support:
    """An explicit set of ops (qualified names or OpOverloads; a packet name takes all overloads)."""
    normalized = normalize_all(names, field="support.ops")
    return OpSetSupport(normalized, ("ops", normalized), f"ops({len(normalized)} ops)", "ops")


def where(predicate: Callable[[torch.fx.Node], bool], name: str | None = None) -> Support:
    """Support decided by a callable on each `torch.fx.Node`. An exception in the predicate
    counts as "not supported" and warns once, naming the node."""
    if not callable(predicate):
        raise ConfigError(f"hv.support.where() needs a callable taking a torch.fx.Node and returning "
                          f"True/False, not {type(predicate).__name__} {predicate!r}; e.g. "
                          "hv.support.where(lambda node: node.target in my_ops).")
    return PredicateSupport(predicate, name)


def none() -> Support:
    """No ops at all (Torch-TensorRT's default for inductor)."""
    return OpSetSupport(frozenset(), ("ops", frozenset()), "no ops (pass support={...} to enable)", "ops",
                        reject="backend has no support set (Torch-TensorRT's default: no ops)")


def from_dict(d: dict) -> Support:
    kind = d.get("kind")
    if kind == "tensorrt":
        return tensorrt(bool(d.get("validate", True)))
    if kind == "inductor":
        return inductor(bool(d.get("fallbacks", True)))
    if kind == "ops":
        return ops(d.get("ops", []))
    if kind in ("chain", "any_chain") and isinstance(d.get("of"), (list, tuple)):
        return ComposedSupport(kind, tuple(from_dict(p) if isinstance(p, dict) else p for p in d["of"]))
    raise ConfigError(f"support of kind {kind!r} cannot be rebuilt from a dict; pass a hv.Support.")


def upstream_default(backend: str) -> Support | None:
    """The defaults: tensorrt = the converter registry with its validators (what
    torch_tensorrt.compile converts), inductor = no ops (Torch-TensorRT's)."""
    if backend == "tensorrt":
        return tensorrt()
    if backend == "inductor":
        return none()
    return None


# The named support sources (the explorer's support picker, the CLI's --inductor-support, the
# tables' support column): name -> (what it is, the source). "default" (Config's None) is not
# one of them: it means Torch-TensorRT's default for each backend (upstream_default).
SOURCES: dict[str, tuple[str, Callable[[], Support]]] = {
    "tensorrt": ("Torch-TensorRT converters + validators", lambda: tensorrt()),
    "tensorrt-names": ("converter names only", lambda: tensorrt(validate=False)),
    "inductor": ("TorchInductor lowerings", lambda: inductor()),
    "none": ("no ops", lambda: none()),
}
# Other names the command line takes for a source: `--inductor-support all`.
SOURCE_ALIASES = {"all": "inductor"}


def source_name(sup: Any) -> str:
    """A short name for a Support: its SOURCES name (tensorrt, tensorrt-names, inductor, none),
    ops(N) for an explicit op set, else its description."""
    if isinstance(sup, TensorRTSupport):
        return "tensorrt" if sup.to_dict().get("validate", True) else "tensorrt-names"
    if isinstance(sup, OpSetSupport):
        if sup.kind == "inductor":
            return "inductor"
        if not sup.names:
            return "none"
        return f"ops({len(sup.names)})"
    return getattr(sup, "description", type(sup).__name__)


def from_source(name: str) -> Support:
    """The Support a SOURCES name (or alias) stands for; ConfigError naming them otherwise."""
    key = SOURCE_ALIASES.get(name, name)
    if key not in SOURCES:
        raise ConfigError(f"unknown support source {name!r}; use one of {', '.join([*SOURCES, *SOURCE_ALIASES])}.")
    return SOURCES[key][1]()


def added_ops(sup: Any) -> frozenset[str] | None:
    """The ops `sup` adds to Torch-TensorRT's validated converters: empty for tensorrt() itself,
    the op names of any_chain(tensorrt(), ops([...])) (nested any_chains too); None for any
    other support, which compile's partitioners cannot apply."""
    if sup == tensorrt(validate=True):
        return frozenset()
    if not isinstance(sup, ComposedSupport) or sup.kind != "any_chain":
        return None
    names: set[str] = set()
    registry = False
    for part in sup.parts:
        if isinstance(part, OpSetSupport) and part.kind == "ops":
            names |= part.names
            continue
        inner = added_ops(part)
        if inner is None:
            return None
        names |= inner
        registry = True
    return frozenset(names) if registry else None
