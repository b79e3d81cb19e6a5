"""`Partition.blockers()`: what keeps nodes out of the accelerated backends, ranked by what
fixing each cause would save, every figure from an actual re-partition.

A cause is one of:
- `no converter`: an op with no TensorRT converter (what-if: add the op to TensorRT's support,
  as `hv.support.any_chain(hv.support.tensorrt(), hv.support.ops([op]))` does);
- `validator rejected`: a converter exists, its capability validator refuses the node (the
  same what-if);
- `no backend`: no backend in priority takes the op, and TensorRT is not the one to ask (not in
  priority, or its support is your own): the op is added to the first backend's support;
  an op that exists only in a CPU lowering (`_for_cpu`, `mkldnn`: hierviz.capturing.target_device)
  is not offered to any backend, since no GPU runs it: its change says to capture for the GPU;
- `forced`: an entry of torch_executed_ops (an op, or a source op through the lowering;
  what-if: drop the entry); its nodes are those no other entry forces, the ones dropping it
  frees (a SiLU's sigmoid that "aten.sigmoid.default" and hv.source_ops("aten.silu.default")
  both force counts in neither row: its note says so, and the combined row of both frees it);
- `demoted`: accelerated blocks smaller than min_block_size (one cause per block size;
  what-if: min_block_size lowered to that size).

Each what-if is `hv.partition(p.graph, that config, engine=p.engine)`, exactly what a user
would run by hand, so the counts agree with it by construction. A saved partition
(`hv.load_partition`) has no graph to re-partition: its rows keep the counts and say so.

Each row's `verdict` is read from its own two counts against the partition's objective (fewest
subgraphs, no fewer ops accelerated): an `improvement` is better on one count and worse on
neither, a `trade-off` better on one and worse on the other, `no gain` better on neither. Rows
rank improvements first, then trade-offs, then no gain, each by subgraphs saved, then ops
gained. The combined row (the first `top` rows together) is added only when it is a change no
single row makes and its counts are not those of a single row (else it repeats that row).
"""

from __future__ import annotations

import contextlib
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable

from hierviz.support import sources as support_mod
from hierviz.settings.config import Config, derive
from hierviz.errors import ConfigError, HiervizError
from hierviz.foundation.opnames import SOURCE_PREFIX, in_op_set, names_as_saved, packets_in
from hierviz.capturing.provenance import short_op, split_sources
from hierviz.capturing.target_device import is_cpu_only_op
from hierviz.foundation.arguments import check_bool
from hierviz.partitioner.blockers.known_tables import keep_table, known_table
from hierviz.partitioner.engine_dispatch import partition_graph
from hierviz.partitioner.partition_result import DEFAULT_TOP
from hierviz.partitioner.reasons import DEMOTED, TORCH_EXECUTED, UNSUPPORTED, VALIDATOR
from hierviz.partitioner.saved.saved_partition import forced_sources

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from hierviz.building.builds import Builds
    from hierviz.partitioner.partition_result import Partition

NO_CONVERTER = "no converter"
REJECTED = "validator rejected"
NO_BACKEND = "no backend"
FORCED = "forced"
DEMOTED_KIND = "demoted"
COMBINED = "combined"
BUILD_FAILS = "engine fails to build"  # from part.build(): not a cause of nodes kept out, a cause of no engine
REQUIRED = "required"  # its verdict: without the change Torch-TensorRT fails, or runs the graph eagerly
KINDS = (NO_CONVERTER, REJECTED, FORCED, DEMOTED_KIND, NO_BACKEND)
KIND_WORDS = {NO_CONVERTER: "no TensorRT converter", REJECTED: "converter's validator rejected the node",
              FORCED: "forced to PyTorch by torch_executed_ops", DEMOTED_KIND: "demoted below min_block_size",
              NO_BACKEND: "not supported by any backend in priority", COMBINED: "the top rows together",
              BUILD_FAILS: "its TensorRT engine fails to convert or build on this machine (part.build())"}
