"""The vocabulary of a partition, each word defined once: why a node runs where it runs (the
reason codes and their short texts), the fallback backend's name, which fx nodes are
partitioned (`CALLABLE_OPS`, from opnames), and the subgraph tag format.

The engine produces these codes and tags; the record, the reports, the drawings and the
explorer read them through `hierviz.partitioner`. Reason texts built from a node's details
(the long form, `Partition.reason_of`) are written by partition_result.py from the same codes.
"""

from __future__ import annotations

from dataclasses import dataclass

# the fx node kinds that are partitioned (defined with the op names)
from hierviz.foundation.opnames import CALLABLE_OPS
from hierviz.support.verdict import SUPPORTED, UNSUPPORTED, VALIDATOR

FALLBACK = "torch"  # the backend name of nodes that run in PyTorch (upstream: "None")
# The backend of placeholders, weights and the output: they are not partitioned (nor are nodes
# that engine="torch_tensorrt" removed as dead code).
GRAPH = "graph"

# Reason codes, one per node; the text is built on demand from the code and its detail.
# (SUPPORTED, UNSUPPORTED and VALIDATOR are a support verdict's codes: hierviz.support.verdict.Verdict.)
FOLLOWS_PRODUCER = "follows_producer"
TORCH_EXECUTED = "torch_executed_ops"
DEMOTED = "demoted"
DEMOTED_NEXT = "demoted_next"  # demote_to="next": moved to a later backend in priority
NOT_CALLABLE = "not_callable"
DEAD_CODE = "dead_code"  # engine="torch_tensorrt" / "fast": the partitioner's dead-code elimination removed it


@dataclass(frozen=True)
class Reason:
    """One reason code's words: `name`, a word or two for counts ("3 validator rejected"), and
    `short`, the short reason text (`{backend}` and `{min_block_size}` are filled in)."""

    code: str
    name: str
    short: str


REASONS: dict[str, Reason] = {r.code: r for r in (
    Reason(SUPPORTED, "supported", "supported by {backend}"),
    Reason(FOLLOWS_PRODUCER, "follows producer", "non-compute: follows producer"),
    Reason(TORCH_EXECUTED, "torch_executed_ops", "in torch_executed_ops"),
    Reason(UNSUPPORTED, "unsupported", "no support in any backend"),
    Reason(VALIDATOR, "validator rejected", "validator rejected"),
    Reason(DEMOTED, "demoted", "demoted (subgraph < min_block_size {min_block_size})"),
    Reason(DEMOTED_NEXT, "demoted to next backend",
           "demoted from {backend} (subgraph < min_block_size {min_block_size})"),
    Reason(NOT_CALLABLE, "not partitioned", "not partitioned"),
    Reason(DEAD_CODE, "dead code", "dead code (removed)"),
)}
# Every reason code a node can have, in the order tables list them.
REASON_CODES = tuple(REASONS)
# The codes of nodes that run in PyTorch although they are compute ops.
FALLBACK_REASONS = (TORCH_EXECUTED, UNSUPPORTED, VALIDATOR, DEMOTED)


def short_reason(code: str, *, backend: str | None = None, min_block_size: int | None = None) -> str:
    """The short reason text of `code` (an unknown code reads as unsupported)."""
    return REASONS.get(code, REASONS[UNSUPPORTED]).short.format(backend=backend, min_block_size=min_block_size)


# Subgraph tags, as upstream names the split module's submodules.
ACC_PREFIX = "_run_on_acc_"
TORCH_PREFIX = "_run_on_gpu_"


def make_tag(is_acc: bool, backend: str, i: int) -> str:
    """The tag of the `i`-th subgraph: _run_on_acc_<backend>_<i>, or _run_on_gpu_<i> in PyTorch."""
    return f"{ACC_PREFIX}{backend}_{i}" if is_acc else f"{TORCH_PREFIX}{i}"


# What a partition of a graph without ops says (a dynamo graph that only returns its inputs,
# a module returning a constant): its report's first line, and its repr.
NOTHING_TO_PARTITION = ("nothing to partition: the graph has no ops (its outputs are its inputs, "
                        "weights or constants)")


def parse_tag(tag: str) -> tuple[bool, str]:
    """(is_acc, backend) of a subgraph tag: '_run_on_acc_tensorrt_3' -> (True, 'tensorrt'),
    '_run_on_gpu_2' (or any other name) -> (False, 'torch')."""
    if tag.startswith(ACC_PREFIX):
        return True, tag[len(ACC_PREFIX):].rsplit("_", 1)[0]
    return False, FALLBACK


def tag_number(tag: str) -> int:
    """The subgraph number at the end of a tag ('_run_on_acc_tensorrt_3' -> 3)."""
    return int(tag.rsplit("_", 1)[1])


__all__ = ["NOTHING_TO_PARTITION", "FALLBACK", "GRAPH", "CALLABLE_OPS", "SUPPORTED", "FOLLOWS_PRODUCER",
           "TORCH_EXECUTED", "UNSUPPORTED", "VALIDATOR", "DEMOTED", "DEMOTED_NEXT", "NOT_CALLABLE", "DEAD_CODE",
           "Reason", "REASONS", "REASON_CODES", "FALLBACK_REASONS", "short_reason", "ACC_PREFIX", "TORCH_PREFIX",
           "make_tag", "parse_tag", "tag_number"]
