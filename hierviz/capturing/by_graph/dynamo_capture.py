"""Capture by graph break: the graphs `torch.compile(model, backend="torch_tensorrt")` compiles.

`hv.capture(model, inputs, ir="torch_compile")` runs a private copy of the model once on the
example inputs under `torch.compile(dynamic=False)` (as `torch_tensorrt.compile(ir=
"torch_compile")` does), with a backend that records each graph dynamo hands it, lowers a copy
with Torch-TensorRT's own front half (hierviz.trt.lower_dynamo_graph; torch's core aten
decompositions when torch_tensorrt is absent; each lowered node keeps the aten op it came from,
hierviz.capturing.provenance.recorded_sources, for hv.source_ops) and runs dynamo's graph unchanged, so the run
goes on as eager PyTorch would. Graph breaks come from two places dynamo documents: the reason
it compiled each graph (`GraphCompileReason`, on the graph module) and its `graph_breaks` log
(what `TORCH_LOGS=graph_breaks` prints: every break with its type, explanation and hints, also
those that ended no graph). The model, its parameters and the RNG state are left as they were,
and dynamo's caches are reset after, so nothing stays compiled.

Where Torch-TensorRT's lowering fails on a graph, capture answers as its backend does
(`_pretraced_backend`, with the default pass_through_build_failures=False), by exception class
(hierviz.trt.caught_by_backend): an AssertionError, RuntimeError or TypeError makes that graph
run eagerly and the run goes on (the graph is kept, dynamo's own, its `fell_back` saying why);
any other exception makes torch.compile raise BackendCompilerFailed, and capture a CaptureError.
"""

from __future__ import annotations

import contextlib
import copy
import linecache
import logging
import re
import unittest.mock
from dataclasses import dataclass
from typing import Any, Iterator, Sequence, cast

import torch
from torch.fx import GraphModule
from torch.utils._pytree import tree_leaves

from hierviz import trt
from hierviz.foundation import torch_output
from hierviz.errors import CaptureError
from hierviz.capturing.by_graph.dynamo_graph import NEW_FRAME, RESUMED, DynamoGraph
from hierviz.capturing.by_graph.graph_break import GraphBreak, is_resumed, parse_reason, user_function
from hierviz.capturing.by_graph.graph_value import GraphValue, describe
from hierviz.capturing.by_graph.graphs_and_breaks import GraphsAndBreaks
from hierviz.capturing import forced_causal
from hierviz.capturing.model_copy import private_copy, rng_preserved
from hierviz.capturing.provenance import recorded_sources
from hierviz.capturing.target_device import DEFAULT_TARGET, cpu_only_error, lowering_for, mark, target_text
from hierviz.foundation.error_text import first_line, message_line
from hierviz.foundation.opnames import qualname
from hierviz.foundation.stack_traces import Frame, frames

# dynamo's graph-break log (torch._logging's "graph_breaks" artifact of symbolic_convert)
BREAK_LOG = "torch._dynamo.symbolic_convert.__graph_breaks"
_LOGGED = re.compile(r"in user code at (?P<file>.*?):(?P<line>\d+)\nGraph Break Reason: (?P<reason>.*)", re.S)
_REASON_END = ("\n\nStack variable source attribution:", "\n\nUser code traceback:", "\nUser code traceback:")
NOTES = "hierviz_capture_notes"  # GraphModule.meta key: what the capture says of the graph (capturing.capture_notes)
BACKEND_FAILED = "runs eagerly: Torch-TensorRT's backend failed on it"
LINE_LIMIT = 300  # characters of an error's first line kept in what the capture says


