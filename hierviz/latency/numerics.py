"""hv.numerics: where in a split model the numbers stop matching eager PyTorch.

    r = hv.numerics(part, example_inputs)        # hv.Numerics
    r.culprit                                     # "_run_on_acc_inductor_3", or None
    r.per_subgraph                                # one row per subgraph, in graph order

The split model is compiled through the compile cache (a check after `hv.measure` compiles
nothing again), and the check rides on that compiling run: as each subgraph's value is made, the
same subgraph of the captured graph is run eagerly on the reference's own values beside it.
Per subgraph two errors against that reference:
  - isolated: the compiled subgraph fed the reference's inputs to it (its own error);
  - accumulated: the value as the compiled split model computes it (the error carried in).
Pass/fail uses `hv.measure`'s dtype-aware tolerances (output_match.py). A reference value is freed as
soon as the last subgraph that reads it has been checked, and nothing is run twice that need not
be: a subgraph fed exactly the reference's values has one error, not two, and a PyTorch subgraph
so fed is the reference. The cost is one eager run and one compiled run of the model.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, cast

import torch
from torch.fx import GraphModule, Node
from torch.utils._pytree import tree_leaves

from hierviz.errors import HiervizError, MeasureError, unknown_arguments
from hierviz.capturing.graph_codec import fetch_attr
from hierviz.latency.baseline_names import EAGER, OUTPUTS_DIFFER
from hierviz.latency.output_match import compare, leaf_errors, tolerance_ratio, tolerance_text
from hierviz.latency.compiling.subgraph_compiling import Runner, short
from hierviz.latency.compiling.lift import lift
from hierviz.latency.compiling.compile_plan import resolve_device
from hierviz.latency.compiling.compiled_split import check_partition, compile_split
from hierviz.latency.measure_options import COMPILE_FIELDS, FIELDS, MeasureOptions

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from hierviz.partitioner import MultiGraphPartition, Partition

REFERENCES = ("eager",)
REL_FLOOR = 1e-3
# hv.measure's options that choose what is compiled (passed on) or how outputs are judged
_COMPILE_OPTIONS = (*COMPILE_FIELDS, "progress")
_CHECK_OPTIONS = ("rtol", "atol", "rel_floor")
# hv.measure's options about timing only: accepted so one dict of options serves both, ignored here
_TIMING_OPTIONS = tuple(f for f in FIELDS if f not in (*_COMPILE_OPTIONS, *_CHECK_OPTIONS, "device"))

NUMERICS_COLUMNS = ["tag", "backend", "asked", "status", "ops", "outputs", "dtypes", "shapes",
                    "isolated_max_abs", "isolated_max_rel", "isolated_cosine", "isolated_ok", "isolated_ratio",
                    "accumulated_max_abs", "accumulated_max_rel", "accumulated_cosine", "accumulated_ok",
                    "accumulated_ratio",
                    "tolerance", "problem"]


@dataclass(eq=False)
class Numerics:
    """Per-subgraph numerical error of a compiled split model against eager PyTorch.

    `per_subgraph`: one row per subgraph in graph order (columns NUMERICS_COLUMNS): `backend`
    is what ran it (`asked` what the partition gave it), its outputs' `dtypes` and `shapes`, and
    for the isolated and the accumulated error the max absolute error, the max relative error
    (|out - ref| / max(|ref|, rel_floor x max|ref|)), the cosine similarity and whether it is
    within `hv.measure`'s tolerance for the output's dtype (`tolerance` says which), and the
    error as a fraction of that tolerance (`*_ratio`: <= 1 passes; what diagrams colour by).
    `culprit` is the first subgraph in graph order whose isolated error fails, else None.
    `outputs_match` / `max_abs_error` judge the split model's final outputs, as hv.measure does.
    `check_s` is the time the check took beyond compiling (`compile_s`; zero when every subgraph
    came from the compile cache: `cache_hits`, `cache_misses`). `peak_reference_bytes` is the
    most memory the reference values held at once.
    """

    per_subgraph: "pd.DataFrame"
    culprit: str | None
    outputs_match: bool
    max_abs_error: float
    device: str
    reference: str = "eager"
    compile_s: float = 0.0
    check_s: float = 0.0
    cache_hits: int = 0
    cache_misses: int = 0
    peak_reference_bytes: int = 0
    fallbacks: tuple[str, ...] = ()
    warnings: list[str] = field(default_factory=list)
    config: Any = None

    @property
    def mismatch_at(self) -> str | None:
        """Where a mismatch starts: the culprit, else (errors that only add up past tolerance)
        the first subgraph whose accumulated error fails; None when everything is within it."""
        if self.culprit is not None:
            return self.culprit
        t = self.per_subgraph
        if not len(t):
            return None
        carried = t.loc[~t["accumulated_ok"].astype(bool), "tag"]
        return str(carried.iloc[0]) if len(carried) else None

    @property
    def failing(self) -> list[str]:
        """Tags whose isolated error fails, in graph order."""
        t = self.per_subgraph
        return list(t.loc[~t["isolated_ok"].astype(bool), "tag"]) if len(t) else []

    def error_of(self, tag: str) -> float:
        """The isolated max abs error of subgraph `tag` (NaN for an unknown tag)."""
        rows = self.per_subgraph.loc[self.per_subgraph["tag"] == tag, "isolated_max_abs"]
        return float(rows.iloc[0]) if len(rows) else math.nan

    def culprit_text(self) -> str:
        """'the error starts in TAG (backend, N ops): isolated max abs E', or that none fails."""
        t = self.per_subgraph
        if self.culprit is None:
            worst = ""
            if len(t) and t["isolated_max_abs"].notna().any():
                row = t.loc[t["isolated_max_abs"].fillna(-1).idxmax()]
                worst = f"; largest isolated max abs {_num(row['isolated_max_abs'])} in {row['tag']}"
            return f"every subgraph is within tolerance of {EAGER}{worst}"
        row = t.loc[t["tag"] == self.culprit].iloc[0]
        ops = int(row['ops'])
        return (f"the error starts in {self.culprit} ({row['backend']}, {ops} op{'' if ops == 1 else 's'}): "
                f"isolated max abs {_num(row['isolated_max_abs'])}")

    def __repr__(self) -> str:
        n = len(self.per_subgraph)
        carried = int((~self.per_subgraph["accumulated_ok"].astype(bool)).sum()) if n else 0
        end = "outputs match" if self.outputs_match else f"OUTPUTS DIFFER (max abs {_num(self.max_abs_error)})"
        return (f"<hv.Numerics {self.culprit_text()}; {carried} of {n} subgraphs off by the accumulated error; "
                f"{end}; {self.device}, reference {self.reference}>")

    def _repr_html_(self) -> str:
        import html

        table = self.per_subgraph.to_html(index=False, float_format=lambda x: f"{x:.3g}")
        return f"<div><p><code>{html.escape(repr(self))}</code></p>{table}</div>"

    def to_dict(self) -> dict[str, Any]:
        """The scalar results, flat, for a row of a DataFrame."""
        return {"mismatch_at": self.mismatch_at, "outputs_match": self.outputs_match,
                "max_abs_error": self.max_abs_error, "failing_subgraphs": len(self.failing),
                "check_s": self.check_s}


def _num(x: Any) -> str:
    return "n/a" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{float(x):.2g}"


def numerics(partition: Any, example_inputs: Any, *, device: Any = None, reference: str = "eager",
             **measure_options: Any) -> Numerics:
    """Per-subgraph numerical error of `partition` compiled for `device`, against the captured
    graph run eagerly on the same inputs (see Numerics).

    `measure_options` are hv.measure's: those that choose what is compiled (`on_error`, `cache`,
    `cache_dir`, `trt_settings`, `inductor_options`, `compilers`, `tf32`, `progress`) are used
    the same way, so the compiled subgraphs of an earlier hv.measure are reused; `rtol` / `atol`
    override the tolerances; `rel_floor` (default 1e-3) is the floor of the relative error, as
    a fraction of the reference's largest magnitude; timing options are accepted and ignored.
    """
    check_partition(partition)
    if reference not in REFERENCES:
        raise MeasureError(f"reference={reference!r} is not known; use one of {REFERENCES} "
                           "(the captured graph run eagerly on the same inputs)")
    # an argument it does not take is a ConfigError, as for every public function (checked_arguments)
    unknown_arguments("hv.numerics", sorted(measure_options),
                      ("device", "reference", *_COMPILE_OPTIONS, *_CHECK_OPTIONS, *_TIMING_OPTIONS))
    rtol, atol = measure_options.get("rtol"), measure_options.get("atol")
    rel_floor = measure_options.get("rel_floor", REL_FLOOR)
    if not isinstance(rel_floor, (int, float)) or isinstance(rel_floor, bool) or not 0 < rel_floor <= 1:
        raise MeasureError(f"rel_floor must be a number in (0, 1], not {rel_floor!r}")
    options = {k: measure_options[k] for k in _COMPILE_OPTIONS if k in measure_options}
    dev = resolve_device(device)
    start = time.perf_counter()
    check = _Check(partition.module, dev, rtol, atol, float(rel_floor))
    split = compile_split(partition, example_inputs, dev, who="hv.numerics", observe=check, **options)
    ok, max_abs, _, problems = check.final
    import pandas as pd

    for row in check.rows:
        record = split.records[row["tag"]]
        row.update(backend=record.ran, asked=record.asked, status=record.status, ops=record.ops)
    table = pd.DataFrame(check.rows, columns=NUMERICS_COLUMNS)
    failing = table.loc[~table["isolated_ok"].astype(bool), "tag"].tolist() if len(table) else []
    notes = list(split.warnings)
    if not ok:
        notes.append(f"{OUTPUTS_DIFFER}: " + "; ".join(problems[:3]))
    return Numerics(per_subgraph=table, culprit=str(failing[0]) if failing else None,
                    outputs_match=bool(ok), max_abs_error=float(max_abs), device=str(split.device),
                    reference=reference, compile_s=split.compile_s,
                    check_s=max(0.0, time.perf_counter() - start - split.compile_s),
                    cache_hits=split.cache_hits, cache_misses=split.cache_misses,
                    peak_reference_bytes=check.peak_bytes, fallbacks=split.fallbacks, warnings=notes,
                    config=getattr(partition, "config", None))


def locate_mismatch(partition: Partition | MultiGraphPartition, example_inputs: Any, measurement: Any,
                    options: MeasureOptions) -> str | None:
    """For a measurement whose outputs differ from eager: the subgraph where the error starts
    (`Numerics.mismatch_at`), found with the compiled subgraphs it used (the same `options`:
    cache hits); None when the outputs matched, or when the check itself could not run (a
    HiervizError: the measurement's own mismatch still stands). The measurement is left as it
    is: `with_mismatch` gives one that names it."""
    if getattr(measurement, "outputs_match", None) is not False:
        return None
    try:
        return numerics(partition, example_inputs, device=getattr(measurement, "device", None),
                        **{**options.compile_kwargs(), "rtol": options.rtol, "atol": options.atol}).mismatch_at
    except HiervizError:
        return None


def with_mismatch(partition: Partition | MultiGraphPartition, example_inputs: Any, measurement: Any,
                  options: MeasureOptions) -> Any:
    """`measurement`, or for outputs that differ from eager a copy whose `mismatch_at` names
    the subgraph where the error starts (locate_mismatch)."""
    tag = locate_mismatch(partition, example_inputs, measurement, options)
    return measurement if tag is None else replace(measurement, mismatch_at=tag)


_EXACT = (0.0, 0.0, 1.0, True, "", 0.0)


class _Check:
    """Watches the compiling run of the split model (compile_split's `observe`): beside each
    value the split model computes (the accumulated one) it computes the eager reference and,
    for a compiled subgraph, the subgraph on the reference's inputs (isolated). A reference
    value is dropped after its last user; a value whose inputs are the reference's own is not
    computed twice."""

    def __init__(self, module: Any, device: torch.device, rtol: float | None, atol: float | None,
                 rel_floor: float) -> None:
        self.module, self.device = module, device
        self.rtol, self.atol, self.rel_floor = rtol, atol, rel_floor
        self.ref: dict[Node, Any] = {}
        self.acc: dict[Node, Any] = {}
        self.users = {n: len(n.users) for n in module.graph.nodes}
        self.rows: list[dict[str, Any]] = []
        self.final: tuple = (True, 0.0, 0.0, [])
        self.peak_bytes = 0

    def __call__(self, node: Node, value: Any, runner: Runner | None) -> None:
        if node.op == "output":
            self.final = compare(value, _args(node.args[0], self.ref), self.rtol, self.atol)
        else:
            self.acc[node] = value
            if node.op == "call_module":
                assert runner is not None, "a subgraph's call comes with its runner"
                self.ref[node] = self.subgraph(node, value, runner)
            elif node.op in ("call_function", "call_method") and not self.same_inputs(node):
                self.ref[node] = _call(node, self.ref)
            else:  # inputs, weights, and what is computed from the reference's own values
                self.ref[node] = value
        self.peak_bytes = max(self.peak_bytes, _nbytes(self.ref.values()))
        for inp in node.all_input_nodes:
            self.users[inp] -= 1
            if self.users[inp] == 0:
                self.ref.pop(inp, None)
                self.acc.pop(inp, None)
        if not self.users.get(node):
            self.ref.pop(node, None)
            self.acc.pop(node, None)

    def eager(self, name: str) -> Callable[..., Any]:
        """Subgraph `name` of the split module, run eagerly on this device: the submodule itself
        when its weights are here (on the CPU), else a copy with its weights moved (lift)."""
        sub = fetch_attr(self.module, name)
        if self.device.type == "cpu" and all(t.device.type == "cpu" for t in _tensors(sub)):
            return sub
        lifted = lift(sub, self.device)
        return Runner(lifted.gm, lifted.weights, lifted.single, name, "eager")

    def same_inputs(self, node: Node) -> bool:
        return all(self.ref[n] is self.acc[n] for n in node.all_input_nodes)

    def subgraph(self, node: Node, value: Any, runner: Runner) -> Any:
        """The reference value of subgraph `node` (the split model computed `value`); its row."""
        name = str(node.target)
        same = self.same_inputs(node)
        args, kwargs = _args(node.args, self.ref), _args(node.kwargs, self.ref)
        eager = runner.status in ("eager", "fallback")
        if eager:
            want = value if same else _run(runner, args, kwargs, name, "eagerly")
            isolated = want
        else:
            want = _run(self.eager(name), args, kwargs, name, "eagerly (the reference)")
            isolated = value if same else _run(runner, args, kwargs, name, f"({runner.status})")
        iso = _EXACT if isolated is want else self.errors(isolated, want)
        cum = iso if same else (_EXACT if value is want else self.errors(value, want))
        leaves = [x for x in tree_leaves(want) if isinstance(x, torch.Tensor)]
        self.rows.append({
            "tag": name, "outputs": len(leaves),
            "dtypes": ", ".join(dict.fromkeys(str(x.dtype).replace("torch.", "") for x in leaves)),
            "shapes": "; ".join(str(list(x.shape)) for x in leaves),
            "isolated_max_abs": iso[0], "isolated_max_rel": iso[1], "isolated_cosine": iso[2], "isolated_ok": iso[3],
            "isolated_ratio": iso[5],
            "accumulated_max_abs": cum[0], "accumulated_max_rel": cum[1], "accumulated_cosine": cum[2],
            "accumulated_ok": cum[3], "accumulated_ratio": cum[5],
            "tolerance": tolerance_text(leaves, self.rtol, self.atol),
            "problem": iso[4] or cum[4],
        })
        # bitwise the reference: share the split model's value, so later subgraphs are not run twice
        return value if cum[0] == 0.0 and cum[3] and _same_structure(value, want) else want

    def errors(self, got: Any, want: Any) -> tuple[float, float, float, bool, str, float]:
        """(max abs, max rel with the floor, min cosine, within tolerance, first problem,
        error / tolerance: the largest over the outputs, <= 1 passes)."""
        ok, max_abs, _, problems = compare(got, want, self.rtol, self.atol)
        rel, cos, ratio = 0.0, 1.0, 0.0
        for a, b in zip(tree_leaves(got), tree_leaves(want)):
            if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and b.numel():
                r, c, err, scale = leaf_errors(a, b, self.rel_floor)
                rel, cos = max(rel, r), min(cos, c)
                ratio = max(ratio, tolerance_ratio(err, scale, b.dtype, self.rtol, self.atol))
        if not math.isfinite(max_abs):
            rel = math.inf
        if not ok and ratio <= 1.0:  # a non-finite, shape or integer mismatch
            ratio = math.inf
        return float(max_abs), rel, cos, bool(ok), (problems[0] if problems and not ok else ""), ratio


def _same_structure(a: Any, b: Any) -> bool:
    """Same leaves, shapes and dtypes (what compare cannot see: a dtype that differs)."""
    la, lb = tree_leaves(a), tree_leaves(b)
    return len(la) == len(lb) and all(
        (x.dtype, x.shape) == (y.dtype, y.shape) if isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)
        else type(x) is type(y) for x, y in zip(la, lb))


def _args(value: Any, env: dict[Node, Any]) -> Any:
    return torch.fx.node.map_arg(value, lambda n: env[n])


def _call(node: Node, env: dict[Node, Any]) -> Any:
    args, kwargs = _args(node.args, env), _args(node.kwargs, env)
    if node.op == "call_method":
        return getattr(args[0], str(node.target))(*args[1:], **kwargs)
    return cast(Callable[..., Any], node.target)(*args, **kwargs)  # a call_function's target is its function


def _run(runner: Callable[..., Any], args: tuple, kwargs: dict, name: str, how: str) -> Any:
    try:
        return runner(*args, **kwargs)
    except Exception as exc:
        raise MeasureError(f"subgraph {name} failed to run {how} while checking numerics: {short(exc)}") from exc


def _tensors(module: GraphModule) -> list[torch.Tensor]:
    """The tensors a subgraph module reads: parameters, buffers and plain tensor attributes."""
    out = list(module.parameters()) + list(module.buffers())
    for n in module.graph.nodes:
        if n.op == "get_attr":
            value = fetch_attr(module, n.target)
            if isinstance(value, torch.Tensor):
                out.append(value)
    return out


def _nbytes(values: Any) -> int:
    seen: set[int] = set()
    total = 0
    for v in values:
        for x in tree_leaves(v):
            if isinstance(x, torch.Tensor) and id(x) not in seen:
                seen.add(id(x))
                total += x.numel() * x.element_size()
    return total


__all__ = ["numerics", "Numerics", "locate_mismatch", "with_mismatch", "NUMERICS_COLUMNS", "REFERENCES", "REL_FLOOR"]