IMPROVEMENT, TRADE_OFF, NO_GAIN = "improvement", "trade-off", "no gain"
VERDICTS = (IMPROVEMENT, TRADE_OFF, NO_GAIN)
VERDICT_WORDS = {IMPROVEMENT: "fewer subgraphs without fewer ops accelerated, or more ops accelerated without more "
                              "subgraphs",
                 TRADE_OFF: "better on one count, worse on the other: more ops accelerated but more subgraphs, or "
                            "fewer subgraphs but fewer ops accelerated",
                 NO_GAIN: "neither fewer subgraphs nor more ops accelerated",
                 REQUIRED: "an engine that does not build on this machine: without the change Torch-TensorRT raises, "
                           "or runs the graph eagerly"}
# the change offered for an op that exists only in a CPU lowering: no setting adds it on a GPU
CPU_LOWERING_CHANGE = ("capture for the GPU: hv.partition(model, inputs, target_device='cuda') shows the op a CUDA "
                       "GPU runs in its place")
COLUMNS = ("op", "kind", "nodes", "subgraphs_if_fixed", "subgraphs_saved", "accelerated_ops_gained", "verdict",
           "change", "note", "config")


@dataclass
class Cause:
    """One cause: what it is, the nodes it keeps out, and the settings with it removed."""

    op: str
    kind: str
    nodes: int
    change: str
    config: Config | None
    note: str = ""
    members: list[str] = field(default_factory=list)  # node names it keeps out
    support: dict[str, set[str]] = field(default_factory=dict)  # backend -> ops added (what-if)
    dropped: set[str] = field(default_factory=set)  # torch_executed_ops entries dropped
    block_size: int | None = None  # demoted: min_block_size lowered to this
    # forced: node name -> every entry forcing it, for the nodes it forces with other entries
    # (not members: dropping it alone leaves them in PyTorch)
    shared: dict[str, frozenset[str]] = field(default_factory=dict)


def parse_kinds(kind: Any, kinds: tuple[str, ...] = KINDS) -> tuple[str, ...] | None:
    """The kinds a `kind=` filter keeps: one kind or a list ('no converter' or 'no_converter'),
    each one of `kinds`."""
    if kind is None:
        return None
    given = [kind] if isinstance(kind, str) else kind
    if not isinstance(given, (list, tuple, set, frozenset)) or not given:
        raise ConfigError(f"blockers(kind=...) takes a kind or a list of kinds ({', '.join(kinds)}), not {kind!r}.")
    out = []
    for k in given:
        name = str(k).strip().lower().replace("_", " ")
        if name not in kinds:
            raise ConfigError(f"blockers(kind=...): unknown kind {k!r}; kinds are {', '.join(repr(x) for x in kinds)}.")
        out.append(name)
    return tuple(out)


def with_build_failures(table: "pd.DataFrame", p: "Partition", builds: "Builds") -> "pd.DataFrame":
    """`table` with one row first per engine that failed to build (part.build()): its change
    the fix shown to build (or that none was found), its verdict "required"."""
    import pandas as pd

    rows = []
    fix_config = p.config.replace(torch_executed_ops=set(builds.fix)) if builds.fix is not None else None
    fix_stats = repartition(p, fix_config).stats if fix_config is not None and p.graph is not None else None
    for r in builds.failed:  # one fix for all of them: re-partitioned once
        fixed = fix_config is not None and r.stage in ("convert", "build")
        config = fix_config if fixed else None
        after = fix_stats if fixed else None
        rows.append({"op": r.subgraph, "kind": BUILD_FAILS, "nodes": len(p.subgraph(r.subgraph).nodes),
                     "subgraphs_if_fixed": None if after is None else after["subgraphs"],
                     "subgraphs_saved": None if after is None else p.stats["subgraphs"] - after["subgraphs"],
                     "accelerated_ops_gained": (None if after is None
                                                else after["accelerated_ops"] - p.stats["accelerated_ops"]),
                     "verdict": REQUIRED,
                     "change": builds.fix_change() if fixed else (r.fix or "no fix found"),
                     "note": f"fails at {r.stage}: {r.error}; then {r.runs_instead}", "config": config})
    if not rows:
        return table
    return pd.concat([pd.DataFrame(rows, columns=table.columns), table], ignore_index=True)