@dataclass(frozen=True, eq=False)
class DynamoCapture(GraphsAndBreaks[DynamoGraph]):
    """What `hv.capture(model, inputs, ir="torch_compile")` returns: `graphs`, one DynamoGraph
    per graph dynamo compiled, in execution order; `breaks`, one GraphBreak per graph break,
    in the order they happened; `model` the captured model's class name. A sequence of its
    graphs (GraphsAndBreaks)."""

    graphs: tuple[DynamoGraph, ...]  # the base's field, named with its type for the constructor
    # (shape, dtype) of each tensor the model was called with (its inputs' leaves), in order:
    # dynamo specialised every graph to them (dynamic=False)
    input_specs: tuple = ()
    # what the capture says of itself: it came from the disk cache (hierviz.capturing.aten_capture)
    notes: tuple[str, ...] = ()
    # (device, the report's line on it) its graphs were lowered for (hierviz.capturing.target_device)
    traced_for: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return (f"<hv.DynamoCapture of {self.model}: {len(self.graphs)} graph(s), "
                f"{len(self.breaks)} graph break(s), {sum(len(g.ops) for g in self.graphs)} ops>")


def lowered(gm: GraphModule, sample_inputs: Sequence[Any], target: str = DEFAULT_TARGET) -> GraphModule:
    """The aten graph of dynamo's graph `gm` (a copy is lowered) for `target`: Torch-TensorRT's
    backend's front half, or without torch_tensorrt the same AOT export with torch's core
    decompositions; its composite ops decomposed as on the target (hierviz.capturing.target_device)."""
    work = copy.deepcopy(gm)
    with lowering_for(target), forced_causal.recorded(_model_state(gm)) as forced, recorded_sources() as traced:
        out = _lowered(work, sample_inputs)
        traced.append(out)
    return forced_causal.mark(out, forced)


def _model_state(gm: GraphModule) -> list[torch.Tensor | None]:
    """For each input of dynamo's graph `gm`, in order: the model's own tensor it is (a weight, a buffer, a
    tensor attribute: dynamo lifts them into inputs, reached from the module), or None for an input the
    model was called with or an earlier graph made."""
    from torch._dynamo.source import is_from_unspecialized_nn_module_source

    state: list[torch.Tensor | None] = []
    for node in gm.graph.nodes:
        if node.op == "placeholder":
            arg = node.meta.get("grapharg")
            source, example = getattr(arg, "source", None), getattr(arg, "example", None)
            own = source is not None and isinstance(example, torch.Tensor) and \
                is_from_unspecialized_nn_module_source(source)
            state.append(example if own else None)
    return state


def _lowered(work: GraphModule, sample_inputs: Sequence[Any]) -> GraphModule:
    if trt.available():
        return trt.lower_dynamo_graph(work, sample_inputs)
    from torch._decomp import core_aten_decompositions
    from torch._functorch.aot_autograd import aot_export_joint_simple

    fake_mode = trt.fake_mode_of(sample_inputs)
    with unittest.mock.patch.object(fake_mode, "allow_non_fake_inputs", True), fake_mode:
        # torch annotates `args` a tuple, `decompositions` a plain dict and the result a Callable:
        # it flattens any sequence, takes torch's own decomposition table and returns a GraphModule
        return cast(GraphModule, aot_export_joint_simple(
            work, sample_inputs, trace_joint=False,  # type: ignore[arg-type]  # any flat sequence
            decompositions=core_aten_decompositions()))  # type: ignore[arg-type]  # torch's own table


def describes(graph: DynamoGraph, gm: GraphModule) -> bool:
    """Whether dynamo's graph `gm` (as a backend receives it) is the one `graph` was captured
    from: the same inputs and outputs (names, shapes, dtypes) traced from the same user line.
    A run of the same model on the same inputs compiles the same graphs in the same order."""
    return (_values(gm, "placeholder") == graph.inputs and _values(gm, "output") == graph.outputs
            and _frame_of(gm) == (graph.function, graph.file, graph.line))


def _kept(value: Any, weights: set[int]) -> Any:
    """A first call's input kept for later: the model's weights as they are, tensors copied."""
    if isinstance(value, torch.Tensor):
        return value if id(value) in weights else value.detach().clone()
    return value


