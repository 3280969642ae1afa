// The team page's map: plain SVG drawn from the snapshot's `map` (agents/observers/web/
// floor.py). Keyed updates: each robot, person, object, node and spot is one element,
// made once and afterwards only moved (attributes set when they change), so a push
// never rebuilds the picture and nothing under a pointer is replaced.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const KIT_COLOURS = { green: "#5aa85a", pink: "#e58fb4", orange: "#f0a040", blue: "#4f86c6" };
const ROBOT_COLOURS = ["#3d85c6", "#8e5bb5", "#2f9e8f", "#c0673a", "#6b7385"];

function svgEl(tag, attrs, parent) {
  const el = document.createElementNS(SVGNS, tag);
  setAttrs(el, attrs || {});
  if (parent) parent.appendChild(el);
  return el;
}

// set only what changed: an unchanged attribute is not touched
function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    const text = String(v);
    if (el.getAttribute(k) !== text) el.setAttribute(k, text);
  }
}

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

// one keyed set of elements in an SVG group: `item(key, make)` finds or makes the
// element of `key`; `sweep()` removes those not asked for since the last sweep
class Keyed {
  constructor(parent) { this.parent = parent; this.items = new Map(); this.seen = new Set(); }
  item(key, make) {
    let el = this.items.get(key);
    if (!el) { el = make(this.parent); this.items.set(key, el); }
    this.seen.add(key);
    return el;
  }
  sweep() {
    for (const [key, el] of this.items) if (!this.seen.has(key)) { el.remove(); this.items.delete(key); }
    this.seen = new Set();
  }
}

// one plan of the map (table, graph or kit): a figure with a caption and an SVG whose
// layers (lines under shapes under labels) are keyed sets
function plan(id, title) {
  let fig = document.getElementById(id);
  if (fig && fig.__plan) return fig.__plan;
  fig = document.createElement("figure");
  fig.id = id;
  fig.className = "plan-map";
  const cap = document.createElement("figcaption");
  cap.className = "small";
  const svg = svgEl("svg", { class: "map-svg", role: "img", "aria-label": title });
  fig.append(svg, cap);
  document.getElementById("map").appendChild(fig);
  const [under, mid, bodies, top] = [0, 1, 2, 3].map(() => svgEl("g", {}, svg));
  const p = { fig, cap, svg, under: new Keyed(under), mid: new Keyed(mid), bodies: new Keyed(bodies),
    top: new Keyed(top), box: null };
  fig.__plan = p;
  return p;
}

function sweepPlan(p) { p.under.sweep(); p.mid.sweep(); p.bodies.sweep(); p.top.sweep(); }

function hidePlan(id) {
  const fig = document.getElementById(id);
  if (fig) fig.hidden = true;
}

// the px frame of a plan: world box (grown, never shrunk, so nothing jitters) fitted
// to the section's width
function frame(p, points, pad, maxH) {
  const xs = points.map((q) => q[0]), ys = points.map((q) => q[1]);
  const b = { x0: Math.min(...xs) - pad, x1: Math.max(...xs) + pad, y0: Math.min(...ys) - pad, y1: Math.max(...ys) + pad };
  if (p.box) {
    b.x0 = Math.min(b.x0, p.box.x0); b.x1 = Math.max(b.x1, p.box.x1);
    b.y0 = Math.min(b.y0, p.box.y0); b.y1 = Math.max(b.y1, p.box.y1);
  }
  p.box = b;
  const W = Math.max(260, Math.min(900, document.getElementById("map").clientWidth || 600));
  const k = Math.min(W / (b.x1 - b.x0), maxH / (b.y1 - b.y0));
  const width = Math.round((b.x1 - b.x0) * k), height = Math.round((b.y1 - b.y0) * k);
  setAttrs(p.svg, { viewBox: `0 0 ${width} ${height}`, width, height });
  // y grows up on the floor, down on the screen
  return { k, X: (x) => +((x - b.x0) * k).toFixed(1), Y: (y) => +((b.y1 - y) * k).toFixed(1) };
}

function label(keyed, key, attrs, text, cls) {
  const t = keyed.item(key, (g) => svgEl("text", { class: cls || "map-label" }, g));
  setAttrs(t, attrs);
  setText(t, text);
  return t;
}