def check_top(top: Any) -> None:
    """ConfigError unless `top` (how many first rows the combined row joins) is a whole number >= 0."""
    if isinstance(top, bool) or not isinstance(top, int) or top < 0:
        raise ConfigError(f"blockers(top=...) is how many of the first rows the combined row joins "
                          f"(0: no combined row), not {top!r}.")


def target_backend(config: Config) -> str:
    """The backend an unsupported op is added to in the what-if: TensorRT when in priority."""
    return "tensorrt" if "tensorrt" in config.priority else config.priority[0]


# ---------------------------------------------------------------------------- finding causes
def find_causes(p: "Partition") -> list[Cause]:
    """Every cause in `p`, with its what-if config (not yet re-partitioned). None in a graph
    Torch-TensorRT's backend runs eagerly after it failed on it (`p.backend_failed`, set by
    partition_graphs): its graph is dynamo's, not lowered, so no setting makes any of it accelerated."""
    if getattr(p, "backend_failed", ""):
        return []
    t, cfg = p.records, p.config
    unsupported: dict[tuple[str, str], list[int]] = {}
    forced: list[int] = []
    demoted: dict[int, list[int]] = {}
    sizes = p.demotions
    converters = support_mod.tensorrt(validate=False)
    backend = target_backend(cfg)
    for i in range(len(t)):
        if not t.is_callable(i):
            continue
        code = t.reason_code[i]
        if code in (UNSUPPORTED, VALIDATOR):
            if code == VALIDATOR:
                kind = REJECTED
            elif backend == "tensorrt" and not converters.accepts_name(t.op[i]):
                kind = NO_CONVERTER
            else:
                kind = NO_BACKEND
            unsupported.setdefault((t.op[i], kind), []).append(i)
        elif code == TORCH_EXECUTED:
            forced.append(i)
        elif code == DEMOTED:
            size = sizes.get(t.name[i], ("", 0))[1] or p.stats["supported_ops"]
            demoted.setdefault(size, []).append(i)
    causes = []
    for (op, kind), members in unsupported.items():
        names = [t.name[i] for i in members]
        if is_cpu_only_op(op):  # no GPU runs it: the graph was lowered for a CPU
            causes.append(Cause(op, kind, len(members), CPU_LOWERING_CHANGE, None, members=names,
                                note="an op of a CPU lowering: a CUDA GPU runs another op in its place"))
            continue
        causes.append(Cause(op, kind, len(members), f"add {op} to {backend}'s support", None, members=names,
                            support={backend: {op}}))
    causes += _forced_causes(p, forced)
    for size, members in sorted(demoted.items()):
        if size < 1 or size >= cfg.min_block_size:
            continue
        ops = Counter(short_op(t.op[i]) for i in members if t.compute[i])
        label = ", ".join(o for o, _ in ops.most_common(3)) + (" ..." if len(ops) > 3 else "")
        blocks = len({t.subgraph[i] for i in members})
        causes.append(Cause(f"blocks of {size}: {label}", DEMOTED_KIND, len(members),
                            f"min_block_size={size} (was {cfg.min_block_size})", None,
                            members=[t.name[i] for i in members], block_size=size,
                            note=f"{len(members)} node(s) demoted from blocks of {size} node(s)"
                            if blocks else ""))
    for c in causes:
        c.config = what_if(cfg, c.support, c.dropped, c.block_size)
    return causes