def _values(gm: GraphModule, which: str) -> tuple[GraphValue, ...]:
    """The dynamo graph's inputs ('placeholder') or outputs ('output'), from dynamo's examples."""
    if which == "placeholder":
        nodes = [n for n in gm.graph.nodes if n.op == "placeholder"]
    else:
        out = next(n for n in gm.graph.nodes if n.op == "output")
        nodes = _flat(out.args)
    return tuple(describe(n.name, n.meta.get("example_value", n.meta.get("val"))) for n in nodes)


def _flat(args: Any) -> list[torch.fx.Node]:
    found: list[torch.fx.Node] = []
    torch.fx.node.map_arg(args, found.append)
    return found


def _frame_of(gm: GraphModule) -> tuple[str, str, int]:
    """(function, file, line) of the frame dynamo compiled the graph from (the outermost frame of
    its first op's stack; functions it inlined are below it), at that op's line."""
    for node in gm.graph.nodes:
        found = frames(node.meta.get("stack_trace"))
        if found:
            return user_function(found[0].function), found[0].file, found[0].line
    return "", "", 0


def _files_of(gm: GraphModule) -> tuple[str, ...]:
    """The source files dynamo traced dynamo's graph `gm` from (every frame of its ops' stacks,
    functions it inlined included), sorted."""
    files = {frame.file for node in gm.graph.nodes for frame in frames(node.meta.get("stack_trace"))}
    return tuple(sorted(files))


def _resumed(gm: GraphModule) -> bool:
    """Whether dynamo compiled the graph from a frame it resumes after a graph break."""
    for node in gm.graph.nodes:
        found = frames(node.meta.get("stack_trace"))
        if found:
            return is_resumed(found[0].function)
    return False


def _starts(k: int, item: dict, previous: dict | None) -> str:
    """Why graph k starts: the forward's first graph, a frame resumed after a break, or a new
    frame called from Python that dynamo ran eagerly (the frame holding a break inside a loop
    runs in Python, and each function it calls is compiled on its own)."""
    function, file, line = item["frame"]
    function = f"{function or '?'}" + (f" ({file}:{line})" if file else "")
    ended = previous.get("ended_by") if previous is not None else None
    after = f" after the graph break at {ended.location}" if ended is not None and ended.location else \
        (" after a graph break" if ended is not None else "")
    if k == 0:
        return ""
    if item.get("resumed"):
        return f"dynamo resumes {function}{after}"
    return f"a new frame: {function}, called from Python that dynamo ran eagerly{after}"


def _user_frames(found: list[Frame]) -> tuple[str, ...]:
    """The frames dynamo traced, from a logged traceback: those below hierviz's own call of the
    compiled model, without torch.nn.Module's call machinery."""
    last = max((k for k, frame in enumerate(found) if frame.file == __file__), default=-1)
    return tuple(f"{f.file}:{f.line} in {user_function(f.function)}" for f in found[last + 1:]
                 if not f.file.endswith(("torch/nn/modules/module.py", "torch/_dynamo/eval_frame.py")))


@contextlib.contextmanager
def _breaks_logged(events: list) -> Iterator[None]:
    """Every graph break dynamo logs while the block runs, appended to `events` as
    ("break", fields); the log's own output is held back (restored after)."""
    log = logging.getLogger(BREAK_LOG)

    def record(rec: logging.LogRecord) -> bool:
        match = _LOGGED.search(rec.getMessage())
        if match:
            reason = match.group("reason")
            for end in _REASON_END:
                reason = reason.split(end, 1)[0]
            tail = match.group("reason")[len(reason):]
            stack = _user_frames(frames(tail))
            events.append(("break", {"file": match.group("file"), "line": int(match.group("line")),
                                     "reason": reason.strip(), "stack": stack}))
        return False  # held back: hv.capture says it in its record instead

    # dynamo logs a break it has logged before in this process only once: forget them, so a
    # second capture of the same code (another instance of the model) hears every break
    from torch._dynamo.utils import reset_graph_break_dup_checker

    reset_graph_break_dup_checker()
    saved = log.level, log.propagate
    log.setLevel(logging.DEBUG)
    log.addFilter(record)
    try:
        yield
    finally:
        log.removeFilter(record)
        log.setLevel(saved[0])
        log.propagate = saved[1]


