// The team page: renders each snapshot the server pushes over /ws. Every section is
// redrawn from the snapshot alone, so the page holds no history of its own and its
// DOM stays the size of what it shows.
"use strict";

const COLOURS = { inactive: "#e6e6e6", active: "#f1c232", working: "#3d85c6", done: "#6aa84f",
  skipped: "#b4a7d6", stopped: "#a34a4a" };
// the server pushes at least once a second: a page that heard nothing for this long
// (or whose server lost the broker) is not live, and says so
const STALE_MS = 2000;
const ENDINGS = { succeeded: "Mission succeeded", failed: "Mission FAILED", cancelled: "Mission cancelled",
  timed_out: "Mission timed out" };
const $ = (id) => document.getElementById(id);
let selected = null;
let last = null;

let socketOpen = false;
let lastPush = 0;

function setLink(on) {
  socketOpen = on;
  showLink();
}

// live only while the socket is open, the server hears the broker and pushes arrive
function showLink() {
  const brokerGone = !!last && last.connected === false;
  const quiet = Date.now() - lastPush > STALE_MS;
  const live = socketOpen && !brokerGone && !quiet && !!last;
  let text = "live";
  if (!last && !socketOpen) text = "connecting…";
  else if (!socketOpen) text = "disconnected from the web view · reconnecting…";
  else if (brokerGone) text = "disconnected: the broker is gone · reconnecting…";
  else if (quiet) text = "disconnected: no news for 2 s";
  $("link").className = "dot" + (live ? " on" : "");
  $("link").dataset.state = live ? "live" : "disconnected";
  $("link-text").textContent = text;
  $("link-text").className = live || !last ? "" : "down";
  document.body.classList.toggle("stale", !live && !!last);
}
setInterval(showLink, 250);

function renderHeader(s) {
  $("team").textContent = s.team;
  if (s.user && $("user").hidden) {
    $("user").hidden = false;
    $("user").innerHTML = `as <b id="user-name">${esc(s.user)}</b> <button class="leave" id="sign-out" onclick="signOut()">sign out</button>`;
  }
  const m = s.mission || {};
  const st = s.status; // the mission's status (mission.status), whatever its kind
  const kind = (st && st.kind) || m.kind;
  const chip = st ? `<span class="state-chip ${esc(st.state)}" id="mission-state" data-state="${esc(st.state)}">${esc(st.state.replace("_", " "))}</span>` : "";
  $("mission").innerHTML = kind
    ? `${chip} <span id="mission-kind">${esc(kind)}</span> mission` + (m.text && m.kind === kind ? ` · ${esc(m.text)}` : "")
    : "no mission yet";
  $("mission").title = st ? `mission ${st.mission}: ${st.headline}` : "";
  const [done, total, unit] = st && st.total ? [st.done, st.total, st.unit] : [m.done, m.leaves, "done"];
  const failed = st && st.failed ? `, ${st.failed} failed` : "";
  $("progress-text").textContent = total ? `${done}/${total} ${unit}${failed}` + (st && st.detail ? ` · ${st.detail}` : "") : "";
  $("progress").style.width = total ? `${(100 * done) / total}%` : "0";
  if (st && st.ended) {
    const counted = total ? ` · ${done}/${total} ${esc(unit)}${failed}` : "";
    const id = st.state === "succeeded" && (m.complete || !m.leaves) ? ` id="complete"` : "";
    $("banner").innerHTML = `<div id="mission-banner" data-state="${esc(st.state)}" data-mission="${esc(st.mission)}">
      <div class="banner ${esc(st.state)}"${id}>${ENDINGS[st.state] || esc(st.state)} · ${esc(st.kind)}${counted}${
      st.reason ? `<div class="why" id="mission-reason">${esc(st.reason)}</div>` : ""}</div></div>`;
  } else {
    $("banner").innerHTML = m.complete
      ? `<div class="banner" id="complete">Mission complete · ${m.done} of ${m.leaves} subtasks done${
        m.done < m.leaves ? " (the others were OR alternatives, not needed)" : ""}</div>` : "";
  }
  document.title = `teamtree · ${s.team}` + (total ? ` · ${done}/${total}` : "") + (st && st.ended ? ` · ${st.state}` : "");
}