function renderTable(t) {
  const p = plan("map-table", "the table, from above");
  p.fig.hidden = false;
  const robots = Object.entries(t.robots || {}), objects = Object.entries(t.objects || {});
  const people = Object.entries(t.people || {});
  const pts = [];
  for (const [, r] of robots) { pts.push([r.x, r.y]); if (r.arm) pts.push(r.arm); }
  for (const [, o] of objects) { pts.push([o.x, o.y]); if (o.goal) pts.push(o.goal); }
  for (const [, h] of people) pts.push([h.x, h.y]);
  if (!pts.length) pts.push([0, 0]);
  const span = Math.max(...pts.map((q) => q[0])) - Math.min(...pts.map((q) => q[0]));
  const f = frame(p, pts, Math.max(0.25, span * 0.12), 420);
  const r0 = Math.max(9, 0.12 * f.k);
  robots.forEach(([name, r], i) => {
    const failing = r.agv && ((r.connection && r.connection !== "ONLINE") || (r.errors || []).length > 0);
    const colour = failing ? "#a34a4a" : ROBOT_COLOURS[i % ROBOT_COLOURS.length];
    const g = p.bodies.item("r:" + name, (parent) => {
      const el = svgEl("g", { class: "map-robot", "data-robot": name }, parent);
      svgEl("line", { class: "reach", stroke: "#5d6577", "stroke-width": 2 }, el);
      svgEl("circle", { class: "body", stroke: "#fff", "stroke-width": 2 }, el);
      svgEl("line", { class: "heading", stroke: "#fff", "stroke-width": 3 }, el);
      svgEl("circle", { class: "gripper", r: 4, fill: "#1d2330" }, el);
      svgEl("title", {}, el);
      return el;
    });
    const [x, y] = [f.X(r.x), f.Y(r.y)];
    const yaw = r.yaw || 0;
    setAttrs(g, { "data-x": r.x, "data-y": r.y, "data-holding": r.holding || "" });
    setAttrs(g.querySelector(".body"), { cx: x, cy: y, r: r0, fill: colour });
    setAttrs(g.querySelector(".heading"), { x1: x, y1: y, x2: (x + r0 * Math.cos(yaw)).toFixed(1), y2: (y - r0 * Math.sin(yaw)).toFixed(1) });
    const arm = r.arm && !r.agv ? [f.X(r.arm[0]), f.Y(r.arm[1])] : [x, y];
    setAttrs(g.querySelector(".reach"), { x1: x, y1: y, x2: arm[0], y2: arm[1] });
    setAttrs(g.querySelector(".gripper"), { cx: arm[0], cy: arm[1], visibility: r.agv ? "hidden" : "visible" });
    const extra = r.agv
      ? [r.battery !== null && r.battery !== undefined ? `battery ${Math.round(r.battery)}%` : "battery ?", r.connection || "?"]
          .concat((r.errors || []).map((e) => "error " + e))
      : [];
    setText(g.querySelector("title"), `${name}${r.profile ? " (" + r.profile + ")" : ""} at (${r.x}, ${r.y})` +
      (r.holding ? `, holding ${r.holding}` : "") + (extra.length ? ` · ${extra.join(" · ")}` : ""));
    const words = [name + (r.holding ? ` · holds ${r.holding}` : "")].concat(extra).join(" · ");
    label(p.top, "rl:" + name, { x: x, y: y + r0 + 13, "text-anchor": "middle", "data-robot": name }, words, "map-label robot");
  });
  for (const [name, o] of objects) {
    // an object without a goal (a station, a dock) is part of the floor: grey
    const state = o.at_goal ? "at_goal" : o.held_by ? "held" : o.goal ? "away" : "fixed";
    if (o.goal) {
      const goal = p.under.item("g:" + name, (parent) => svgEl("g", { class: "map-goal" }, parent));
      if (!goal.firstChild) {
        svgEl("line", { class: "to-goal", stroke: "#9aa3b5", "stroke-dasharray": "3 3" }, goal);
        svgEl("circle", { class: "goal", r: 7, fill: "none", stroke: "#6aa84f", "stroke-width": 2, "stroke-dasharray": "3 2" }, goal);
      }
      const [gx, gy] = [f.X(o.goal[0]), f.Y(o.goal[1])];
      setAttrs(goal.querySelector(".goal"), { cx: gx, cy: gy });
      setAttrs(goal.querySelector(".to-goal"), { x1: f.X(o.x), y1: f.Y(o.y), x2: gx, y2: gy, visibility: o.at_goal ? "hidden" : "visible" });
    }
    const g = p.mid.item("o:" + name, (parent) => {
      const el = svgEl("g", { class: "map-object", "data-object": name }, parent);
      svgEl(o.shape === "box" ? "rect" : "circle", { class: "shape", stroke: "#1d2330", "stroke-width": 1 }, el);
      svgEl("title", {}, el);
      return el;
    });
    const size = Math.max(5, ((o.size && o.size[0]) || 0.04) * f.k);
    const fill = { at_goal: "#6aa84f", held: "#3d85c6", away: "#f1c232", fixed: "#d5d9e0" }[state];
    const shape = g.querySelector(".shape");
    const [x, y] = [f.X(o.x), f.Y(o.y)];
    const h = shape.tagName === "rect" ? Math.max(5, ((o.size && o.size[1]) || 0.04) * f.k) : 2 * size;
    if (shape.tagName === "rect") {
      setAttrs(shape, { x: (x - size / 2).toFixed(1), y: (y - h / 2).toFixed(1), width: size.toFixed(1), height: h.toFixed(1), fill });
    } else {
      setAttrs(shape, { cx: x, cy: y, r: size.toFixed(1), fill });
    }
    setAttrs(g, { "data-x": o.x, "data-y": o.y, "data-state": state });
    setText(g.querySelector("title"), `${name}: ${state.replace("_", " ")}${o.held_by ? " (held by " + o.held_by + ")" : ""}`);
    label(p.top, "ol:" + name, { x: x, y: (y - h / 2 - 3).toFixed(1), "text-anchor": "middle", "data-object": name },
      name, "map-label object");
  }
  for (const [name, h] of people) {
    const g = p.bodies.item("h:" + name, (parent) => {
      const el = svgEl("g", { class: "map-person", "data-person": name }, parent);
      svgEl("circle", { r: 8, fill: "#f4c7a1", stroke: "#8a5a3c", "stroke-width": 2 }, el);
      return el;
    });
    setAttrs(g, { "data-x": h.x, "data-y": h.y });
    setAttrs(g.querySelector("circle"), { cx: f.X(h.x), cy: f.Y(h.y) });
    label(p.top, "hl:" + name, { x: f.X(h.x), y: f.Y(h.y) - 12, "text-anchor": "middle" },
      `${name}'s hand` + (h.holding ? ` · holds ${h.holding}` : ""), "map-label person");
  }
  sweepPlan(p);
  const agvs = robots.filter(([, r]) => r.agv).length;
  setText(p.cap, `From above (metres)${t.t !== null && t.t !== undefined ? ` · world time ${t.t.toFixed(1)} s` : ""} · ` +
    `${robots.length} robot${robots.length === 1 ? "" : "s"}${agvs ? ` (${agvs} VDA 5050 AGV)` : ""}, ${objects.length} objects` +
    (people.length ? `, ${people.length} hand${people.length === 1 ? "" : "s"}` : "") +
    " · yellow: away from its goal (dashed ring), blue: held, green: at its goal, grey: no goal (a station)");
}