def _break_of(after: int, ended: bool, logged: dict | None, compiled: Any) -> GraphBreak:
    """A GraphBreak from dynamo's log entry and/or the GraphCompileReason of the graph it ended."""
    stack = list(getattr(compiled, "user_stack", None) or [])
    reason = (logged or {}).get("reason") or getattr(compiled, "reason", "") or ""
    gb_type, explanation, hints = parse_reason(reason)
    if stack:
        last = stack[-1]
        file, line, function, code = last.filename, int(last.lineno or 0), user_function(last.name), last.line or ""
        frames = tuple(f"{f.filename}:{f.lineno} in {user_function(f.name)}" for f in stack)
    else:
        file, line = (logged or {}).get("file", ""), (logged or {}).get("line", 0)
        frames = (logged or {}).get("stack", ())
        function = frames[-1].rsplit(" in ", 1)[-1] if frames else ""
        code = linecache.getline(file, line).strip() if file else ""
    return GraphBreak(after_graph=after, ended_graph=ended, reason=reason, gb_type=gb_type,
                      explanation=explanation, hints=hints, file=file, line=line, function=function,
                      code=code.strip(), stack=frames)


def _location(compiled: Any) -> tuple[str, int] | None:
    stack = getattr(compiled, "user_stack", None) or []
    return (stack[-1].filename, int(stack[-1].lineno or 0)) if stack else None


def _assemble(events: list) -> tuple[list[dict], list[GraphBreak]]:
    """The graphs in execution order and the breaks in the order they happened, from the run's
    events: a logged break ends the next graph compiled when it is at that graph's compile
    reason's line; the others ended no graph (dynamo had traced nothing since the last one)."""
    graphs: list[dict] = []
    breaks: list[GraphBreak] = []
    pending: list[dict] = []
    for kind, item in events:
        if kind == "break":
            pending.append(item)
            continue
        k = len(graphs)
        graphs.append(item)
        compiled = item["reason"]
        ends = bool(compiled is not None and getattr(compiled, "graph_break", False))
        where = _location(compiled) if ends else None
        match = next((j for j in range(len(pending) - 1, -1, -1)
                      if where is not None and (pending[j]["file"], pending[j]["line"]) == where), None)
        breaks += [_break_of(k - 1, False, p, None) for j, p in enumerate(pending) if j != match]
        if ends:
            item["ended_by"] = _break_of(k, True, pending[match] if match is not None else None, compiled)
            breaks.append(item["ended_by"])
        pending = []
    breaks += [_break_of(len(graphs) - 1, False, p, None) for p in pending]
    return graphs, breaks


def _backend_failed(model: torch.nn.Module, events: list, k: int, failure: BaseException) -> CaptureError:
    """The CaptureError for graph `k`, on which the lowering raised what Torch-TensorRT's backend
    does not catch."""
    item = [item for kind, item in events if kind == "graph"][k]
    function, file, line = item["frame"]
    where = f" ({function}, {file}:{line})" if file else ""
    caught = ", ".join(c.__name__ for c in trt.BACKEND_CATCHES)
    return CaptureError(
        f"Torch-TensorRT's backend failed on graph {k} of {type(model).__name__}: {type(failure).__name__}: "
        f"{message_line(failure, LINE_LIMIT)}\nHint: torch.compile(model, backend='torch_tensorrt') raises "
        f"BackendCompilerFailed here too: Torch-TensorRT's backend catches only {caught} (and then runs that "
        f"graph eagerly), not {type(failure).__name__}. Capture the part of the model graph {k} comes from"
        f"{where} to find the op, or capture it with ir='dynamo' (torch.export)."
    )


