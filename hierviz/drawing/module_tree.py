"""The module tree of a partition and its roll-up plan: pure data, no DOT.

`build_tree` groups a partition's ops by the model's `nn.Module` hierarchy (from the per-node
record's module stack). `make_plan` decides, for a depth, which modules are boxes and which are
clusters, and rolls up consecutive numbered sibling modules (`layers.0`, `layers.1`, ... or
`block3-1`, `block3-2`, ...) of one class whose ops run with the same pattern (relative module
path, op, backend, in order) into one item. The module view (`hierviz.drawing.modules`) draws a plan.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from hierviz.errors import RenderError

if TYPE_CHECKING:  # pragma: no cover
    from hierviz.partitioner.record import NodeTable
    from hierviz.partitioner.partition_result import Partition

INDEXED = re.compile(r"^(.*?)(\d+)$")




@dataclass(eq=False)
class Mod:
    """A module of the tree: its own ops (innermost module of the op) and its children."""

    path: str
    cls: str
    level: int
    parent: "Mod | None" = None
    children: dict[str, "Mod"] = field(default_factory=dict)  # by path, in order of first op
    own: list[int] = field(default_factory=list)
    ops: list[int] = field(default_factory=list)  # the whole subtree's ops, graph order

    def rel(self, base: "Mod") -> str:
        """This module's path relative to `base` ('' for base itself)."""
        if self is base:
            return ""
        if base.path and self.path.startswith(base.path + "."):
            return self.path[len(base.path) + 1:]
        return self.path


@dataclass(eq=False)
class Item:
    """One drawn element: a box (a module, or a cluster's own ops) or a cluster, standing for
    one module or a run of rolled-up siblings."""

    id: str
    run: list[Mod]                # the siblings drawn as this item (several when rolled up)
    members: list[Mod]            # every module it stands for: the run, and inside a rolled-up
                                  # cluster the same module of each copy
    own_only: bool = False        # an own-ops box of a cluster (one per run of own ops between children)
    cluster: bool = False
    children: list["Item"] = field(default_factory=list)
    own: list[int] = field(default_factory=list)  # an own-ops box: its ops, in every member
    first: int = 0                # the graph position of its first op: the data-flow order

    @property
    def mod(self) -> Mod:
        return self.members[0]

    @property
    def rolled(self) -> bool:
        """Several siblings drawn once."""
        return len(self.run) > 1 and not self.own_only


# ---------------------------------------------------------------------------- the tree
def build_tree(t: NodeTable) -> Mod:
    """The module tree of the partitioned ops; the root (path '') holds ops outside any module."""
    root = Mod("", "", 0)
    for i in range(len(t)):
        if not t.subgraph[i] >= 0:
            continue
        node = root
        node.ops.append(i)
        for path, cls in t.module_stack[i]:
            if not path:  # the root module itself
                continue
            child = node.children.get(path)
            if child is None:
                child = node.children[path] = Mod(path, cls.rsplit(".", 1)[-1], node.level + 1, node)
            node = child
            node.ops.append(i)
        node.own.append(i)
    return root


def effective_root(root: Mod) -> Mod:
    """Skip wrappers: descend while a module has one child and no ops of its own."""
    node = root
    while len(node.children) == 1 and not node.own:
        node = next(iter(node.children.values()))
    return node


def find_module(root: Mod, focus: str) -> Mod:
    """The module named `focus`: its full path, or a unique suffix of one ('layers.3')."""
    found: list[Mod] = []
    everything: list[str] = []
    stack = [root]
    while stack:
        m = stack.pop()
        if m.path:
            everything.append(m.path)
            if m.path == focus:
                return m
            if m.path.endswith("." + focus):
                found.append(m)
        stack.extend(m.children.values())
    if len(found) == 1:
        return found[0]
    if found:
        raise RenderError(f"focus {focus!r} matches {len(found)} modules ({', '.join(m.path for m in found[:4])}); "
                          "give the full module path.")
    close = difflib.get_close_matches(focus, everything, n=4, cutoff=0.5)
    hint = f" Did you mean: {', '.join(repr(c) for c in close)}?" if close else ""
    raise RenderError(f"focus {focus!r} is not a module of this model.{hint} Module paths are in "
                      "Partition.nodes()['module_path'].")


