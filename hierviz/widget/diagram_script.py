"""The explorer's clickable diagram in the page: the ES module and CSS of `DiagramWidget`
(diagram_widget.py), inline (no network: nothing is fetched from a CDN).

The script shows the SVG from the widget's `value` (the diagram panel's HTML; a message when
it holds no SVG) in a box of its own, and
- a click on an element whose id is `hv:<kind>[~part]:<name>` (hierviz.drawing.dot.element_id:
  a node, a subgraph's cluster or box, a module's box or cluster) sets the synced `selected`
  to {kind, name}, which the Python side acts on;
- the element `selected` names is outlined, whether a click or Python set it, and brought into
  view when it is outside it (a name set from Python, a redraw that moved it);
- the elements `marked` names ({label, levels}: what blocks the most; blocker_marks.py) get a
  red outline, the colour of `render(highlight="blockers")`: those of the first level the view
  draws (the nodes, else their subgraphs' and groups' boxes, else their modules', runs' and the
  top level's boxes), by a style sheet beside the SVG (the picture itself is left as drawn; the
  widget's `data-marked` lists their ids); the bar says what the red means, and
  `marked.what_if` that the picture is a what-if's (a blocker's fix applied, not the user's setting);
- the wheel zooms about the pointer, a drag pans (a drag is never a click), the buttons zoom
  and "fit" goes back to the whole width (at most 100%).
"""

from __future__ import annotations

from hierviz.drawing.highlight import BLOCKER_LINE