function renderAgents(s) {
  const ids = Object.keys(s.agents);
  if (!ids.length) { $("agents").innerHTML = `<span class="empty">no agent seen yet</span>`; return; }
  const rows = ids.map((id) => {
    const a = s.agents[id];
    const since = a.since_ms ? `<div class="small" title="${ago(a.since_ms, s.time_ms)}">since ${clock(a.since_ms)}</div>` : "";
    // working only while the mission runs and the agent is online: an ended mission or a
    // lost agent stops its work, and the page must not show it going on
    const live = !(s.status && s.status.ended) && a.presence === "ONLINE";
    const work = a.node_label
      ? `${live ? "working" : "stopped"} <b>${esc(a.node_label)}</b>`
      : esc(a.status || "");
    const done = (a.done || []).length;
    return `<tr class="agent${id === selected ? " selected" : ""}" data-agent="${esc(id)}" data-presence="${esc(a.presence)}">
      <td><b>${esc(id)}</b><div class="kind">${esc(a.kind || "?")}</div></td>
      <td><span class="badge ${esc(a.presence)}">${esc(a.presence)}</span>${since}</td>
      <td class="wrap">${work}</td>
      <td title="subtasks done / messages sent">${done} · ${a.messages}</td></tr>`;
  });
  $("agents").className = "";
  $("agents").innerHTML = `<table><thead><tr><th>agent</th><th>presence</th><th>now</th>
    <th>done · msgs</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
  const sheet = selected && s.agents[selected] ? s.agents[selected].factsheet : null;
  $("factsheet").innerHTML = sheet
    ? `<h2 style="margin-top:10px">factsheet of ${esc(selected)}</h2><pre class="factsheet" id="factsheet-json">${esc(JSON.stringify(sheet, null, 2))}</pre>`
    : `<div class="small" style="margin-top:6px">click an agent for its factsheet</div>`;
}

function treeLayout(tree) {
  const nodes = tree.nodes;
  const pos = {};
  let slot = 0;
  let depthMax = 0;
  function place(id, depth) {
    const n = nodes[id];
    depthMax = Math.max(depthMax, depth);
    if (!n.children.length) { pos[id] = { x: slot++, y: depth }; return; }
    n.children.forEach((c) => place(c, depth + 1));
    const xs = n.children.map((c) => pos[c].x);
    pos[id] = { x: (Math.min(...xs) + Math.max(...xs)) / 2, y: depth };
  }
  place(tree.root, 0);
  return { pos, slots: slot, depth: depthMax };
}

function renderTree(s) {
  const tree = s.tree;
  if (!tree || !tree.root) {
    const kind = s.status && s.status.kind;
    if (kind && kind !== "tasktree" && kind !== "multitask") {
      $("tree").textContent = `a ${kind} mission has no task tree: its progress is in the header (and its plans below)`;
    }
    return;
  }
  const { pos, slots, depth } = treeLayout(tree);
  const W = 128, H = 78, BW = 116, BH = 40;
  const width = Math.max(slots * W, 300), height = (depth + 1) * H + 10;
  const cx = (id) => pos[id].x * W + W / 2, cy = (id) => pos[id].y * H + 8;
  const edges = [], boxes = [];
  for (const [id, n] of Object.entries(tree.nodes)) {
    if (!pos[id]) continue;
    for (const c of n.children) {
      edges.push(`<path d="M${cx(id)},${cy(id) + BH} C${cx(id)},${cy(id) + BH + 18} ${cx(c)},${cy(c) - 18} ${cx(c)},${cy(c)}" fill="none" stroke="#9aa3b5"/>`);
    }
    const leaf = !n.children.length;
    const fill = COLOURS[n.state] || "#eee";
    const dark = n.state === "working" || n.state === "done" || n.state === "stopped";
    const label = leaf ? n.label : n.kind.toUpperCase();
    const by = n.by ? esc(n.by) : (leaf ? "" : esc(n.label !== n.kind ? n.label : ""));
    boxes.push(`<g class="tree-node" data-node="${esc(id)}" data-state="${esc(n.state)}"${leaf ? ` data-leaf="1"` : ""}>
      <title>${esc(n.label)} [${esc(id)}]: ${esc(n.state)}${n.by ? " · " + esc(n.by) : ""}</title>
      <rect x="${cx(id) - BW / 2}" y="${cy(id)}" width="${BW}" height="${BH}" rx="${leaf ? 6 : 16}" fill="${fill}"/>
      <text x="${cx(id)}" y="${cy(id) + 17}" text-anchor="middle" font-weight="600" fill="${dark ? "#fff" : "#1d2330"}">${esc(label.length > 17 ? label.slice(0, 16) + "…" : label)}</text>
      <text x="${cx(id)}" y="${cy(id) + 32}" text-anchor="middle" font-size="11" fill="${dark ? "#eef" : "#5d6577"}">${by}</text></g>`);
  }
  $("tree").className = "";
  $("tree").innerHTML = `<svg id="tree-svg" viewBox="0 0 ${width} ${height}" width="100%" style="max-height:${height + 20}px">${edges.join("")}${boxes.join("")}</svg>`;
}

