// A person's page: the server's agent for this person sends its view over
// /human/<id>/ws on every change; taps go back as {action, ..., tap}. The page keeps
// no state of its own beyond the tap it waits for, so a reload or a reconnect shows
// exactly where things stand.
//
// Two rules keep every tap honest:
// - a control is enabled only when the view says the world accepts its action now
//   (can_start, can_finish, an open question), and while a tap is on its way every
//   control waits for the view that carries it out (view.tap), so nothing is sent twice;
// - elements are created once per key and updated in place (keyed.js): a push never
//   replaces the button under a finger.
"use strict";

const $ = (id) => document.getElementById(id);
const me = decodeURIComponent(location.pathname.split("/")[2] || "");
const NOTICE_MS = 8000; // how long a refused tap's notice stays up
let offset = 0; // server clock - this clock, ms
let lastTap = 0; // the number of this page's last tap
let pending = 0; // a tap sent and not yet carried out (0: none)
let pendingSince = 0;
let view = null;
$("who").textContent = me;

function setLink(on) {
  $("link").className = "dot" + (on ? " on" : "");
  $("link-text").textContent = on ? "connected" : "reconnecting…";
}

function setHTML(node, html) {
  if (node.__html !== html) { node.__html = html; node.innerHTML = html; }
}

// a single child shown while `on`, created once (#complete, #error-text, ...)
function single(parent, id, on, make) {
  let node = $(id);
  if (on && !node) { node = make(); node.id = id; parent.append(node); }
  if (!on && node) node.remove();
  return on ? node : null;
}

const STATE_TEXT = { open: "free", waiting: "not yet", robot: "robot", reaching: "reaching",
  holding: "in your hand", placing: "placing", done: "done" };

function render(v) {
  const error = single($("error"), "error-text", !!(v.error || v.left),
    () => el("section", { className: "error" }));
  if (error) setText(error, v.error || "You left the team. Reload to join again.");
  if (v.error || v.left) return;
  if (v.join) { renderJoin(v.join); return; }
  for (const id of ["join-offer", "watch-only"]) single($("join"), id, false);
  document.body.classList.remove("watch");
  renderExpect(v.expectations);
  view = v;
  offset = v.server_ms - Date.now();
  lastTap = Math.max(lastTap, v.tap || 0);
  if (pending && (v.tap || 0) >= pending) pending = 0;
  setText($("team"), `team ${v.team}` + (v.world ? "" : " · no simulated world"));
  const done = single($("banner"), "complete", !!v.complete,
    () => el("div", { className: "banner" }, "The task is complete. Thank you!"));
  if (done) done.hidden = false;
  renderQuestions(v.questions);
  renderNow(v.now || []);
  const hand = v.in_hand;
  setText($("hand-say"), hand.say + (hand.state === "empty" && !v.complete ? " · tap Start on a free subtask" : ""));
  const finish = $("finish");
  setProp(finish, "hidden", hand.state === "empty");
  setText(finish, hand.object ? `Finish: place the ${hand.object.replace(/_/g, " ")}` : "Finish");
  finish.dataset.allowed = hand.can_finish ? "1" : "";
  $("subtasks-empty").hidden = v.subtasks.length > 0;
  keyedList($("subtasks"), v.subtasks, (t) => t.node, makeTask, updateTask);
  keyedList($("log"), v.log.slice().reverse(), (l) => l.n, makeLine, updateLine);
  enable();
  tick();
}

function makeTask(t) {
  const row = el("div", { className: "task", dataset: { node: t.node } },
    el("div", { className: "name" }, el("span", { className: "what" }), el("small")),
    el("span", { className: "chip" }),
    el("button", { className: "start", dataset: { action: "start", node: t.node } }, "Start"));
  return row;
}