def capture_by_graph_break(model: torch.nn.Module, args: tuple, kwargs: dict | None,
                           target: str = DEFAULT_TARGET) -> DynamoCapture:
    """Run a private copy of `model` once on (args, kwargs) under torch.compile(dynamic=False)
    with a recording backend; the graphs and breaks it saw, each graph lowered for `target`.
    CaptureError when the run fails."""
    work = private_copy(model)
    weights = {id(t) for t in (*work.parameters(), *work.buffers())}
    events: list = []
    failures: list[tuple[int, BaseException]] = []
    # id(tensor) -> (graph, output position) of each graph's first call's outputs; `alive` holds
    # those tensors until the run ends, so no id is reused while it is looked up
    produced: dict[int, tuple[int, int]] = {}
    alive: list = []

    def backend(gm: GraphModule, sample_inputs: list) -> Any:
        k = sum(1 for kind, _ in events if kind == "graph")
        cpu_only: CaptureError | None = None
        record: dict = {"reason": getattr(gm, "compile_subgraph_reason", None), "calls": 0, "example": (),
                        "sources": (), "inputs": _values(gm, "placeholder"), "outputs": _values(gm, "output"),
                        "frame": _frame_of(gm), "resumed": _resumed(gm), "ended_by": None,
                        "files": _files_of(gm)}
        try:
            record["graph"] = mark(lowered(gm, sample_inputs, target), target)
            cpu_only = cpu_only_error(record["graph"], target, f"graph {k} of {type(model).__name__}")
        except trt.BACKEND_CATCHES as exc:  # that graph runs eagerly, as dynamo gave it; the run goes on
            record["fell_back"] = f"{BACKEND_FAILED} ({first_line(exc, LINE_LIMIT)})"
            record["graph"] = mark(_eager_graph(gm, record["fell_back"]), target)
        except Exception as exc:
            # Torch-TensorRT's backend lets it through: torch.compile raises BackendCompilerFailed,
            # and the CaptureError below names this graph
            failures.append((k, exc))
            record["graph"] = None
            raise
        finally:
            events.append(("graph", record))
        if cpu_only is not None:  # lowered for the GPU, it holds a CPU-only op: no partition of it is shown
            failures.append((k, cpu_only))
            raise cpu_only
        placeholders = sum(1 for n in gm.graph.nodes if n.op == "placeholder")

        def run(*call_args: Any) -> Any:
            first = not record["calls"]
            if first:
                record["example"] = tuple(_kept(a, weights) for a in call_args)
                record["sources"] = tuple(produced.get(id(a)) if isinstance(a, torch.Tensor) else None
                                          for a in call_args)
                record["placeholders"] = placeholders
            record["calls"] += 1
            out = gm(*call_args)
            if first:
                for j, value in enumerate(tree_leaves(out)):
                    if isinstance(value, torch.Tensor):
                        produced.setdefault(id(value), (k, j))
                        alive.append(value)
            return out

        return run

    torch._dynamo.reset()
    said = torch_output.KeptOutput()
    try:
        # dynamo's warnings (its "Graph break from `Tensor.item()`" block) are held back: the breaks
        # are the capture's answer; --verbose shows them
        with rng_preserved(), _breaks_logged(events), torch.no_grad(), torch_output.kept() as said:
            compiled = torch.compile(work, backend=backend, dynamic=False)
            compiled(*args, **(kwargs or {}))
    except Exception as exc:
        if failures:  # the backend's failure stopped the run
            if isinstance(failures[0][1], CaptureError):  # hierviz's own, about the graph as lowered
                raise failures[0][1] from None
            raise _backend_failed(model, events, *failures[0]) from failures[0][1]
        raise CaptureError(
            f"running {type(model).__name__} under torch.compile (as torch_tensorrt.compile(ir='torch_compile') "
            f"does) failed: {_what_failed(exc)}\n"
            "Hint: the model must run on the example inputs: check them with model(*example_inputs); "
            "ir='dynamo' (torch.export) is the other way to capture it."
        ) from exc
    finally:
        torch._dynamo.reset()
        torch_output.hold("torch.compile", said.text())
    if failures:  # torch.compile went on eagerly (torch._dynamo.config.suppress_errors)
        if isinstance(failures[0][1], CaptureError):
            raise failures[0][1]
        raise _backend_failed(model, events, *failures[0]) from failures[0][1]
    graphs, breaks = _assemble(events)
    return DynamoCapture(tuple(_graph(k, item, graphs[k - 1] if k else None) for k, item in enumerate(graphs)),
                         tuple(breaks), type(model).__name__, input_specs=input_specs((args, kwargs or {})),
                         traced_for=target_text(target))


