"""The report prose for `Partition.blockers()`: a blockers table (blocker_causes.py) in words,
as the dryrun report, the HTML export, `hv.check` and the widget show it.

Which blockers a report shows (`for_reports`: computed only where that is cheap), why they are
left out otherwise, the "What to change" section's intro, its groups by verdict with their
headings, and each row's what-if in words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hierviz.partitioner.blockers.blocker_causes import (COMBINED, IMPROVEMENT, NO_GAIN, REQUIRED, TRADE_OFF,
                                                         VERDICT_WORDS, VERDICTS)

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from hierviz.building.builds import Builds
    from hierviz.partitioner.partition_result import Partition


REPORT_ROWS = 5  # the causes a report's "What to change" section shows


def for_reports(p: "Partition", builds: "Builds | None" = None) -> "pd.DataFrame | None":
    """The blockers a report shows (with `builds`' failed engines first), or None where computing
    them is work the user did not ask for: hierviz's engine re-partitions in milliseconds (and a
    saved partition only counts), while Torch-TensorRT's partitioners re-run once per cause, so
    theirs show once `p.blockers()` has run (the table is kept beside the partition)."""
    return p.blockers(compute=p.engine == "hierviz" or p.graph is None, builds=builds)


def not_computed_text(p: "Partition") -> str:
    """Why a report leaves the blockers out, and how to include them."""
    return (f"Not computed: p.blockers() re-runs Torch-TensorRT's {p.engine} partitioner once per cause; "
            f"call it first to show the top {REPORT_ROWS} here (the table is kept beside the partition), "
            f"or on the command line: hierviz blockers MODEL --engine {p.engine}.")


def intro_text(p: "Partition", table: "pd.DataFrame") -> str:
    """The first line of a report's "What to change": how many causes, and where the figures
    come from (re-partitioning, judged against the objective; or a saved partition's counts)."""
    causes = int((table.kind != COMBINED).sum())
    if p.graph is None:
        return (f"The top {min(causes, REPORT_ROWS)} of {causes} cause(s) keeping nodes out of the accelerated "
                "backends, counted from a saved partition, which has no graph to re-partition: partition the "
                "model again (hv.partition(model, inputs, config)) for what fixing each gives.")
    return (f"{causes} cause(s) keep nodes out of the accelerated backends. What fixing each alone gives, from "
            "re-partitioning, judged against the partition's objective (fewest subgraphs, no fewer ops "
            "accelerated); each group by subgraphs saved (part.blockers() for all).")


GROUP_TITLES = {REQUIRED: "Required", IMPROVEMENT: "Improvements", TRADE_OFF: "Trade-offs", NO_GAIN: "No gain",
                None: "Not re-partitioned"}


def groups(table: "pd.DataFrame", rows: int = REPORT_ROWS) -> list[tuple[str | None, "pd.DataFrame", int]]:
    """A blockers table as the reports show it: (verdict, its first `rows` causes with the
    combined row last when it has that verdict, how many causes have it), engines that fail to
    build first (after part.build()), then improvements.
    Improvements are always there (maybe empty) once any row has a verdict; the other groups
    only when not empty. Rows with no counts (a saved partition's) are the group None."""
    import pandas as pd

    judged = table.verdict.notna()
    out = []
    for v in (REQUIRED, *VERDICTS, None):
        mine = table[table.verdict == v] if v is not None else table[~judged]
        if mine.empty and not (v == IMPROVEMENT and judged.any()):
            continue
        causes = mine[mine.kind != COMBINED]
        out.append((v, pd.concat([causes.head(rows), mine[mine.kind == COMBINED]]), len(causes)))
    return out


def group_heading(v: str | None, shown: int, total: int) -> str:
    """A group's heading in words: 'Trade-offs (better on one count, ...), the first 5 of 7:'."""
    if v == IMPROVEMENT and not total:
        return f"{GROUP_TITLES[v]} ({VERDICT_WORDS[v]}): no single change is one."
    words = "the what-if could not be run" if v is None else VERDICT_WORDS[v]
    more = f", the first {shown} of {total}" if total > shown else ""
    return f"{GROUP_TITLES[v]} ({words}){more}:"


def change_lines(table: "pd.DataFrame", rows: int = REPORT_ROWS) -> list[str]:
    """A blockers table in words, grouped by verdict (improvements numbered, then trade-offs,
    no gain): what to change and what it gives; a saved partition's causes, numbered, counts only."""
    lines: list[str] = []
    k = 0
    for v, shown, total in groups(table, rows):
        if v is not None or table.verdict.notna().any():  # a saved partition's causes: no verdicts to head
            lines.append(group_heading(v, int((shown.kind != COMBINED).sum()), total))
        numbered = v in (IMPROVEMENT, None)
        for r in shown.itertuples():
            if r.kind == COMBINED:
                lines.append(("" if numbered else "- ") + f"{r.op}: {saves_text(r)}")
                continue
            k += 1
            lines.append(f"{f'{k}.' if numbered else '-'} {r.change}: {saves_text(r)}  [{r.kind}, {r.nodes} node(s)]")
    return lines


def saves_text(r: Any) -> str:
    """What a row's what-if gives, in words ('19 subgraph(s) fewer (1 in all), 16 more op(s) accelerated')."""
    saved, gained = r.subgraphs_saved, r.accelerated_ops_gained
    if saved is None or saved != saved:
        return "not re-partitioned (" + (r.note or "counts only") + ")"
    fewer = f"{int(saved)} subgraph(s) fewer" if saved >= 0 else f"{-int(saved)} subgraph(s) more"
    more = f"{int(gained)} more op(s) accelerated" if gained >= 0 else f"{-int(gained)} fewer op(s) accelerated"
    return f"{fewer} ({int(r.subgraphs_if_fixed)} in all), {more}"


__all__ = ["REPORT_ROWS", "for_reports", "not_computed_text", "intro_text", "GROUP_TITLES", "groups", "group_heading",
           "change_lines", "saves_text"]