ESM = r"""
const MIN_H = 160, MAX_H = 640, PX_PER_PT = 4 / 3, DRAG_PX = 4;

function parseId(id) {
  if (!id || !id.startsWith("hv:")) return null;
  const rest = id.slice(3), colon = rest.indexOf(":");
  if (colon < 0) return null;
  const [kind, part] = rest.slice(0, colon).split("~");
  let name;
  try { name = decodeURIComponent(rest.slice(colon + 1)); } catch (e) { return null; }
  return name ? {kind, name, part: part || ""} : null;
}

function render({ model, el }) {
  el.classList.add("hv-diagram-widget");
  const bar = document.createElement("div");
  bar.className = "hv-dw-bar";
  const message = document.createElement("div");
  message.className = "hv-dw-message";
  const frame = document.createElement("div");
  frame.className = "hv-diagram";
  const box = document.createElement("div");
  box.className = "hv-scroll hv-dw-box";
  frame.append(box);
  const marks = document.createElement("style");
  el.append(bar, message, frame, marks);

  let svg = null, full = null, view = null, touched = false, drag = null;

  const button = (text, title, act) => {
    const b = document.createElement("button");
    b.type = "button"; b.textContent = text; b.title = title; b.className = "hv-dw-button";
    b.addEventListener("click", (e) => { e.preventDefault(); act(); });
    bar.append(b);
    return b;
  };
  button("\u2212", "zoom out", () => zoomAt(box.clientWidth / 2, box.clientHeight / 2, 1 / 1.25));
  button("+", "zoom in", () => zoomAt(box.clientWidth / 2, box.clientHeight / 2, 1.25));
  button("fit", "the whole width (at most 100%)", () => { touched = false; fit(); });
  const hint = document.createElement("span");
  hint.className = "hv-dw-hint";
  hint.textContent = "click a node or subgraph to select it \u00b7 wheel: zoom \u00b7 drag: pan";
  bar.append(hint);
  const key = document.createElement("span");
  key.className = "hv-dw-key";
  bar.append(key);
  const whatIf = document.createElement("span");
  whatIf.className = "hv-dw-whatif";
  bar.append(whatIf);

  function apply() {
    if (!svg || !view) return;
    const w = box.clientWidth || 1, h = box.clientHeight || 1;
    svg.setAttribute("viewBox", `${view.x} ${view.y} ${w / view.s} ${h / view.s}`);
  }

  function fit() {
    if (!svg || !full) return;
    const w = box.clientWidth || 800;
    const s = Math.min(PX_PER_PT, (w - 2) / full.w);
    box.style.height = Math.round(Math.max(MIN_H, Math.min(MAX_H, full.h * s + 4))) + "px";
    view = {x: full.x - (w / s - full.w) / 2, y: full.y, s};
    apply();
  }

  function zoomAt(px, py, factor) {
    if (!view) return;
    const s = Math.max(0.02, Math.min(8, view.s * factor));
    const ux = view.x + px / view.s, uy = view.y + py / view.s;
    view = {x: ux - px / s, y: uy - py / s, s};
    touched = true;
    apply();
  }

  function elements(kind, names) {
    const out = [];
    if (!svg) return out;
    for (const g of svg.querySelectorAll("g[id^='hv:']")) {
      const p = parseId(g.id);
      if (p && p.kind === kind && names.has(p.name) && p.part !== "label") out.push(g);
    }
    return out;
  }

  function reveal(g) {
    if (!view) return;
    const r = g.getBoundingClientRect(), b = box.getBoundingClientRect();
    if (!b.width || !b.height || (!r.width && !r.height)) return;
    if (r.left >= b.left && r.right <= b.right && r.top >= b.top && r.bottom <= b.bottom) return;
    const dx = (r.left + r.right - b.left - b.right) / 2, dy = (r.top + r.bottom - b.top - b.bottom) / 2;
    view = {x: view.x + dx / view.s, y: view.y + dy / view.s, s: view.s};
    touched = true;
    apply();
  }

  function highlight() {
    if (!svg) return;
    for (const g of svg.querySelectorAll(".hv-dw-selected")) g.classList.remove("hv-dw-selected");
    const sel = model.get("selected") || {};
    if (!sel.name) return;
    const found = elements(sel.kind, new Set([sel.name]));
    for (const g of found) g.classList.add("hv-dw-selected");
    if (found.length) reveal(found[0]);
  }

  function mark() {
    const marked = model.get("marked") || {};
    key.textContent = marked.label ? "red: " + marked.label : "";
    key.style.display = marked.label ? "" : "none";
    whatIf.textContent = marked.what_if || "";
    whatIf.style.display = marked.what_if ? "" : "none";
    let ids = [];
    for (const level of svg ? marked.levels || [] : []) {
      const wanted = new Set(level.map(([kind, name]) => kind + "\u0000" + name));
      ids = [...svg.querySelectorAll("g[id^='hv:']")].filter((g) => {
        const p = parseId(g.id);
        return p && p.part !== "label" && wanted.has(p.kind + "\u0000" + p.name);
      }).map((g) => g.id);
      if (ids.length) break;
    }
    // a style sheet beside the picture, never a change to the SVG itself; the selection's outline wins
    marks.textContent = ids.map((id) => {
      const g = "#" + CSS.escape(id) + ":not(.hv-dw-selected)";
      return `${g}{filter:drop-shadow(0 0 3px BLOCKER_LINE)}\n${g} > title + :is(polygon,path,ellipse),` +
        `${g} > g:first-of-type > a > :is(polygon,path,ellipse):first-child` +
        "{stroke:BLOCKER_LINE !important;stroke-width:4px !important}";
    }).join("\n");
    el.dataset.marked = JSON.stringify(ids);
  }

  function show() {
    const value = model.get("value") || "";
    const holder = document.createElement("template");
    holder.innerHTML = value;
    const found = holder.content.querySelector("svg");
    if (!found) {
      message.innerHTML = value;
      box.replaceChildren();
      frame.style.display = "none";
      svg = null;
      return;
    }
    message.replaceChildren();
    frame.style.display = "";
    const vb = found.viewBox && found.viewBox.baseVal;
    const next = vb && vb.width ? {x: vb.x, y: vb.y, w: vb.width, h: vb.height} : {x: 0, y: 0, w: 800, h: 600};
    found.removeAttribute("width");
    found.removeAttribute("height");
    found.setAttribute("preserveAspectRatio", "xMinYMin meet");
    found.style.cssText = "width:100%;height:100%;max-width:none;display:block";
    box.replaceChildren(found);
    svg = found;
    full = next;
    if (touched && view) apply(); else fit();
    mark();
    highlight();
  }

  box.addEventListener("wheel", (e) => {
    if (!view) return;
    e.preventDefault();
    const r = box.getBoundingClientRect();
    const step = e.deltaMode === 1 ? 0.05 : 0.002;
    zoomAt(e.clientX - r.left, e.clientY - r.top, Math.exp(-e.deltaY * step));
  }, {passive: false});

  box.addEventListener("pointerdown", (e) => {
    if (e.button !== 0 || !view) return;
    drag = {x: e.clientX, y: e.clientY, vx: view.x, vy: view.y, moved: false, target: e.target, id: e.pointerId};
  });
  box.addEventListener("pointermove", (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
    if (!drag.moved && Math.abs(dx) + Math.abs(dy) < DRAG_PX) return;
    if (!drag.moved) {
      drag.moved = true;
      box.classList.add("hv-dw-dragging");
      try { box.setPointerCapture(drag.id); } catch (err) { /* the pointer is gone */ }
    }
    view = {x: drag.vx - dx / view.s, y: drag.vy - dy / view.s, s: view.s};
    touched = true;
    apply();
  });
  const end = (e) => {
    if (!drag) return;
    const was = drag;
    drag = null;
    box.classList.remove("hv-dw-dragging");
    if (was.moved || e.type !== "pointerup") return;
    const g = was.target && was.target.closest ? was.target.closest("g[id^='hv:']") : null;
    const p = g && svg && svg.contains(g) ? parseId(g.id) : null;
    if (!p) return;
    model.set("selected", {kind: p.kind, name: p.name});
    model.save_changes();
    highlight();
  };
  box.addEventListener("pointerup", end);
  box.addEventListener("pointercancel", end);

  let width = 0;
  const resized = new ResizeObserver(() => {
    if (box.clientWidth === width) return;
    width = box.clientWidth;
    if (!touched) fit(); else apply();
  });
  resized.observe(box);
  model.on("change:value", show);
  model.on("change:selected", highlight);
  model.on("change:marked", mark);
  show();
  mark();
  return () => {
    resized.disconnect();
    model.off("change:value", show);
    model.off("change:selected", highlight);
    model.off("change:marked", mark);
  };
}

export default { render };
""".replace("BLOCKER_LINE", BLOCKER_LINE)  # the red of render(highlight="blockers")

