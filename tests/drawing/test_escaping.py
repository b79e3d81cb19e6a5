"""Names with <>{}|"\\, newlines and control characters give valid DOT, SVG, HTML and JSON,
and the diagram shows them as they are."""

from __future__ import annotations

import html.parser
import json
import subprocess
import xml.etree.ElementTree as ET

import pytest

from hierviz.drawing import to_svg
from hierviz.drawing.dot import clean, html as html_text, quote
from .conftest import BACKEND, BAD
from .helpers import parse_svg


def test_graph_really_holds_the_bad_names(bad_part):
    names = [n.name for n in bad_part.graph.graph.nodes]
    assert BAD in names and "p\n" + BAD in names
    assert {sg.backend for sg in bad_part.subgraphs} == {BACKEND, "tensorrt", "torch"}


@pytest.mark.parametrize("view", ["full", "collapsed", "focus"])
def test_dot_and_svg_valid_and_names_shown_exactly(bad_part, view, needs_dot):
    kw = {"focus": BAD} if view == "focus" else {}
    source = bad_part.render(view, **kw).source
    proc = subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    assert b"Warning" not in proc.stderr and b"Error" not in proc.stderr, proc.stderr.decode()
    svg = to_svg(bad_part, view, **kw)
    root, groups = parse_svg(svg)  # valid XML
    names = list(bad_part.records.name)
    nodes = [g for g in groups if g.kind == "node" and g.title[0] == "n" and g.title[1:].isdigit()]
    if view == "collapsed":
        assert not nodes
        boxes = [g for g in groups if g.kind == "node" and g.title.startswith("s")]
        assert any(clean(BACKEND + "_0") in " ".join(g.texts) for g in boxes)
    else:
        assert len(nodes) == (len(names) if view == "full" else 4)  # radius 2 around n1
        for g in nodes:
            name = names[int(g.title[1:])]
            if name != "output":
                assert clean(name) in g.texts, (name, g.texts)
            assert g.tooltip.split("\n")[0] == clean(name)
    everything = " ".join("".join(t.itertext()) for t in root.iter() if t.tag.endswith("}text"))
    assert clean(BACKEND) in everything


def test_html_report_and_notebook_parse(bad_part, tmp_path, needs_dot):
    path = bad_part.save(tmp_path / "bad.html")
    text = path.read_text(encoding="utf-8")
    _check_html(text)
    assert "<script" not in text
    _check_html(bad_part._repr_html_())
    # the SVG inside the report is well-formed XML on its own
    svg = text[text.index("<svg"): text.index("</svg>") + 6]
    ET.fromstring(svg)
    # the text report and tables carry the names escaped, never as markup
    assert "<b>{c}" not in text and "&lt;b&gt;{c}" in text


def test_json_roundtrips_names(bad_part, tmp_path):
    data = json.loads(bad_part.save(tmp_path / "bad.json").read_text(encoding="utf-8"))
    assert [n["name"] for n in data["nodes"]] == [n.name for n in bad_part.graph.graph.nodes]
    assert {s["backend"] for s in data["subgraphs"]} == {BACKEND, "tensorrt", "torch"}
    assert data["config"]["priority"] == [BACKEND, "tensorrt"]


def test_dot_export_without_layout(bad_part, tmp_path):
    text = bad_part.save(tmp_path / "bad.dot").read_text(encoding="utf-8")
    assert text == bad_part.render().source
    assert "\n" + BAD not in text  # no raw newline from a name inside the DOT text


@pytest.mark.parametrize("text", [BAD, "plain", "x\\", "\\N\\G\\E\\T\\H\\L", "\ud800", "\x7f\x00\x1f",
                                  "tab\there", "crlf\r\nend", "é ü 名前"])
def test_escape_helpers_roundtrip_through_dot(text, needs_dot):
    """A node whose tooltip is quote(text) and whose label is html(text): dot shows both as
    clean(text)."""
    dot = (f"digraph G {{ n [label=<{html_text(text)}>, tooltip={quote(text, tooltip=True)}, shape=box]; }}")
    proc = subprocess.run(["dot", "-Tsvg"], input=dot.encode(), capture_output=True)
    assert proc.returncode == 0, proc.stderr.decode()
    _, groups = parse_svg(proc.stdout.decode())
    node = next(g for g in groups if g.kind == "node")
    assert "".join(node.texts) == clean(text) or (clean(text).strip() == "" and not "".join(node.texts).strip())
    assert (node.tooltip or "") == clean(text)


class _Strict(html.parser.HTMLParser):
    """Checks that every opened element is closed in order (void elements aside)."""

    VOID = {"meta", "link", "br", "input", "img", "hr", "col", "path", "polygon", "ellipse", "polyline",
            "line", "rect", "circle", "stop", "use", "image"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass

    def handle_endtag(self, tag):
        if tag in self.VOID:
            return
        assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
        self.stack.pop()


def _check_html(text: str) -> None:
    parser = _Strict()
    parser.feed(text)
    parser.close()
    assert parser.stack in ([], ["html"], ["html", "body"]), parser.stack[-5:]