// the mission whose timeline is shown: the one picked, while it is kept, else the
// team's current one
let timelinePick = "";
let timelineKey = "";
const SPAN_COLOURS = { working: "#3d85c6", done: "#3d85c6", inactive: "#8fb3dd", failed: "#cc3d3d", stopped: "#a34a4a" };
const END_COLOURS = { succeeded: "#6aa84f", failed: "#cc3d3d", timed_out: "#cc3d3d", cancelled: "#6b7385" };

function pickTimeline(s) {
  const tl = s.timeline || {};
  const missions = tl.missions || [];
  const pick = $("timeline-pick");
  const key = missions.map((m) => `${m.id}:${m.state}`).join(",") + "|" + tl.mission;
  if (pick.dataset.key !== key) {
    pick.dataset.key = key;
    pick.replaceChildren(...missions.slice().reverse().map((m) => {
      const o = document.createElement("option");
      o.value = m.id;
      o.textContent = `${m.id || "(unnamed)"}${m.kind ? " · " + m.kind : ""}${m.state ? " · " + m.state.replace("_", " ") : ""}${m.id === tl.mission ? " (current)" : ""}`;
      return o;
    }));
  }
  pick.hidden = missions.length < 2;
  const kept = timelinePick && (s.timelines || {})[timelinePick];
  if (!kept) timelinePick = "";
  pick.value = timelinePick || tl.mission || "";
  return kept || tl;
}

$("timeline-pick").addEventListener("change", () => {
  timelinePick = $("timeline-pick").value === (last && last.timeline.mission) ? "" : $("timeline-pick").value;
  timelineKey = "";
  if (last) renderTimeline(last);
});