def forcing_entries(p: "Partition", forced: list[int]) -> dict[int, tuple[str, ...]]:
    """Forced node index -> every torch_executed_ops entry that forces it, sorted: a plain entry
    naming its op, an hv.source_ops entry naming the op it came from (forced_sources: the graph's
    provenance, or as saved). A SiLU's sigmoid is forced by both "aten.sigmoid.default" and
    hv.source_ops("aten.silu.default"), so dropping either alone leaves it in PyTorch."""
    t, cfg = p.records, p.config
    sources = forced_sources(p)
    checks = []
    for entry in sorted(cfg.torch_executed_ops):
        plain, source = split_sources([entry])
        names = source or plain
        checks.append((entry, bool(source), names, packets_in(names)))
    out: dict[int, tuple[str, ...]] = {}
    for i in forced:
        src = sources[i]
        out[i] = tuple(entry for entry, by_source, names, packets in checks
                       if in_op_set(t.op[i], names, packets) and not by_source
                       or by_source and src is not None and in_op_set(src, names, packets))
    return out


def _shown(entry: str) -> str:
    """An entry as its row names it: the op, or the source op of an hv.source_ops entry."""
    return entry[len(SOURCE_PREFIX):] if entry.startswith(SOURCE_PREFIX) else entry


def _forced_causes(p: "Partition", forced: list[int]) -> list[Cause]:
    """One cause per torch_executed_ops entry that forces nodes. Its members are the nodes
    dropping it alone frees (no other entry forces them); the nodes it forces with other
    entries are `shared`, said in its note and freed by the combined row that drops them all."""
    t = p.records
    if not forced:
        return []
    by_entry: dict[str, list[int]] = {}
    shared: dict[str, dict[str, frozenset[str]]] = {}
    for i, entries in forcing_entries(p, forced).items():
        for entry in entries:
            by_entry.setdefault(entry, [])
            if len(entries) == 1:
                by_entry[entry].append(i)
            else:
                shared.setdefault(entry, {})[t.name[i]] = frozenset(entries)
    causes = []
    for entry, members in by_entry.items():
        shown = _shown(entry)
        what = (f"drop hv.source_ops({short_op(shown)!r}) from torch_executed_ops" if entry != shown
                else f"drop {entry} from torch_executed_ops")
        both = shared.get(entry, {})
        causes.append(Cause(shown, FORCED, len(members), what, None, members=[t.name[i] for i in members],
                            dropped={entry}, shared=both, note=forced_note(entry, both)))
    return causes


def forced_note(entry: str, shared: dict[str, frozenset[str]]) -> str:
    """A forced row's note: a source entry says so; the nodes it forces with other entries (not
    in its count) are said with those entries."""
    source = "a source op, through the lowering" if entry.startswith(SOURCE_PREFIX) else ""
    if not shared:
        return source
    others = sorted({e for entries in shared.values() for e in entries} - {entry})
    named = ", ".join(f"hv.source_ops({short_op(_shown(e))!r})" if e.startswith(SOURCE_PREFIX) else e
                      for e in others)
    return join_notes(source, f"{len(shared)} more node(s) also forced by {named}, not counted: dropping this "
                      "entry alone leaves them in PyTorch")


def what_if(config: Config, support: dict[str, set[str]], dropped: Iterable[str],
            block_size: int | None) -> Config:
    """`config` with `support` ops added to their backends (any_chain with hv.support.ops),
    `dropped` entries removed from torch_executed_ops and min_block_size lowered to `block_size`."""
    if support:
        new = dict(config.support or {})
        for b, ops in support.items():
            current = config.support_for(b)
            added = support_mod.ops(sorted(ops))
            new[b] = added if current is None else support_mod.any_chain(current, added)
        config = config.replace(support=new)
    dropped = set(dropped)
    if dropped:
        config = config.replace(torch_executed_ops=frozenset(config.torch_executed_ops) - dropped)
    if block_size is not None and block_size < config.min_block_size:
        config = config.replace(min_block_size=block_size)
    return config


def combine(causes: list[Cause], config: Config) -> Cause:
    """The causes together: every support addition, every dropped entry, the smallest size."""
    support: dict[str, set[str]] = {}
    dropped: set[str] = set()
    sizes = [c.block_size for c in causes if c.block_size is not None]
    for c in causes:
        for b, ops in c.support.items():
            support.setdefault(b, set()).update(ops)
        dropped |= c.dropped
    members = {m for c in causes for m in c.members}
    members |= {m for c in causes for m, entries in c.shared.items() if entries <= dropped}
    shared = {m: entries for c in causes for m, entries in c.shared.items() if not entries <= dropped}
    block = min(sizes) if sizes else None
    # one min_block_size in the change, the one applied (the smallest), not one per demoted cause
    changes = [c.change for c in causes if c.block_size is None or c.block_size == block]
    return Cause(f"top {len(causes)} together", COMBINED, len(members), "; ".join(dict.fromkeys(changes)),
                 what_if(config, support, dropped, block), members=sorted(members), support=support,
                 dropped=dropped, block_size=block, shared=shared)


