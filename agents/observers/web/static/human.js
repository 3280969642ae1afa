// A person's page: the server's agent for this person sends its view over
// /human/<id>/ws on every change; taps go back as {action, ...}. The page keeps no
// state of its own, so a reload or a reconnect shows exactly where things stand.
"use strict";

const $ = (id) => document.getElementById(id);
const me = decodeURIComponent(location.pathname.split("/")[2] || "");
let offset = 0; // server clock - this clock, ms
let view = null;
$("who").textContent = me;

function setLink(on) {
  $("link").className = "dot" + (on ? " on" : "");
  $("link-text").textContent = on ? "connected" : "reconnecting…";
}

const STATE_TEXT = { open: "open", waiting: "not yet", robot: "robot", reaching: "reaching",
  holding: "in your hand", done: "done" };

function render(v) {
  if (v.error) { $("error").innerHTML = `<section class="error" id="error-text">${esc(v.error)}</section>`; return; }
  if (v.left) { $("error").innerHTML = `<section>You left the team. Reload to join again.</section>`; return; }
  if (v.join) { renderJoin(v.join); return; }
  $("error").innerHTML = "";
  $("join").innerHTML = "";
  document.body.classList.remove("watch");
  renderExpect(v.expectations);
  view = v;
  offset = v.server_ms - Date.now();
  $("team").textContent = `team ${v.team}` + (v.world ? "" : " · no simulated world");
  $("banner").innerHTML = v.complete ? `<div class="banner" id="complete">The task is complete. Thank you!</div>` : "";
  // questions first: they have a deadline
  $("questions").innerHTML = v.questions.map((q) => `
    <div class="question" data-dialog="${esc(q.dialog_id)}">
      <div class="q">${esc(q.robot)} asks: ${esc(q.question || `are you doing ${q.label}?`)}</div>
      <div class="small">${esc(q.label)} · yes: you keep it, the robot leaves it · no: the robot takes it</div>
      <div class="countdown"><div data-deadline="${q.deadline_ms || ""}" data-total="${(q.timeout_s || 5) * 1000}"></div></div>
      <div class="small"><span class="left" data-deadline="${q.deadline_ms || ""}"></span></div>
      <div class="buttons">
        <button class="yes" data-action="answer" data-keep="1" data-dialog="${esc(q.dialog_id)}">Yes, I do it</button>
        <button class="no" data-action="answer" data-keep="0" data-dialog="${esc(q.dialog_id)}">No, you take it</button>
      </div></div>`).join("");
  const busy = v.subtasks.find((t) => t.state === "holding" || t.state === "reaching");
  $("hand").innerHTML = busy
    ? `<div class="what" id="holding" data-node="${esc(busy.node)}">${busy.state === "holding" ? "You hold" : "Reaching for"} <b>${esc(busy.object || busy.label)}</b></div>
       <button class="finish" data-action="finish" ${busy.state === "holding" ? "" : "disabled"}>Finish: place it</button>`
    : `<div class="what empty">nothing${v.complete ? "" : " · tap Start on an open subtask"}</div>`;
  $("subtasks").className = "";
  $("subtasks").innerHTML = v.subtasks.length ? v.subtasks.map((t) => `
    <div class="task" data-node="${esc(t.node)}" data-state="${esc(t.state)}">
      <div class="name">${esc(t.object || t.label)}<small>${esc(t.label)}${t.by ? " · " + esc(t.by) : ""}</small></div>
      <span class="chip ${esc(t.state)}">${esc(STATE_TEXT[t.state] || t.state)}</span>
      ${t.state === "open" || (t.state === "robot" && t.enabled) ? `<button class="start" data-action="start" data-node="${esc(t.node)}" ${busy ? "disabled" : ""}>Start</button>` : ""}
    </div>`).join("") : `<span class="empty">waiting for the mission…</span>`;
  const lines = v.log.slice().reverse().map((l) => `<div class="${l.tag === "error" || l.tag === "refused" ? "error" : ""}"><span class="small">${clock(l.ts)}</span> ${esc(readable(l.text))}</div>`);
  $("log").innerHTML = lines.join("");
  tick();
}

// the agent's log lines are terminal lines ("question pr2 root/0/1 PLACE(cup): ... [yes = ...]");
// drop the node ids and the typing hints, which mean nothing on a screen
function readable(text) {
  return text.replace(/ root(\/\d+)*/g, "").replace(/ \[yes = .*\]$/, "")
    .replace(/^question (\S+) /, "$1 asked: ").replace(/^robot /, "")
    .replace(" (answer answered)", "").replace(" (answer timeout)", " (no answer in time)");
}

const ACTION_TEXT = { H1: "placed a block of your choice", H2: "gave a subtask to the robot",
  H4: "did what was assigned to you", H6: "handed an assignment back" };
const ROBOT_TEXT = { R1: "fills", R2: "puts a block on your tray for", R3: "clears a wrong block from",
  R4: "fills (you gave it)" };