function updateTask(row, t) {
  row.dataset.state = t.state;
  setText(row.querySelector(".name .what"), t.name || "");
  setText(row.querySelector(".name small"), t.say);
  const chip = row.querySelector(".chip");
  setProp(chip, "className", `chip ${t.state}`);
  setText(chip, STATE_TEXT[t.state] || t.state);
  const start = row.querySelector("button.start");
  // offered where starting makes sense; enabled only when the world takes it now
  setProp(start, "hidden", !(t.state === "open" || t.state === "robot"));
  start.dataset.allowed = t.can_start ? "1" : "";
}

function makeLine() {
  return el("div", {}, el("span", { className: "small" }), el("span"));
}

function updateLine(line, l) {
  setProp(line, "className", l.tag === "error" || l.tag === "refused" ? "error" : "");
  setText(line.firstChild, clock(l.ts));
  setText(line.lastChild, l.say);
}

function renderNow(lines) {
  $("now-section").hidden = lines.length === 0;
  keyedList($("now-list"), lines.map((text, i) => ({ text, i })), (x) => x.i,
    () => el("div"), (node, x) => {
      setText(node, x.text);
      setProp(node, "className", x.text.startsWith("you ") ? "you" : "");
    });
}

function renderQuestions(questions) {
  keyedList($("questions"), questions, (q) => q.dialog_id, (q) => {
    const yes = el("button", { className: "yes", dataset: { action: "answer", keep: "1", dialog: q.dialog_id } }, "Yes, I go on");
    const no = el("button", { className: "no", dataset: { action: "answer", keep: "0", dialog: q.dialog_id } }, "No, you take it");
    return el("div", { className: "question", dataset: { dialog: q.dialog_id } },
      el("div", { className: "q" }),
      el("div", { className: "small" }, "yes: you keep it, the robot leaves it · no: the robot takes it"),
      el("div", { className: "countdown" }, el("div", { dataset: { total: String((q.timeout_s || 5) * 1000) } })),
      el("div", { className: "small" }, el("span", { className: "left" })),
      el("div", { className: "buttons" }, yes, no));
  }, (node, q) => {
    setText(node.querySelector(".q"), q.say);
    node.querySelectorAll("[data-total], span.left").forEach((x) => { x.dataset.deadline = q.deadline_ms || ""; });
  });
}

// every control's disabled state, from the last view, the pending tap and the clock
function enable() {
  const now = Date.now() + offset;
  document.querySelectorAll("main.person button[data-action]").forEach((b) => {
    let ok = true;
    if (b.dataset.action === "start" || b.dataset.action === "finish" || b.dataset.action === "join") {
      ok = b.dataset.allowed === "1" && !b.hidden;
    }
    else if (b.dataset.action === "answer") {
      const deadline = Number(b.closest(".question").querySelector("span.left").dataset.deadline);
      ok = !deadline || deadline > now;
    }
    if (b.dataset.action !== "leave" && b.dataset.action !== "join") ok = ok && !pending;
    setProp(b, "disabled", !ok);
  });
  const refused = view && view.log.filter((l) => l.tag === "refused").pop();
  const show = !!refused && now - refused.ts < NOTICE_MS;
  setProp($("notice"), "hidden", !show);
  if (show) setText($("notice"), refused.say);
}

const ACTION_TEXT = { H1: "placed a block of your choice", H2: "gave a subtask to the robot",
  H4: "did what was assigned to you", H6: "handed an assignment back" };
const ROBOT_TEXT = { R1: "fills", R2: "puts a block on your tray for", R3: "clears a wrong block from",
  R4: "fills (you gave it)" };