function renderTimeline(s) {
  const tl = pickTimeline(s);
  $("timeline-of").textContent = tl.mission ? `of mission ${tl.mission}` : "";
  const width = Math.max(300, Math.round($("timeline").clientWidth || 1000));
  const key = JSON.stringify([tl.mission, tl.spans.length, tl.now, tl.end, width, tl.spans.map((x) => x.status + x.end)]);
  if (key === timelineKey) return;
  timelineKey = key;
  if (!tl.spans.length) {
    $("timeline").className = "empty";
    $("timeline").textContent = tl.mission ? "no work yet in this mission" : "no work yet";
    return;
  }
  // one row per agent and node, agents in order, their nodes in the order begun
  const rows = [], index = {};
  const first = {};
  for (const sp of tl.spans) {
    const k = sp.agent + "\u0000" + sp.node;
    if (!(k in index)) { index[k] = rows.length; rows.push({ agent: sp.agent, node: sp.node, label: sp.label || sp.node, start: sp.start }); }
    first[sp.agent] = Math.min(first[sp.agent] === undefined ? Infinity : first[sp.agent], sp.start);
  }
  rows.sort((a, b) => (a.agent !== b.agent ? (a.agent < b.agent ? -1 : 1) : a.start - b.start));
  rows.forEach((r, i) => { index[r.agent + "\u0000" + r.node] = i; });
  const kinds = {};
  for (const [id, a] of Object.entries(s.agents)) kinds[id] = a.kind;
  // drawn in CSS pixels (the SVG is as wide as its box), so labels stay 11 px on a phone
  const L = Math.round(Math.min(220, Math.max(120, width * 0.42))), RH = 20, chart = width - L - 14;
  const fits = Math.floor((L - 8) / 6.2);
  const cut = (text) => (text.length > fits ? text.slice(0, fits - 1) + "…" : text);
  const span = Math.max(1000, tl.now - tl.t0);
  const x = (t) => +(L + (chart * (t - tl.t0)) / span).toFixed(1);
  const top = tl.end ? 16 : 0;
  const height = top + rows.length * RH + 26;
  const out = [];
  let prev = null;
  rows.forEach((r, i) => {
    const y = top + i * RH;
    if (r.agent !== prev) {
      out.push(`<line x1="0" x2="${width}" y1="${y}" y2="${y}" stroke="#dde1e8"/>`);
      prev = r.agent;
    }
    const who = kinds[r.agent] === "human" ? `${r.agent} (person)` : r.agent;
    out.push(`<text class="row-label" x="4" y="${y + 14}" font-size="11"><title>${esc(who)}: ${esc(r.label)} [${esc(r.node)}]</title><tspan font-weight="600">${esc(cut(who))}</tspan> ${esc(cut(r.label).slice(0, Math.max(0, fits - who.length)))}</text>`);
    out.push(`<rect x="${L}" y="${y + 3}" width="${chart}" height="${RH - 6}" fill="${COLOURS.inactive}"/>`);
  });
  for (const sp of tl.spans) {
    const i = index[sp.agent + "\u0000" + sp.node];
    const y = top + i * RH;
    const end = sp.end === null ? tl.now : sp.end;
    const why = sp.reason ? `: ${sp.reason}` : "";
    const tip = `${sp.agent} · ${sp.label || sp.node} · ${sp.status}${why} (${((sp.start - tl.t0) / 1000).toFixed(1)}-${((end - tl.t0) / 1000).toFixed(1)} s)`;
    out.push(`<rect class="span" data-status="${esc(sp.status)}" data-agent="${esc(sp.agent)}" data-node="${esc(sp.node)}" x="${x(sp.start)}" y="${y + 3}" width="${Math.max(2, x(end) - x(sp.start))}" height="${RH - 6}" fill="${SPAN_COLOURS[sp.status] || SPAN_COLOURS.working}"><title>${esc(tip)}</title></rect>`);
    if (sp.status === "done") {
      out.push(`<rect x="${x(sp.end)}" y="${y + 3}" width="${Math.max(0, x(tl.now) - x(sp.end))}" height="${RH - 6}" fill="${COLOURS.done}" opacity=".7"/>`);
    } else if (sp.status === "failed") {
      out.push(`<text class="failed-mark" x="${x(end) + 3}" y="${y + 14}" font-size="12" font-weight="700" fill="#cc3d3d"><title>${esc(tip)}</title>✗ ${esc((sp.reason || "failed").slice(0, 40))}</text>`);
    }
  }
  const axis = top + rows.length * RH;
  const step = [1, 2, 5, 10, 20, 30, 60, 120, 300, 600].find((v) => (span / 1000) / v <= Math.max(3, chart / 90)) || 1200;
  for (let t = 0; t <= span / 1000; t += step) {
    const xx = x(tl.t0 + t * 1000);
    out.push(`<line x1="${xx}" x2="${xx}" y1="${top}" y2="${axis}" stroke="#00000014"/><text x="${xx}" y="${axis + 16}" font-size="11" text-anchor="middle" fill="#6b7385">${t} s</text>`);
  }
  if (tl.end) {
    const xe = x(tl.end.ts), colour = END_COLOURS[tl.end.state] || "#6b7385";
    const words = `${tl.end.state.replace("_", " ")}${tl.end.reason ? ": " + tl.end.reason : ""}`;
    const anchor = xe > L + chart / 2 ? "end" : "start";
    out.push(`<g class="mission-end" data-state="${esc(tl.end.state)}"><line x1="${xe}" x2="${xe}" y1="0" y2="${axis}" stroke="${colour}" stroke-width="2"/>` +
      `<text x="${anchor === "end" ? xe - 4 : xe + 4}" y="12" font-size="11" font-weight="600" text-anchor="${anchor}" fill="${colour}"><title>${esc(words)}</title>${esc(words.slice(0, Math.floor(chart / 7)))}</text></g>`);
  }
  $("timeline").className = "";
  $("timeline").innerHTML = `<svg id="timeline-svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}">${out.join("")}</svg>`;
}

