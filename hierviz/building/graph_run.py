"""Running a lowered graph once in PyTorch before any of it is converted.

Torch-TensorRT never runs the graph it lowered, so a lowering that breaks it (its
`select_scatter` decomposition turning `h[:, -1] = ...` into `slice_scatter(start=-1, end=0)`)
is found only by running it. `first_failure(graph, inputs)` runs the graph's compiled code (its
generated forward) on the example inputs; only when that raises is it run again node by node
(torch.fx's Interpreter) to say which node failed first, its error, and the user's source line
that made it. A graph with dynamic dimensions is run at its optimization profile's min and max
too, since the engine is built for the whole range (`first_failure_in_profile`).

The graph runs on one thread (hierviz.foundation.kernel_threads: this thread's OpenMP and MKL
counts, never torch.set_num_threads, which would slow every small op of the process after it):
one pass whose cost there is about a tenth of the engine's build (resnet50: 0.13 s of CPU beside
1.0 s converting and building, vit_b_16 0.45 s beside 3.8 s), while PyTorch's threads on a busy
machine wait for each other (resnet50 on two cores, load 4 to 6: 0.25 s on one thread, 0.6 to
0.9 s on two).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

import torch
import torch.utils._pytree as pytree

from hierviz.building.optimization_profiles import corner_inputs, corner_text
from hierviz.errors import BuildError
from hierviz.foundation.error_text import first_line
from hierviz.foundation.kernel_threads import one_thread
from hierviz.foundation.stack_traces import frames

# what running a graph's node can raise: torch's C++ errors map to RuntimeError (out of memory and
# NotImplementedError included), IndexError, ValueError and TypeError, as its torch._check* do; its
# Python decompositions assert; scalar arithmetic (SymInt sizes) divides by zero
OP_ERRORS: tuple[type[Exception], ...] = (RuntimeError, TypeError, ValueError, IndexError, AssertionError,
                                          ArithmeticError)


@dataclass(frozen=True)
class RunFailure:
    """The first node of a lowered graph that failed in PyTorch: its name, the exception's
    class and first line, and `source` ('file:line: code', the user's line that made it; '' when
    the graph does not record one); `at`: where in the optimization profile it ran, when not at
    the example's sizes ("the profile's max (x: (8,3,16,16))")."""

    node: str
    exception: str
    error: str
    source: str = ""
    at: str = ""


class _NodeByNode(torch.fx.Interpreter):
    """torch.fx's Interpreter, remembering the node it is running."""

    current: torch.fx.Node | None = None

    def run_node(self, n: torch.fx.Node) -> Any:
        self.current = n
        return super().run_node(n)


def source_line(node: torch.fx.Node) -> str:
    """'file:line: code' of the innermost frame in `node`'s recorded stack (the user's line
    that made the op); '' when none is recorded."""
    found = frames(node.meta.get("stack_trace"))
    if not found:
        return ""
    inner = found[-1]
    return f"{inner.file}:{inner.line}: {inner.code}"


def _compiled(graph: torch.fx.GraphModule, inputs: Sequence[Any]) -> Callable[[], Any] | None:
    """`graph`'s generated forward called on `inputs` (one per placeholder; a forward made by
    torch.export takes them nested as its in_spec says), without its forward pre-hooks, as the
    Interpreter runs it; None when its code takes other arguments (then it is interpreted)."""
    if not isinstance(graph, torch.fx.GraphModule):
        return None
    codegen = graph.graph._codegen
    placeholders = sum(1 for n in graph.graph.nodes if n.op == "placeholder")
    if len(inputs) != placeholders:
        return None
    if isinstance(codegen, torch.fx.graph._PyTreeCodeGen):
        spec = codegen.pytree_info.in_spec
        if spec is None or spec.num_leaves != placeholders:
            return None
        args, kwargs = pytree.tree_unflatten(list(inputs), spec)
        return lambda: graph.forward(*args, **kwargs)
    if type(codegen) is not torch.fx.graph.CodeGen:  # another codegen: a signature of its own
        return None
    return lambda: graph.forward(*inputs)


def _out_of_memory(exc: BaseException, node: torch.fx.Node | None) -> BuildError:
    where = f" at node {node.name}" if node is not None else ""
    return BuildError(f"part.build(): out of memory while running the lowered graph in PyTorch{where} "
                      f"({first_line(exc)}); nothing was stored: free memory (or build on a machine with "
                      "more) and call build() again")


def _failure(exc: BaseException, node: torch.fx.Node | None) -> RunFailure:
    text = str(exc).split("\n\nWhile executing")[0]  # torch.fx appends where it ran
    error = first_line(text) if text.strip() else ""
    error = f"{type(exc).__name__}: {error}" if error else type(exc).__name__
    if node is None:
        return RunFailure("", type(exc).__name__, error)
    return RunFailure(node.name, type(exc).__name__, error, source_line(node))


def _node_by_node(graph: torch.fx.GraphModule, inputs: Sequence[Any]) -> RunFailure | None:
    """`graph` interpreted on `inputs`: the node that raised first, or None."""
    runner = _NodeByNode(graph)
    try:
        with torch.no_grad(), one_thread():
            runner.run(*inputs)
    except (MemoryError, torch.OutOfMemoryError) as exc:  # the machine's failure, not the graph's
        raise _out_of_memory(exc, runner.current) from exc
    except OP_ERRORS as exc:  # what the graph raised is the answer
        return _failure(exc, runner.current)
    return None


def first_failure(graph: torch.fx.GraphModule, inputs: Sequence[Any]) -> RunFailure | None:
    """Run `graph` once on `inputs` (one per placeholder) without gradients, as its compiled
    code; when that raises, again node by node: the first node that raised, or None when the
    whole graph ran. A failure the second run does not meet is kept without its node."""
    run = _compiled(graph, inputs)
    if run is None:
        return _node_by_node(graph, inputs)
    try:
        with torch.no_grad(), one_thread():
            run()
        return None
    except (MemoryError, torch.OutOfMemoryError) as exc:
        unplaced: BaseException | RunFailure = _out_of_memory(exc, None)
    except OP_ERRORS as exc:
        unplaced = _failure(exc, None)
    found = _node_by_node(graph, inputs)
    if found is not None:
        return found
    if isinstance(unplaced, BaseException):
        raise unplaced
    return unplaced


def first_failure_in_profile(graph: torch.fx.GraphModule, inputs: Sequence[Any]) -> RunFailure | None:
    """`first_failure` at the example's sizes (the profile's opt), then, for a graph with dynamic
    dimensions, at the profile's min and max: the first failure, saying where it ran."""
    failure = first_failure(graph, inputs)
    if failure is not None:
        return failure
    for corner in ("min", "max"):
        at = corner_inputs(graph, corner, inputs)
        if at is None:
            continue
        failure = first_failure(graph, at)
        if failure is not None:
            return replace(failure, at=corner_text(graph, corner, at))
    return None


__all__ = ["RunFailure", "first_failure", "first_failure_in_profile", "source_line"]