def _eager_graph(gm: GraphModule, why: str) -> GraphModule:
    """A copy of dynamo's graph `gm`, which Torch-TensorRT's backend returns unchanged after a
    failure it catches (that graph then runs eagerly), saying so in its notes (`why`)."""
    eager = copy.deepcopy(gm)
    eager.meta[NOTES] = (why,)
    return eager


def input_specs(inputs: Any) -> tuple:
    """(shape, dtype) of each tensor among the inputs' leaves, in order."""
    return tuple((tuple(t.shape), str(t.dtype)) for t in tree_leaves(inputs) if isinstance(t, torch.Tensor))


def _graph(k: int, item: dict, previous: dict | None = None) -> DynamoGraph:
    gm: GraphModule = item["graph"]
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    example = item["example"]
    sources = item["sources"]
    if len(example) != len(placeholders):  # remove_sym_nodes dropped the SymInt inputs
        sources = tuple(s for a, s in zip(example, sources) if isinstance(a, torch.Tensor))
        example = tuple(a for a in example if isinstance(a, torch.Tensor))
    if len(sources) != len(placeholders):  # the lowering changed the inputs: nothing known
        sources = (None,) * len(placeholders)
    function, file, line = item["frame"]
    fell_back = item.get("fell_back", "")
    # a graph run eagerly is dynamo's own: its Tensor methods are calls too
    ops = tuple(qualname(n.target) if n.op == "call_function" else f"Tensor.{n.target}" for n in gm.graph.nodes
                if n.op == "call_function" or (fell_back and n.op == "call_method"))
    return DynamoGraph(index=k, graph=gm, inputs=item["inputs"], outputs=item["outputs"], ops=ops,
                       function=function, file=file, line=line, calls=item["calls"], example_inputs=example,
                       ended_by=item["ended_by"], sources=sources, starts=_starts(k, item, previous),
                       start_kind="" if k == 0 else RESUMED if item.get("resumed") else NEW_FRAME,
                       fell_back=fell_back, traced_files=item.get("files", ()))


_WRAPPED = ("RuntimeError when making fake tensor call", "Dynamo failed to run FX node with fake tensors")


def _what_failed(exc: BaseException) -> str:
    """'Type: first line' of what really failed: dynamo wraps the model's own error (a wrong
    channel count, a dtype mismatch) in its fake-tensor errors, the cause deepest in the chain."""
    chain = [exc]
    while len(chain) < 10:
        nxt = chain[-1].__cause__ or chain[-1].__context__
        if nxt is None or nxt in chain:
            break
        chain.append(nxt)
    for inner in reversed(chain):  # the deepest that is not dynamo's wrapping
        text = message_line(inner, LINE_LIMIT)
        if text and not text.startswith(_WRAPPED) and not type(inner).__module__.startswith("torch._dynamo"):
            return f"{type(inner).__name__}: {text}"
    return first_line(exc, LINE_LIMIT)


__all__ = ["DynamoCapture", "capture_by_graph_break", "input_specs", "lowered", "describes", "BREAK_LOG", "NOTES",
           "BACKEND_FAILED"]