function renderAlerts(s) {
  const items = s.alerts.slice().reverse().map((a) =>
    `<li class="${esc(a.kind)}"><span class="t">${clock(a.ts)}</span><span class="k">${esc(a.kind)}</span> ${esc(a.text)}</li>`);
  const dropped = Object.entries(s.dropped || {});
  if (dropped.length) items.unshift(`<li class="violation"><span class="k">dropped</span> ${dropped.map(([k, v]) => `${esc(k)} ${v}`).join(", ")}</li>`);
  for (const [ch, r] of Object.entries(s.requests || {})) {
    if (r.unanswered) items.unshift(`<li class="claim"><span class="k">unanswered</span> ${r.unanswered} request(s) on _/${esc(ch)}</li>`);
  }
  $("alerts").innerHTML = items.length ? items.join("") : `<li class="empty">nothing to report</li>`;
}

function renderBroker(s) {
  const b = s.broker || {};
  const total = Object.values(s.rates || {}).reduce((a, v) => a + v, 0);
  const figs = [
    ["team messages/s", total.toFixed(1)],
    ["clients", b["clients/connected"]],
    ["broker msgs in /min", b["load/messages/received/1min"]],
    ["broker msgs out /min", b["load/messages/sent/1min"]],
    ["subscriptions", b["subscriptions/count"]],
    ["retained", b["retained messages/count"]],
    ["broker", b.version ? b.version.replace("mosquitto version ", "mosquitto ") : undefined],
    ["uptime", b.uptime],
  ].filter(([, v]) => v !== undefined && v !== null);
  $("broker").innerHTML = figs.map(([k, v]) => `<div class="figure"><span class="small">${esc(k)}</span><b>${esc(v)}</b></div>`).join("");
  const req = Object.entries(s.requests || {});
  $("requests").innerHTML = req.length ? `<table style="margin-top:8px"><thead><tr><th>requests</th><th>sent</th><th>answered</th><th>p50 ms</th></tr></thead><tbody>${
    req.map(([ch, r]) => `<tr><td>_/${esc(ch)}</td><td>${r.sent}</td><td>${r.answered}</td><td>${r.latency_ms_p50 === null ? "-" : r.latency_ms_p50.toFixed(0)}</td></tr>`).join("")}</tbody></table>` : "";
}