function renderGraph(gr) {
  const p = plan("map-graph", "the topological map");
  p.fig.hidden = false;
  const nodes = gr.nodes;
  const f = frame(p, Object.values(nodes), 2.5, 460);
  for (const [a, b, blocked] of gr.edges) {
    const e = p.under.item(`e:${a}:${b}`, (parent) => svgEl("line", { class: "map-edge", "data-edge": `${a}-${b}` }, parent));
    setAttrs(e, { x1: f.X(nodes[a][0]), y1: f.Y(nodes[a][1]), x2: f.X(nodes[b][0]), y2: f.Y(nodes[b][1]),
      stroke: blocked ? "#cc3d3d" : "#b7bcc7", "stroke-width": blocked ? 3 : 2, "stroke-dasharray": blocked ? "5 4" : "none",
      "data-blocked": blocked ? 1 : 0 });
  }
  for (const [name, [x, y]] of Object.entries(nodes)) {
    const c = p.mid.item("n:" + name, (parent) => svgEl("circle", { class: "map-node", r: 5, fill: "#fff", stroke: "#5d6577", "data-node": name }, parent));
    setAttrs(c, { cx: f.X(x), cy: f.Y(y) });
    label(p.top, "nl:" + name, { x: f.X(x) + 7, y: f.Y(y) - 5 }, name, "map-label node");
  }
  const at = {};
  Object.entries(gr.robots).forEach(([name, r], i) => {
    const xy = nodes[r.region];
    if (!xy) return;
    const k = (at[r.region] = (at[r.region] || 0) + 1) - 1;
    const [x, y] = [f.X(xy[0]) + k * 16, f.Y(xy[1])];
    const g = p.mid.item("r:" + name, (parent) => {
      const el = svgEl("g", { class: "map-robot", "data-robot": name }, parent);
      svgEl("circle", { r: 9, stroke: "#fff", "stroke-width": 2, fill: ROBOT_COLOURS[i % ROBOT_COLOURS.length] }, el);
      return el;
    });
    setAttrs(g, { "data-region": r.region, "data-mode": r.mode });
    setAttrs(g.querySelector("circle"), { cx: x, cy: y });
    label(p.top, "rl:" + name, { x: x, y: y + 22 + k * 12, "text-anchor": "middle", "data-robot": name }, `${name} · ${r.mode}`, "map-label robot");
  });
  sweepPlan(p);
  const blocked = gr.edges.filter((e) => e[2]).length;
  setText(p.cap, `The hospital's regions and corridors (the LTL team's map) · each robot at the region of its last step, ` +
    `with its operating state${blocked ? ` · ${blocked} corridor${blocked === 1 ? "" : "s"} blocked (red, dashed)` : ""}`);
}

