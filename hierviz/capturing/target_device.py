"""The device a capture lowers a model for (`target_device`), whatever machine hierviz runs on.

torch makes some lowering choices from the device a trace runs on, and hierviz traces on this
machine's CPU. For `target_device="cuda"` (the default: Torch-TensorRT runs on a CUDA GPU) every
trace of the lowering decomposes the ops whose choice depends on the device as it would on the
reference GPU (hierviz.capturing.gpu_target): `scaled_dot_product_attention` into the attention
kernel torch picks there (gpu_attention), nn.LSTM unrolled instead of `mkldnn_rnn_layer`, and
nn.LSTMCell / nn.GRUCell into their fused CUDA cells (gpu_recurrent). `target_device="cpu"`
lowers as on a CPU. docs/capture.md lists every device-dependent choice looked at, and why each
is or is not made here.

Three kinds of trace are adjusted. `torch.export`'s `run_decompositions` decomposes the
composite ops its table holds and keeps the others, on a GPU too: `with_target_rules(table,
target)` gives each op with a rule that is in the table the rule instead (Torch-TensorRT's table
leaves out `scaled_dot_product_attention`, so the dynamo path keeps it, as it does on the GPU).
The AOT export of torch.compile's path decomposes every composite op by its kernel for the
trace's device, whatever its table says: inside `lowering_for(target)` the rules replace those
kernels in this thread's traces (hierviz.capturing.composite_overrides, through torch's Python
dispatcher, which that export runs under). Torch-TensorRT's own retraces of a lowered graph
(its complex-number pass, on the dynamo path) run without that dispatcher: `retraced_as_on(gm,
target, lower)` calls the rules in the graph itself while `lower` runs, so a retrace decomposes the
kept ops as the GPU would, and puts the ops back where no retrace did. It runs `lower` without
gradients, as a model is compiled for inference (`torch.no_grad()`, as torch.compile's AOT export
traces too): with them, a retrace of attention whose weights need gradients asks the kernel for
its log-sum-exp, which Torch-TensorRT's converters refuse.

The graphs made for a GPU hold ops torch implements for CUDA only; importing this module gives
them CPU kernels (gpu_kernels), so hierviz runs them anywhere. A graph lowered for a GPU must
hold no op that exists only for the CPU (`cpu_only_ops`): capture checks it (`check_lowered`).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator

import torch
from torch.fx import GraphModule

from hierviz import trt
from hierviz.capturing import gpu_kernels
from hierviz.capturing.composite_overrides import CompositeOverrides
from hierviz.capturing.gpu_attention import sdpa_as_on_gpu
from hierviz.capturing.gpu_recurrent import gru_cell_as_on_gpu, lstm_as_on_gpu, lstm_cell_as_on_gpu
from hierviz.capturing.gpu_target import GpuTarget
from hierviz.errors import CaptureError, ConfigError

TARGET_DEVICES = ("cuda", "cpu")
DEFAULT_TARGET = "cuda"
TARGET_META = "hierviz_target_device"  # GraphModule.meta key: (device, the report's line on it) it was lowered for
CPU_ONLY_MARKS = ("_for_cpu", "mkldnn")  # an op with one of these in its name exists only in a CPU lowering

aten = torch.ops.aten
gpu_kernels.register()
_OVERRIDES = CompositeOverrides()


def check_target_device(target_device: Any) -> str:
    """`target_device` as given when it is one of TARGET_DEVICES, else ConfigError saying what to pass."""
    if target_device not in TARGET_DEVICES:
        raise ConfigError(
            f"target_device={target_device!r:.60} is not one of {', '.join(repr(t) for t in TARGET_DEVICES)}: "
            "'cuda' (the default) lowers the model as Torch-TensorRT does on a CUDA GPU, whatever machine runs "
            "hierviz; 'cpu' lowers it as on a CPU. Pass target_device='cuda' or target_device='cpu'.")
    return str(target_device)


def gpu_rules(gpu: GpuTarget) -> dict[Any, Callable[..., Any]]:
    """op -> the decomposition that does what its kernel does on `gpu`."""
    return {aten.scaled_dot_product_attention.default: sdpa_as_on_gpu(gpu),
            aten.lstm.input: lstm_as_on_gpu,
            aten.lstm_cell.default: lstm_cell_as_on_gpu,
            aten.gru_cell.default: gru_cell_as_on_gpu}


def with_target_rules(table: Any, target: str) -> Any:
    """`run_decompositions`' decomposition `table` for `target`: each op of it that has a rule decomposed by
    the rule (the table itself for the CPU)."""
    if target == "cpu":
        return table
    out = dict(table)
    for op, rule in gpu_rules(GpuTarget.current()).items():
        if op in out:
            out[op] = rule
    return out


def retraced_as_on(gm: GraphModule, target: str, lower: Callable[[GraphModule], GraphModule]) -> GraphModule:
    """`lower(gm)` (Torch-TensorRT's post_lowering; `gm` may be changed) where a pass that traces the graph
    again decomposes each op with a rule by it, as it would on `target`: the graph calls the rule while
    `lower` runs, and the op again where its node is still there after. A node whose op Torch-TensorRT's
    constant folding leaves unfolded (attention of weights alone) is marked so that the folder leaves the
    rule unfolded too (hierviz.trt.constant_folding)."""
    rules = gpu_rules(GpuTarget.current()) if target == "cuda" else {}
    ops: dict[Any, Any] = {}  # rule -> the op it stands for
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in rules:
            ops[rules[node.target]] = node.target
            if trt.left_unfolded(node.target):
                trt.keep_unfolded(node)
            node.target = rules[node.target]
    if ops:
        gm.recompile()
    with torch.no_grad() if ops else contextlib.nullcontext():
        out = lower(gm)
    kept = [node for node in out.graph.nodes if node.op == "call_function" and node.target in ops]
    for node in kept:
        node.target = ops[node.target]
        if trt.left_unfolded(node.target):
            trt.unmark_unfolded(node)
    if kept:
        out.recompile()
    return out


@contextlib.contextmanager
def lowering_for(target: str) -> Iterator[None]:
    """While the block runs, this thread's traces that do not keep composite ops decompose each op with a
    rule by it (nothing changes for the CPU)."""
    with _OVERRIDES.overriding(gpu_rules(GpuTarget.current()) if target == "cuda" else None):
        yield


def target_text(target: str) -> tuple[str, str]:
    """(device, the report's line on it) as a graph lowered for `target` records it (TARGET_META)."""
    if target == "cuda":
        return target, (f"Traced for cuda: the graph Torch-TensorRT lowers on a CUDA GPU "
                        f"({GpuTarget.current().describe()}), whatever machine captured it.")
    return target, ("Traced for cpu: lowered as on a CPU; a CUDA GPU lowers attention and recurrent layers "
                    "differently (target_device='cuda', the default, shows what it runs).")


def target_key(target: str) -> tuple:
    """What a capture for `target` is keyed by: the reference GPU with torch's SDPA settings, or the CPU."""
    return GpuTarget.current().key() if target == "cuda" else ("cpu",)


def mark(gm: GraphModule, target: str) -> GraphModule:
    """`gm` with the device it was lowered for recorded (TARGET_META)."""
    gm.meta[TARGET_META] = target_text(target)
    return gm


def target_of(graph: GraphModule | None) -> tuple[str, str] | None:
    """(device, the report's line on it) the graph was lowered for: as its capture recorded it, else read
    from its values' devices (a graph lowered elsewhere); None when neither says."""
    if graph is None:
        return None
    recorded = graph.meta.get(TARGET_META)
    if isinstance(recorded, (tuple, list)) and len(recorded) == 2:
        return str(recorded[0]), str(recorded[1])
    devices = {v.device.type for n in graph.graph.nodes
               if isinstance(v := n.meta.get("val"), torch.Tensor)}
    if not devices:
        return None
    device = "cuda" if "cuda" in devices else sorted(devices)[0]
    return device, (f"Traced for {device}, as read from the devices of its values ({', '.join(sorted(devices))}): "
                    "it was lowered outside hv.capture.")


def is_cpu_only_op(op: str) -> bool:
    """Whether `op` (a qualified name) exists only in a CPU lowering (`_for_cpu` or `mkldnn` in its name)."""
    return any(mark in op for mark in CPU_ONLY_MARKS)


def cpu_only_ops(gm: GraphModule) -> list[str]:
    """The ops of `gm` that exist only in a CPU lowering, sorted."""
    return sorted({str(n.target) for n in gm.graph.nodes if n.op == "call_function" and is_cpu_only_op(str(n.target))})


def cpu_only_error(gm: GraphModule, target: str, name: str) -> CaptureError | None:
    """The CaptureError for a graph lowered for the GPU that still holds an op that exists only for the CPU
    (what the GPU runs in its place is not known here); None when `gm` may be shown for `target`."""
    found = cpu_only_ops(gm) if target == "cuda" else []
    if not found:
        return None
    return CaptureError(
        f"{name} lowered for cuda still holds {', '.join(found)}, which exists only for the CPU: hierviz "
        "does not know what a GPU runs in its place, so it shows no partition of it.\nHint: "
        "hv.capture(model, inputs, target_device='cpu') shows the CPU's lowering; if the model calls the op "
        "itself, it cannot run on a GPU.")


def check_lowered(gm: GraphModule, target: str, name: str) -> GraphModule:
    """`gm` when it may be shown for `target`, else its `cpu_only_error`."""
    error = cpu_only_error(gm, target, name)
    if error is not None:
        raise error
    return gm


__all__ = ["TARGET_DEVICES", "DEFAULT_TARGET", "TARGET_META", "check_target_device", "gpu_rules",
           "with_target_rules", "lowering_for", "retraced_as_on", "target_text", "target_key", "mark", "target_of",
           "is_cpu_only_op", "cpu_only_ops", "cpu_only_error", "check_lowered"]