def is_module(p: "Partition", name: str) -> bool:
    """Whether `name` is a module path of p's model (and not a node name or subgraph tag)."""
    t = p.records
    if name in t.position or name in t.subgraph_tag:
        return False
    needle = f".{name}."
    return any(needle in f".{path}." for path in set(t.module_path) if path)


# ---------------------------------------------------------------------------- layout plan
class Plan:
    """Which modules are boxes and clusters at a depth, after rolling up repeated siblings."""

    def __init__(self, t: NodeTable, base: Mod, depth: int, pattern: list[Any]) -> None:
        self.t, self.base, self.depth, self.pattern = t, base, depth, pattern
        self.box_of: dict[int, str] = {}  # op -> drawn box id
        self.count = 0
        self._sig: dict[int, Any] = {}
        self.items = self._expand([base], [base])

    def signature(self, m: Mod) -> Any:
        """Class and the (relative module path, op, backend) of every op in m's subtree, in order."""
        key = id(m)
        sig = self._sig.get(key)
        if sig is None:
            paths, ops, start = self.t.module_path, self.t.op, len(m.path)
            sig = self._sig[key] = (m.cls, tuple((paths[i][start:], ops[i], self.pattern[i]) for i in m.ops))
        return sig

    def _new_id(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def _expand(self, group: list[Mod], run: list[Mod]) -> list[Item]:
        """The items inside the modules of `group` (one module, or the same module of each copy
        of a rolled-up run; group[0] is drawn; `run` names it): the own-ops box, then the
        children, rolled up."""
        m = group[0]
        items: list[Item] = []
        runs: list[list[Mod]] = []
        for c in m.children.values():
            if runs and _rollable(runs[-1][-1], c) and self.signature(runs[-1][-1]) == self.signature(c):
                runs[-1].append(c)
            else:
                runs.append([c])
        # Own ops are drawn where they run: one box per stretch of them between the children
        # (a residual add after attention, another after the MLP), not one box for all; own
        # ops between the copies of a rolled-up run share one box after it.
        segments: dict[int, list[int]] = {}
        for g in group:
            heads = sorted(h.ops[0] for h in (g.children.get(g.path + r[0].path[len(m.path):]) for r in runs)
                           if h is not None and h.ops)
            for i in g.own:
                segments.setdefault(_count_below(heads, i), []).append(i)
        for key in sorted(segments):
            ops = segments[key]
            own = Item(self._new_id("m"), run, list(group), own_only=True, own=ops, first=min(ops))
            for i in ops:
                self.box_of[i] = own.id
            items.append(own)
        for sibling_run in runs:
            # the same run in every module of the group (same signature: same relative paths)
            members = [g.children[g.path + c.path[len(m.path):]] if g is not m else c
                       for g in group for c in sibling_run]
            items.append(self._item(sibling_run, members))
        items.sort(key=lambda it: it.first)  # in the order the ops run
        return items

    def _item(self, run: list[Mod], members: list[Mod]) -> Item:
        rep = run[0]
        level = rep.level - self.base.level
        first = rep.ops[0] if rep.ops else 0
        if level < self.depth and rep.children:
            item = Item(self._new_id("c"), run, members, cluster=True, first=first)
            # expand the first module with every other one it stands for in parallel
            item.children = self._expand([rep] + [x for x in members if x is not rep], run)
            return item
        item = Item(self._new_id("m"), run, members, first=first)
        for member in members:
            for i in member.ops:
                self.box_of[i] = item.id
        return item


def _count_below(sorted_values: list[int], x: int) -> int:
    """How many of sorted_values are below x."""
    import bisect

    return bisect.bisect_left(sorted_values, x)


def copies(items: Sequence[Item]) -> dict[int, dict[int, int]]:
    """Op -> {rolled item number: which copy of it holds the op}, for every rolled-up item
    holding the op. An edge between two copies of one rolled-up block (layer 3 feeding
    layer 4) is not drawn: the block is drawn once."""
    out: dict[int, dict[int, int]] = {}
    for n, it in enumerate(walk_items(items)):
        if not it.rolled:
            continue
        span = len(it.run)
        for k, member in enumerate(it.members):  # members: each outer copy's run, in order
            for i in member.ops:
                out.setdefault(i, {})[n] = k % span
    return out


def between_copies(copy_of: dict[int, dict[int, int]], a: int, b: int) -> bool:
    """Whether ops a and b lie in different copies of one rolled-up block."""
    ca, cb = copy_of.get(a), copy_of.get(b)
    if not ca or not cb:
        return False
    return any(cb.get(n, k) != k for n, k in ca.items())


def loose_edges(edges: Sequence[tuple[str, str]], first: dict[str, int]) -> set[tuple[str, str]]:
    """The box edges that must not decide the ranks (dot's constraint=false): those against
    the data flow (the head's first op runs before the tail's: ops of two boxes interleave),
    and skip edges (a residual: the head is also reached from the tail through other boxes),
    which would otherwise stretch the chain they jump over and pull its boxes aside."""
    forward = [(a, b) for a, b in edges if first.get(a, 0) < first.get(b, 0)]
    loose = {(a, b) for a, b in edges if first.get(a, 0) >= first.get(b, 0)}
    succ: dict[str, list[str]] = {}
    for a, b in forward:
        succ.setdefault(a, []).append(b)
    for a, b in forward:
        # reached from a through another box, on forward edges only (they never go back)
        stack = [c for c in succ[a] if c != b and first.get(c, 0) < first.get(b, 0)]
        seen = set(stack)
        while stack:
            c = stack.pop()
            if c == b:
                break
            for d in succ.get(c, ()):
                if d not in seen and first.get(d, 0) <= first.get(b, 0):
                    seen.add(d)
                    stack.append(d)
        if b in seen:
            loose.add((a, b))
    return loose


def _rollable(a: Mod, b: Mod) -> bool:
    """Numbered siblings of one class: `layers.3`, `layers.4` (items of a container) or
    `block3-1`, `block3-2`, `stage_2` (named blocks): same prefix ending in `.`, `-` or `_`, the
    next number (`fc1`, `fc2` are two layers, not copies)."""
    ma, mb = INDEXED.match(a.path), INDEXED.match(b.path)
    return (ma is not None and mb is not None and ma.group(1) == mb.group(1) and ma.group(1).endswith((".", "-", "_"))
            and int(mb.group(2)) == int(ma.group(2)) + 1 and a.cls == b.cls and len(a.ops) == len(b.ops))


def walk_items(items: Sequence[Item]):
    """Every item, clusters before their children."""
    for it in items:
        yield it
        if it.cluster:
            yield from walk_items(it.children)


def _max_level(m: Mod) -> int:
    deepest, stack = m.level, [m]
    while stack:
        x = stack.pop()
        deepest = max(deepest, x.level)
        stack.extend(x.children.values())
    return deepest - m.level


def make_plan(t: NodeTable, base: Mod, depth: int | None, budget: int, pattern: list[Any]) -> Plan:
    """The plan at `depth`, or at the deepest depth whose plan draws at most `budget` items."""
    deepest = max(1, _max_level(base))
    if depth is not None:
        plan = Plan(t, base, min(depth, deepest), pattern)
    else:
        plan = Plan(t, base, 1, pattern)
        for d in range(2, deepest + 1):
            candidate = Plan(t, base, d, pattern)
            if sum(1 for _ in walk_items(candidate.items)) > budget:
                break
            plan = candidate
    return plan


def effective_root_of(plan: Plan) -> Mod:
    """The tree's effective root (graph inputs feed it directly)."""
    node = plan.base
    while node.parent is not None:
        node = node.parent
    return effective_root(node)


__all__ = ["Mod", "Item", "Plan", "build_tree", "effective_root", "effective_root_of", "find_module",
           "is_module", "make_plan", "walk_items", "copies", "between_copies", "loose_edges", "INDEXED"]