// seed 001: what the cobot expects of this person (its assignments, its lead/follow belief)
function renderExpect(x) {
  if (!x) { setHTML($("expect"), ""); return; }
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
  const doing = x.doing ? `<div class="small" id="expect-doing">now you: ${esc(ACTION_TEXT[x.doing.action] || "working")} at ${esc(x.doing.spot)}</div>` : "";
  const robot = x.robot_doing ? `<div class="small">now ${esc(x.cobot)}: ${esc(ROBOT_TEXT[x.robot_doing.action] || "works on")} ${esc(x.robot_doing.spot)}</div>` : "";
  const recent = x.recent.slice().reverse().map((r) => `<div class="${esc(r.role)}"><span class="chip ${r.role === "followed" ? "done" : "open"}">${esc(r.role)}</span> ${esc(r.spot)}: ${esc(ACTION_TEXT[r.action] || "a move")}</div>`).join("");
  const done = x.done ? `<div class="banner" id="kitting-done">Kitting done: ${x.placed}/${x.n} spots${x.summary && x.summary.makespan ? ` in ${Number(x.summary.makespan).toFixed(0)} s (scenario time)` : ""}</div>` : "";
  setHTML($("expect"), `<section id="expectations" data-cobot="${esc(x.cobot)}">
    <h2>What ${esc(x.cobot)} expects of you · ${x.placed}/${x.n} spots filled</h2>${done}
    ${assigned}${planned}<div style="margin-top:8px">${stance}</div>${doing}${robot}
    <div class="log" id="expect-recent" style="margin-top:6px">${recent}</div></section>`);
}

function renderJoin(j) {
  setText($("team"), `team ${j.team}`);
  renderExpect(j.expectations);
  const watchOnly = !!(j.expectations && !j.expected_by.length);
  document.body.classList.toggle("watch", watchOnly);
  // a kitting person acts at the table; the page shows what the cobot expects of them
  const watch = single($("join"), "watch-only", watchOnly, () => el("section", { className: "small" }));
  if (watch) setText(watch, `${j.expectations.cobot} works with you on the kitting task; act at the table, this page follows along.`);
  const offer = single($("join"), "join-offer", !watchOnly, () => el("section", {},
    el("h2", {}, "Join the team"), el("p"),
    el("button", { className: "start", dataset: { action: "join" } })));
  if (!offer) return;
  offer.dataset.allowed = j.allowed ? "1" : "0";
  const who = j.expected_by.length
    ? `${j.expected_by.join(", ")} ${j.expected_by.length > 1 ? "expect" : "expects"} you.`
    : "No robot of this team expects a person of this name yet (waiting for the robots).";
  setText(offer.querySelector("p"), `You take part as ${j.id} in team ${j.team}. ${who}`);
  const join = offer.querySelector("button");
  setText(join, `Join as ${j.id}`);
  join.dataset.allowed = j.allowed ? "1" : "";
  setProp(join, "disabled", !j.allowed);
}

function tick() {
  const now = Date.now() + offset;
  document.querySelectorAll(".countdown > div[data-deadline]").forEach((node) => {
    const left = Math.max(0, Number(node.dataset.deadline) - now);
    node.style.width = `${Math.min(100, (100 * left) / Number(node.dataset.total))}%`;
  });
  document.querySelectorAll("span.left[data-deadline]").forEach((node) => {
    const left = Math.max(0, Number(node.dataset.deadline) - now);
    setText(node, left > 0 ? `${(left / 1000).toFixed(1)} s left to answer` : "time is up: the robot leaves it to you");
  });
  // a tap lost on the way (the socket dropped) frees the controls after a while
  if (pending && Date.now() - pendingSince > 5000) pending = 0;
  if (view) enable();
}
setInterval(tick, 100);

const socket = liveSocket(`/human/${encodeURIComponent(me)}/ws`, render, setLink);

document.body.addEventListener("click", (ev) => {
  const b = ev.target.closest("button[data-action]");
  if (!b || b.disabled) return;
  const action = b.dataset.action;
  const tap = ++lastTap;
  if (action === "start") socket.send({ action, node: b.dataset.node, tap });
  else if (action === "finish") socket.send({ action, tap });
  else if (action === "answer") socket.send({ action, dialog_id: b.dataset.dialog, keep: b.dataset.keep === "1", tap });
  else if (action === "leave" || action === "join") { socket.send({ action }); b.disabled = true; return; }
  pending = tap;
  pendingSince = Date.now();
  enable();
});