function renderKit(kit) {
  const p = plan("map-kit", "the kitting table");
  p.fig.hidden = false;
  const per = kit.spots || 5, n = kit.n, works = Math.ceil(n / per);
  const CW = 78, RH = 34, top = 22;
  const width = works * CW + 10, height = top + per * RH + 8;
  setAttrs(p.svg, { viewBox: `0 0 ${width} ${height}`, width, height });
  for (let w = 0; w < works; w++) {
    label(p.top, "w:" + w, { x: 5 + w * CW + CW / 2, y: 14, "text-anchor": "middle" }, `W${w + 1}`, "map-label node");
  }
  const doing = {};
  if (kit.robot_doing) doing[kit.robot_doing.task] = "robot";
  if (kit.human_doing) doing[kit.human_doing.task] = "person";
  const MARK = { empty: "", human_tray: "person's tray", robot_tray: "robot's tray", placed: "✓", wrong: "✗" };
  for (let i = 0; i < n; i++) {
    const w = Math.floor(i / per), s = i % per;
    const colour = KIT_COLOURS[kit.pattern[i] || kit.colour[i]] || "#b7bcc7";
    const state = kit.state[i];
    const g = p.mid.item("s:" + i, (parent) => {
      const el = svgEl("g", { class: "map-spot", "data-spot": i }, parent);
      svgEl("rect", { rx: 4, width: CW - 12, height: RH - 8 }, el);
      svgEl("text", { class: "map-label mark", "text-anchor": "middle" }, el);
      svgEl("title", {}, el);
      return el;
    });
    const x = 5 + w * CW + 6, y = top + s * RH;
    const full = state === "placed" || state === "wrong";
    setAttrs(g, { "data-state": state, "data-doing": doing[i] || "" });
    setAttrs(g.querySelector("rect"), { x, y, fill: colour, "fill-opacity": full ? 1 : state === "empty" ? 0.12 : 0.45,
      stroke: doing[i] ? "#1d2330" : state === "wrong" ? "#cc3d3d" : colour,
      "stroke-width": doing[i] || state === "wrong" ? 3 : 1.5, "stroke-dasharray": state === "empty" ? "4 3" : "none" });
    const mark = g.querySelector("text");
    setAttrs(mark, { x: x + (CW - 12) / 2, y: y + RH / 2 + 1, "font-size": MARK[state].length > 2 ? 8 : 13 });
    setText(mark, doing[i] ? (doing[i] === "robot" ? "cobot" : "person") : MARK[state]);
    setText(g.querySelector("title"), `W${w + 1}·${s + 1} (${kit.pattern[i] || "colour unknown"}): ${state.replace("_", " ")}`);
  }
  sweepPlan(p);
  const placed = kit.state.filter((x) => x === "placed").length;
  const who = (d, name) => (d ? `${name}: ${d.action} W${Math.floor(d.task / per) + 1}·${(d.task % per) + 1}` : `${name}: idle`);
  setText(p.cap, `The kit, workspaces W1-W${works} × ${per} spots in the pattern's colours · ${placed}/${n} placed` +
    (kit.done ? " · kit complete" : ` · ${who(kit.robot_doing, kit.cobot)} · ${who(kit.human_doing, kit.human || "person")}`) +
    " · faint: empty, half: on a tray, full: placed, red ✗: placed wrong");
}

function renderMap(s) {
  const m = s.map || {};
  if (m.table) renderTable(m.table); else hidePlan("map-table");
  if (m.graph) renderGraph(m.graph); else hidePlan("map-graph");
  if (m.kit) renderKit(m.kit); else hidePlan("map-kit");
  const notes = (m.notes || []).slice();
  if (!m.table && !m.graph && !m.kit) {
    notes.unshift(s.status && s.status.kind
      ? `no map for this ${s.status.kind} mission: its agents publish no world state, map or kitting table`
      : "no map yet: the world, an LTL team or a kitting cobot draws one once heard");
  }
  const box = document.getElementById("map-notes");
  const text = notes.join("\n");
  if (box.dataset.text !== text) {
    box.dataset.text = text;
    box.replaceChildren(...notes.map((t) => { const li = document.createElement("li"); li.textContent = t; return li; }));
  }
}