function gantt(title, sched) {
  const rows = Object.entries(sched.rows);
  const end = Math.max(1e-9, sched.makespan || 0, ...rows.flatMap(([, ts]) => ts.map((t) => t.finish)));
  // drawn in CSS pixels, as wide as its box, so its labels keep their size on a phone
  const width = Math.max(300, Math.round($("plans").clientWidth || 1000));
  const L = 90, RH = 24, chart = width - L - 10;
  const x = (t) => L + (chart * t) / end;
  const bars = [];
  rows.forEach(([agent, tasks], i) => {
    bars.push(`<text x="4" y="${i * RH + 16}" font-size="12" font-weight="600">${esc(agent)}</text>`);
    tasks.forEach((t, k) => bars.push(`<g><title>${esc(t.task)}: ${t.start.toFixed(1)}-${t.finish.toFixed(1)} s</title><rect x="${x(t.start)}" y="${i * RH + 3}" width="${Math.max(1, x(t.finish) - x(t.start))}" height="${RH - 6}" fill="${k % 2 ? "#3d85c6" : "#6fa8dc"}" stroke="#fff"/><text x="${x(t.start) + 3}" y="${i * RH + 16}" font-size="10" fill="#fff">${esc(t.task.length > 8 ? t.task.slice(0, 8) : t.task)}</text></g>`));
  });
  bars.push(`<text x="${L}" y="${rows.length * RH + 14}" font-size="11" fill="#6b7385">0 s</text><text x="${width - 10}" y="${rows.length * RH + 14}" font-size="11" text-anchor="end" fill="#6b7385">${end.toFixed(1)} s (makespan)</text>`);
  return `<div class="gantt"><b>${esc(title)}</b> <span class="small">from ${esc(sched.from)} at ${clock(sched.ts)}</span>
    <svg viewBox="0 0 ${width} ${rows.length * RH + 20}" width="${width}" height="${rows.length * RH + 20}">${bars.join("")}</svg></div>`;
}

function renderPlans(s) {
  const plans = Object.entries(s.plans || {});
  const sched = s.schedule;
  $("plans-section").hidden = !plans.length && !sched;
  const out = [];
  for (const [robot, p] of plans) {
    const chips = p.actions.map((a, i) =>
      `<span class="chip ${i < p.steps ? "done" : i === p.steps ? "open" : ""}">${esc(a)}</span>`).join(" ");
    out.push(`<div class="plan" data-robot="${esc(robot)}"><b>${esc(robot)}</b>
      <span class="small">LTL plan · epoch ${esc(p.epoch)} · ${esc(p.strategy || "")} · cost ${Number(p.cost || 0).toFixed(1)} · ${p.steps}/${p.actions.length} steps${p.done ? " · done" : ""}</span>
      <div style="margin:4px 0 8px; line-height:2">${chips || '<span class="empty">no action</span>'}</div></div>`);
  }
  const gantts = [];
  if (s.first_schedule && s.first_schedule !== sched && s.first_schedule.ts !== (sched || {}).ts) gantts.push(["first schedule", s.first_schedule]);
  if (sched) gantts.push([gantts.length ? "latest schedule (re-planned)" : "schedule", sched]);
  for (const [title, sc] of gantts) out.push(gantt(title, sc));
  $("plans").innerHTML = out.join("");
}

const MISSION_STATES = { queued: "active", running: "working", cancelling: "working", done: "done",
  failed: "failed", cancelled: "skipped" };