// seed 001: what the cobot expects of this person (its assignments, its lead/follow belief)
function renderExpect(x) {
  if (!x) { $("expect").innerHTML = ""; return; }
  const swatch = (c) => c ? `<i class="swatch" style="background:${esc(c)}" title="${esc(c)}"></i>` : "";
  const assigned = x.assigned.length
    ? x.assigned.map((a) => `<div class="task assigned" data-task="${a.task}"><div class="name">${swatch(a.colour)}Place ${esc(a.colour || "the")} block on ${esc(a.spot)}<small>on your tray: ${esc(x.cobot)} assigned it to you</small></div><span class="chip open">yours</span></div>`).join("")
    : `<div class="empty">nothing on your tray${x.done ? "" : " · choose a spot yourself, or wait for an assignment"}</div>`;
  const planned = x.planned.length
    ? `<div class="small" id="expect-planned">next in ${esc(x.cobot)}'s plan for you: ${x.planned.map((p) => esc(p.spot)).join(", ")} · for itself: ${x.robot_planned} subtask(s)</div>` : "";
  const stance = x.stance
    ? `<div id="expect-stance" data-stance="${esc(x.stance)}"><b>${esc(x.cobot)} ${x.stance === "follow" ? "expects you to follow" : "lets you lead"}</b>
       <div class="meter" title="α_f: 0 leads, 1 follows"><span>lead</span><div><i style="left:${(100 * x.alpha_f).toFixed(0)}%"></i></div><span>follow</span></div>
       <div class="small">its belief: α_f = ${x.alpha_f.toFixed(2)} (following preference), α_e = ${(x.alpha_e || 0).toFixed(2)} (error-proneness) · you followed ${x.followed}, led ${x.led}</div></div>`
    : `<div class="small">${esc(x.cobot)} has not planned yet</div>`;
  const doing = x.doing ? `<div class="small" id="expect-doing">now you: ${esc(x.doing.action)} at ${esc(x.doing.spot)} (${esc(ACTION_TEXT[x.doing.action] || "")})</div>` : "";
  const robot = x.robot_doing ? `<div class="small">now ${esc(x.cobot)}: ${esc(ROBOT_TEXT[x.robot_doing.action] || x.robot_doing.action)} ${esc(x.robot_doing.spot)}</div>` : "";
  const recent = x.recent.slice().reverse().map((r) => `<div class="${esc(r.role)}"><span class="chip ${r.role === "followed" ? "done" : "open"}">${esc(r.role)}</span> ${esc(r.action)} ${esc(r.spot)}: ${esc(ACTION_TEXT[r.action] || r.action)}</div>`).join("");
  const done = x.done ? `<div class="banner" id="kitting-done">Kitting done: ${x.placed}/${x.n} spots${x.summary && x.summary.makespan ? ` in ${Number(x.summary.makespan).toFixed(0)} s (scenario time)` : ""}</div>` : "";
  $("expect").innerHTML = `<section id="expectations" data-cobot="${esc(x.cobot)}">
    <h2>What ${esc(x.cobot)} expects of you · ${x.placed}/${x.n} spots filled</h2>${done}
    ${assigned}${planned}<div style="margin-top:8px">${stance}</div>${doing}${robot}
    <div class="log" id="expect-recent" style="margin-top:6px">${recent}</div></section>`;
}

function renderJoin(j) {
  $("team").textContent = `team ${j.team}`;
  renderExpect(j.expectations);
  document.body.classList.toggle("watch", !!(j.expectations && !j.expected_by.length));
  if (j.expectations && !j.expected_by.length) {
    // a kitting person acts at the table; the page shows what the cobot expects of them
    $("join").innerHTML = `<section class="small" id="watch-only">${esc(j.expectations.cobot)} works with you on the kitting task; act at the table, this page follows along.</section>`;
    return;
  }
  const who = j.expected_by.length
    ? `${j.expected_by.map(esc).join(", ")} ${j.expected_by.length > 1 ? "expect" : "expects"} you.`
    : "No robot of this team expects a person of this name yet (waiting for the robots).";
  $("join").innerHTML = `<section id="join-offer" data-allowed="${j.allowed ? 1 : 0}">
    <h2>Join the team</h2><p>You take part as <b>${esc(j.id)}</b> in team <b>${esc(j.team)}</b>. ${who}</p>
    <button class="start" data-action="join" ${j.allowed ? "" : "disabled"}>Join as ${esc(j.id)}</button></section>`;
}

function tick() {
  const now = Date.now() + offset;
  document.querySelectorAll(".countdown > div[data-deadline]").forEach((el) => {
    const left = Math.max(0, Number(el.dataset.deadline) - now);
    el.style.width = `${Math.min(100, (100 * left) / Number(el.dataset.total))}%`;
  });
  document.querySelectorAll("span.left[data-deadline]").forEach((el) => {
    const left = Math.max(0, Number(el.dataset.deadline) - now);
    el.textContent = left > 0 ? `${(left / 1000).toFixed(1)} s left to answer` : "time is up: the robot leaves it to you";
  });
}
setInterval(tick, 100);

const socket = liveSocket(`/human/${encodeURIComponent(me)}/ws`, render, setLink);

document.body.addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-action]");
  if (!b || b.disabled) return;
  const action = b.dataset.action;
  if (action === "start") socket.send({ action, node: b.dataset.node });
  else if (action === "finish") socket.send({ action });
  else if (action === "answer") socket.send({ action, dialog_id: b.dataset.dialog, keep: b.dataset.keep === "1" });
  else if (action === "leave" || action === "join") socket.send({ action });
  b.disabled = true;
});