# ---------------------------------------------------------------------------- the table
def repartition(p: "Partition", config: Config) -> "Partition":
    """`p`'s graph partitioned with `config` by `p`'s engine: the what-if, as a user runs it."""
    with warnings.catch_warnings():  # the user saw the current setting's warnings already
        warnings.simplefilter("ignore")
        return partition_graph(p.graph, derive(config, {"engine": p.engine}))


def blockers_table(p: "Partition", *, kind: Any = None, top: int = DEFAULT_TOP) -> "pd.DataFrame":
    """The blockers DataFrame (see Partition.blockers)."""
    import pandas as pd

    kinds = parse_kinds(kind)
    check_top(top)
    # a saved partition's op names are as saved: its what-if settings never look them up here
    with names_as_saved() if p.graph is None else contextlib.nullcontext():
        causes = [c for c in find_causes(p) if kinds is None or c.kind in kinds]
    fixed = None if p.graph is None else (lambda cfg: repartition(p, cfg))
    return pd.DataFrame(ranked_rows(causes, p.stats, p.config, fixed, top), columns=list(COLUMNS))


def check_builds(builds: object) -> None:
    """A `builds=` argument is what part.build() returned (hv.Builds), else a ConfigError saying so."""
    if not (hasattr(builds, "failed") and hasattr(builds, "lines")):
        raise ConfigError(f"builds= takes what part.build() returned (hv.Builds), not {type(builds).__name__}.")


def blockers_of(p: "Partition", *, kind: Any = None, top: int = DEFAULT_TOP, compute: bool = True,
                builds: "Builds | None" = None) -> "pd.DataFrame | None":
    """`p.blockers()` without measuring: the default table (kind None, top DEFAULT_TOP) made once
    and kept beside `p` (known_tables.py), another made each time; None when `compute` is False
    and the default table was not made; with `builds`, each engine that failed to build first."""
    check_bool(compute, "blockers(compute=...)")
    if builds is not None:
        check_builds(builds)
    default = kind is None and top == DEFAULT_TOP
    known = known_table(p) if default else None
    if known is None and not compute:
        return None
    if known is None:
        made = blockers_table(p, kind=kind, top=top)
        known = keep_table(p, made) if default else made
    table = known.copy()
    if builds is not None and kind is None:
        table = with_build_failures(table, p, builds)
    return table


def ranked_rows(causes: list[Cause], base: dict, config: Config, fixed: Callable[[Config], Any] | None,
                top: int, more: Iterable[dict] = (), annotate: Callable[[dict, Cause | None], None] | None = None
                ) -> list[dict]:
    """The table's rows, ranked: one per cause (`row`), the rows `more` gives (already made, a
    "_cause" of None), and the combined row of the first `top` causes when it is new;
    `annotate(row, cause)` adds a caller's cells to each."""
    rows = [row(c, base, fixed) for c in causes] + list(more)
    rows.sort(key=_rank)
    firsts = [r["_cause"] for r in rows if r["_cause"] is not None][:top]
    if top and len(rows) > 1 and len(firsts) > 0 and fixed is not None:
        together = row(combine(firsts, config), base, fixed)
        if not any(_repeats(together, r) for r in rows):
            rows.append(together)
    for r in rows:
        cause = r.pop("_cause")
        if annotate is not None:
            annotate(r, cause)
    return rows