function renderMissions(s) {
  const table = s.missions;
  const queues = s.mission_queues || [];
  $("missions-section").hidden = !table && !queues.length;
  $("missions-queue").textContent = queues.length ? `· served by ${queues.join(", ")}` : (table ? "· no queue online" : "");
  $("mission-submit").disabled = !queues.length;
  if (!table || !table.rows.length) return;
  const rows = table.rows.slice().reverse().map((r) => {
    const open = r.state === "queued" || r.state === "running";
    const outcome = r.summary || r.reason || "";
    return `<tr class="mission-row" data-mission="${esc(r.id)}" data-state="${esc(r.state)}">
      <td><b>${esc(r.id)}</b><div class="kind">${esc(r.kind)}</div></td>
      <td><span class="chip ${esc(MISSION_STATES[r.state] || "")}">${esc(r.state)}</span></td>
      <td class="small">${r.submitted_ms ? clock(r.submitted_ms) : "-"}</td>
      <td class="small">${r.started_ms ? clock(r.started_ms) : "-"}</td>
      <td class="small">${r.ended_ms ? clock(r.ended_ms) : "-"}</td>
      <td class="wrap">${esc(outcome)}</td>
      <td>${open ? `<button class="cancel" data-cancel="${esc(r.id)}">Cancel</button>` : ""}</td></tr>`;
  });
  $("missions").className = "";
  $("missions").innerHTML = `<table><thead><tr><th>mission</th><th>state</th><th>submitted</th>
    <th>started</th><th>ended</th><th>outcome</th><th></th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

async function post(path, body) {
  const reply = await fetch(path, { method: "POST", headers: { "content-type": "application/json" },
    body: JSON.stringify(body) });
  let data = {};
  try { data = await reply.json(); } catch (e) { data = { error: `the server answered ${reply.status}` }; }
  return { ok: reply.ok, data };
}

function say(error, ok) {
  $("mission-error").textContent = error || "";
  $("mission-ok").textContent = ok || "";
}

async function loadMissionFiles() {
  try {
    const reply = await fetch("/api/missions/files");
    const data = await reply.json();
    const names = Object.keys(data.files || {});
    $("mission-pick").innerHTML = `<option value="">(none: paste or upload below)</option>` +
      names.map((n) => `<option value="${esc(n)}">${esc(n)}</option>`).join("");
    window.__missionFiles = data.files || {};
  } catch (e) { /* the form still takes pasted missions */ }
}

$("mission-pick").addEventListener("change", () => {
  const name = $("mission-pick").value;
  if (name && window.__missionFiles) $("mission-toml").value = window.__missionFiles[name];
  say("", "");
});

$("mission-upload").addEventListener("change", () => {
  const file = $("mission-upload").files[0];
  if (!file) return;
  const reader = new FileReader();
  reader.onload = () => { $("mission-toml").value = reader.result; $("mission-pick").value = ""; say("", `read ${file.name}`); };
  reader.readAsText(file);
});

$("submit-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const name = $("mission-pick").value;
  const text = $("mission-toml").value;
  if (!text.trim() && !name) { say("paste a mission, upload a .toml file or pick one first", ""); return; }
  const picked = name && window.__missionFiles && window.__missionFiles[name] === text;
  $("mission-submit").disabled = true;
  say("", "submitting…");
  try {
    const { ok, data } = await post("/api/missions", picked ? { file: name } : { toml: text });
    if (ok) say("", `accepted: ${data.id} (${data.state}, position ${data.position})`);
    else say(data.error || "refused", "");
  } catch (e) {
    say(`the web view cannot be reached: ${e}`, "");
  } finally {
    $("mission-submit").disabled = !(last && (last.mission_queues || []).length);
  }
});

$("missions").addEventListener("click", async (ev) => {
  const b = ev.target.closest("button[data-cancel]");
  if (!b) return;
  b.disabled = true;
  const { ok, data } = await post(`/api/missions/${encodeURIComponent(b.dataset.cancel)}/cancel`, {});
  if (ok) say("", `${data.id}: ${data.state}`);
  else say(data.error || "refused", "");
});

function render(s) {
  last = s;
  lastPush = Date.now();
  showLink();
  renderHeader(s);
  renderMissions(s);
  renderAgents(s);
  renderTree(s);
  renderMap(s);
  renderPlans(s);
  renderTimeline(s);
  renderAlerts(s);
  renderBroker(s);
}

$("agents").addEventListener("click", (ev) => {
  const row = ev.target.closest("tr[data-agent]");
  if (!row) return;
  selected = row.dataset.agent === selected ? null : row.dataset.agent;
  if (last) renderAgents(last);
});

loadMissionFiles();
liveSocket("/ws", render, setLink);
