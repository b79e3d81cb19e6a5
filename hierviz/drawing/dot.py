"""A small DOT writer whose every string is escaped.

Node and op names can hold anything Python allows (`<>{}|"\\`, newlines, control characters).
Node ids in the DOT text are generated (`n12`), never names; labels are HTML-like labels
(`<...>`) built from `html()`-escaped text, and every other string attribute (tooltips, edge
labels, colors) is a quoted string built by `quote()`. Either way the text survives DOT
parsing, graphviz's escString handling and the XML writer of the SVG output.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping, Union
from urllib.parse import quote as url_quote

# Characters XML 1.0 does not allow; they would make the SVG unparsable.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def clean(text: object, limit: int | None = None) -> str:
    """`text` as one printable line: newlines, tabs and control characters shown as Python
    escapes (`\\n`), unpaired surrogates as `\\udc80`; cut to `limit` characters with an ellipsis."""
    s = str(text)
    s = s.encode("utf-8", "backslashreplace").decode("utf-8")
    s = s.replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
    s = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", s)
    s = _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", s)
    if limit is not None and len(s) > limit:
        s = s[: max(1, limit - 1)] + "\u2026"
    return s


def clean_multiline(text: object) -> list[str]:
    """`text` split at its newlines, each line cleaned."""
    return [clean(line) for line in str(text).split("\n")]


def html(text: object, limit: int | None = None) -> str:
    """Text for the inside of an HTML-like label: cleaned, entity-escaped, and backslashes
    doubled (graphviz substitutes `\\N`, `\\G`, ... in HTML labels too, after decoding entities)."""
    s = clean(text, limit)
    return (s.replace("\\", "\\\\").replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def quote(text: object, *, multiline: bool = False, tooltip: bool = False) -> str:
    """A DOT quoted string that graphviz reads back as `text`.

    Quotes are escaped and `&` written as `&amp;` (graphviz decodes entities in strings).
    Backslashes are doubled for labels; tooltips go through graphviz's escape handling twice
    (graphviz 2.43 turns `\\N` in a node tooltip into the node's name), so there each
    backslash is written four times. With `multiline`, newlines become graphviz's `\\n`
    line breaks; otherwise they are shown as a visible `\\n`."""
    lines = clean_multiline(text) if multiline else [clean(text)]
    slash = "\\" * (4 if tooltip else 2)
    out = []
    for line in lines:
        out.append(line.replace("\\", slash).replace('"', '\\"').replace("&", "&amp;"))
    return '"' + "\\n".join(out) + '"'


# What a click in the diagram selects: a node, a subgraph, a module, a group (consecutive
# subgraphs drawn as one box in the collapsed view, named by group_name), a repeat (the module
# view's rolled-up run of sibling modules, named by repeat_name) or the top level (the module
# view's box of the ops outside any module).
ELEMENT_KINDS = ("node", "subgraph", "module", "group", "repeat", "top")
GROUP_NAME = re.compile(r"^subgraphs (\d+)-(\d+)$")
REPEAT_NAME = re.compile(r"^(.+) \u00d7(\d+)$")


def group_name(first: int, last: int) -> str:
    """'subgraphs 3-7': the collapsed view's box of subgraphs `first` to `last` (their indices
    in Partition.subgraphs), as its label and a selection name it."""
    return f"subgraphs {first}-{last}"


def repeat_name(first: str, count: int) -> str:
    """'layers.0 \u00d724': the module view's rolled-up run of `count` sibling modules from module
    path `first` on (drawn once, as 'layers.0\u201323 \u00d724'), as a selection names it."""
    return f"{first} \u00d7{count}"


def element_id(kind: str, name: str, part: str = "") -> str:
    """The SVG id of the element that stands for the node, subgraph, module, group, repeat or top level `name`:
    `hv:<kind>:<name percent-encoded as JavaScript's encodeURIComponent does>`, so a page's
    script reads back (kind, name) from a click whatever characters the name holds. `part`
    tells apart several elements of one thing (a cluster's label node): `hv:<kind>~<part>:...`."""
    if kind not in ELEMENT_KINDS:
        raise ValueError(f"element kind must be one of {ELEMENT_KINDS}, not {kind!r}")
    encoded = url_quote(str(name).encode("utf-8", "surrogatepass"), safe="!*'()~")
    return f"hv:{kind}{'~' + part if part else ''}:{encoded}"


class Html(str):
    """An HTML-like label body, written as `<...>`; build it from `html()`-escaped parts."""


Value = Union[str, int, float, bool, Html]


_TOOLTIPS = frozenset({"tooltip", "edgetooltip", "labeltooltip", "headtooltip", "tailtooltip"})


def _value(v: Value, key: str = "") -> str:
    if isinstance(v, Html):
        return "<" + str(v) + ">"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        text = f"{v:.3f}".rstrip("0").rstrip(".")
        return text or "0"
    return quote(v, multiline=True, tooltip=key in _TOOLTIPS)


_ID = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def attrs(items: Mapping[str, Value | None]) -> str:
    """`[k=v, ...]`, skipping None values; keys must be plain graphviz attribute names."""
    parts = []
    for k, v in items.items():
        if v is None:
            continue
        if not _ID.match(k):
            raise ValueError(f"not a graphviz attribute name: {k!r}")
        parts.append(f"{k}={_value(v, k)}")
    return "[" + ", ".join(parts) + "]" if parts else ""


class DotWriter:
    """Collects DOT statements (with indentation) for a digraph body."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._depth = 1

    def _add(self, text: str) -> None:
        self.lines.append("\t" * self._depth + text + "\n")

    def defaults(self, kind: str, **items: Value | None) -> None:
        """`graph [...]`, `node [...]` or `edge [...]` defaults."""
        self._add(f"{kind} {attrs(items)}")

    def node(self, node_id: str, **items: Value | None) -> None:
        _check_id(node_id)
        self._add(f"{node_id} {attrs(items)}".rstrip())

    def edge(self, tail: str, head: str, **items: Value | None) -> None:
        _check_id(tail)
        _check_id(head)
        self._add(f"{tail} -> {head} {attrs(items)}".rstrip())

    def open(self, sub_id: str, **items: Value | None) -> None:
        """Start `subgraph sub_id {` (a cluster when sub_id starts with `cluster`)."""
        _check_id(sub_id)
        self._add(f"subgraph {sub_id} {{")
        self._depth += 1
        if items:
            self._add(f"graph {attrs(items)}")

    def close(self) -> None:
        self._depth -= 1
        self._add("}")

    def raw(self, text: str) -> None:
        self._add(text)


# words of DOT statements that are not ids (`{rank=same; h1; n2}`, `subgraph cluster_1 {`)
_KEYWORDS = frozenset({"graph", "node", "edge", "subgraph", "rank", "same", "min", "max", "source", "sink",
                       "strict", "digraph"})
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class Nested:
    """A DotWriter body placed inside another drawing (`nest`): its `lines`, the node ids it
    declares (in order) and its edges, all with the prefix."""

    lines: list[str]
    nodes: list[str]
    edges: list[tuple[str, str]]

    def sources(self) -> list[str]:
        """Its nodes without an incoming edge, in order."""
        heads = {b for _, b in self.edges}
        return [n for n in self.nodes if n not in heads]

    def sinks(self) -> list[str]:
        """Its nodes without an outgoing edge, in order."""
        tails = {a for a, _ in self.edges}
        return [n for n in self.nodes if n not in tails]


def nest(body: list[str], prefix: str) -> Nested:
    """A drawing's DotWriter body made fit to sit inside another's cluster: every id prefixed
    (a cluster's id stays a cluster's: `cluster_3` -> `cluster<prefix>_3`), the body's own
    top-level defaults and label (`graph [...]`, `node [...]`, `edge [...]`) left out, each line
    one level deeper. Only the ids before a statement's attributes change: the attributes,
    where names and labels are, are written by DotWriter, escaped, and stay as they are."""
    lines: list[str] = []
    nodes: list[str] = []
    edges: list[tuple[str, str]] = []

    def rename(word: str) -> str:
        if word in _KEYWORDS:
            return word
        return "cluster" + prefix + word[7:] if word.startswith("cluster") else prefix + word

    for line in body:
        depth = len(line) - len(line.lstrip("\t"))
        text = line.strip("\t\n")
        head, sep, rest = text.partition(" [")
        if depth == 1 and head in ("graph", "node", "edge") and sep:
            continue
        head = _WORD.sub(lambda m: rename(m.group()), head)
        words = _WORD.findall(head)
        if "->" in head:
            tail_id, _, head_id = head.partition(" -> ")
            edges.append((tail_id.strip(), head_id.strip()))
        elif len(words) == 1 and words[0] not in _KEYWORDS and not head.startswith("{"):
            nodes.append(words[0])
        lines.append("\t" * (depth + 1) + head + sep + rest + "\n")
    return Nested(lines, nodes, edges)


def _check_id(node_id: str) -> None:
    if not _ID.match(node_id):
        raise ValueError(f"DOT ids are generated identifiers, not {node_id!r}")


__all__ = ["clean", "html", "quote", "element_id", "ELEMENT_KINDS", "Html", "attrs", "DotWriter", "Nested", "nest"]