def verdict(saved: Any, gained: Any) -> str | None:
    """A what-if's verdict from its own counts (None when it was not re-partitioned)."""
    if saved is None or gained is None or saved != saved or gained != gained:
        return None
    if min(saved, gained) >= 0 and max(saved, gained) > 0:
        return IMPROVEMENT
    return TRADE_OFF if max(saved, gained) > 0 else NO_GAIN


def _rank(r: dict) -> tuple:
    """Improvements first, then trade-offs, no gain and rows with no counts; each by subgraphs
    saved, then ops gained, then nodes kept out."""
    order = VERDICTS.index(r["verdict"]) if r["verdict"] in VERDICTS else len(VERDICTS)
    return order, -_num(r["subgraphs_saved"]), -_num(r["accelerated_ops_gained"]), -r["nodes"], r["op"]


def _repeats(together: dict, row: dict) -> bool:
    """Whether the combined row repeats `row`: the same change, or the same counts."""
    same_counts = (together["subgraphs_if_fixed"] is not None
                   and (together["subgraphs_if_fixed"], together["accelerated_ops_gained"])
                   == (row["subgraphs_if_fixed"], row["accelerated_ops_gained"]))
    return together["change"] == row["change"] or same_counts


def _num(x: Any) -> float:
    return float("-inf") if x is None else float(x)


def row(c: Cause, base: dict, fixed: Callable[[Config], Any] | None) -> dict:
    """Cause `c`'s row: its counts from `fixed(c.config)` (the re-partition with it removed,
    anything with `.stats`) against `base` (the current stats); None: a saved partition's
    counts only."""
    out = {"op": c.op, "kind": c.kind, "nodes": c.nodes, "subgraphs_if_fixed": None, "subgraphs_saved": None,
           "accelerated_ops_gained": None, "verdict": None, "change": c.change, "note": c.note, "config": c.config,
           "_cause": c}
    if fixed is None:
        out["note"] = join_notes(c.note, "a saved partition: counts only, no graph to re-partition")
        return out
    assert c.config is not None, "each cause has its settings before its row is made"
    try:
        s = fixed(c.config).stats
    except HiervizError as exc:
        out["note"] = join_notes(c.note, f"cannot re-partition: {str(exc).splitlines()[0]}")
        return out
    return counted(out, base, s)


def counted(out: dict, base: dict, s: dict) -> dict:
    """Row `out` with its counts: the what-if's stats `s` against the current `base`, and the verdict."""
    out.update(subgraphs_if_fixed=s["subgraphs"], subgraphs_saved=base["subgraphs"] - s["subgraphs"],
               accelerated_ops_gained=s["accelerated_ops"] - base["accelerated_ops"])
    out["verdict"] = verdict(out["subgraphs_saved"], out["accelerated_ops_gained"])
    return out


def join_notes(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def blocked_nodes(p: "Partition", rows: int = 5) -> dict[str, str]:
    """Node name -> the cause's label, for the nodes of the first `rows` causes by rank
    (render(highlight="blockers")); counts only, without re-partitioning, for speed."""
    causes = sorted(find_causes(p), key=lambda c: (-c.nodes, c.op))[:rows]
    return {m: f"{c.kind}: {_short_label(c)}" for c in causes for m in c.members}


def _short_label(c: Cause) -> str:
    """A cause in a few words for a diagram's node or box: the op, or a demoted block's size
    (its ops are on the diagram already; listing them widened every box)."""
    if c.kind == "demoted" and c.block_size is not None:
        return f"blocks of {c.block_size}"
    return short_op(c.op) if c.op.startswith("torch.ops.") else c.op


__all__ = ["ranked_rows", "blockers_of", "check_builds", "row", "counted", "join_notes", "check_top",
           "blockers_table", "find_causes", "what_if", "combine", "repartition", "parse_kinds", "blocked_nodes",
           "KINDS", "KIND_WORDS", "BUILD_FAILS", "REQUIRED", "with_build_failures", "COLUMNS", "Cause",
           "target_backend", "DEFAULT_TOP", "forcing_entries", "forced_note",
           "verdict", "VERDICTS", "VERDICT_WORDS", "IMPROVEMENT", "TRADE_OFF",
           "NO_GAIN"]