CSS = """
.hv-diagram-widget{font-family:Helvetica,Arial,sans-serif;font-size:13px;min-width:0}
.hv-diagram-widget .hv-dw-bar{display:flex;flex-wrap:wrap;align-items:center;gap:4px;margin:2px 0 4px 0}
.hv-diagram-widget .hv-dw-button{min-width:28px;height:24px;border:1px solid #bbb;background:#f7f7f7;
  border-radius:3px;cursor:pointer;font-size:13px;padding:0 6px}
.hv-diagram-widget .hv-dw-hint{color:#777;font-size:11px;margin-left:8px}
.hv-diagram-widget .hv-dw-box{overflow:hidden;border:1px solid #ccc;background:#fff;cursor:grab;
  touch-action:none;user-select:none;resize:vertical}
.hv-diagram-widget .hv-dw-box.hv-dw-dragging{cursor:grabbing}
.hv-diagram-widget g[id^='hv:']{cursor:pointer}
.hv-diagram-widget .hv-dw-whatif{background:#FFF3E0;border-left:4px solid BLOCKER_LINE;padding:1px 6px;font-size:11px;
  margin-left:8px}
.hv-diagram-widget .hv-dw-key{color:BLOCKER_LINE;font-size:11px;margin-left:8px;font-weight:bold}
.hv-diagram-widget g.hv-dw-selected{filter:drop-shadow(0 0 3px #E91E63)}
.hv-diagram-widget g.hv-dw-selected > title + :is(polygon,path,ellipse),
.hv-diagram-widget g.hv-dw-selected > g:first-of-type > a > :is(polygon,path,ellipse):first-child{
  stroke:#E91E63 !important;stroke-width:4px !important}
""".replace("BLOCKER_LINE", BLOCKER_LINE)  # the red of render(highlight="blockers")

__all__ = ["ESM", "CSS"]
