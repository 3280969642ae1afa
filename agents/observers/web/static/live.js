// A websocket that reconnects by itself (1 s, 2 s, ... up to 10 s) and hands every
// JSON message to onData; onLink(true|false) tells the page whether it is connected.
"use strict";

function liveSocket(path, onData, onLink) {
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + path;
  let ws = null;
  let delay = 1000;
  function open() {
    ws = new WebSocket(url);
    ws.onopen = () => { delay = 1000; onLink(true); };
    ws.onmessage = (ev) => {
      let data;
      try { data = JSON.parse(ev.data); } catch (e) { return; }
      onData(data);
    };
    ws.onclose = (ev) => {
      if (ev.code === 4401) { // not signed in (or signed out): to the sign-in form
        location.replace("/login?next=" + encodeURIComponent(location.pathname));
        return;
      }
      onLink(false);
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 10000);
    };
  }
  open();
  return { send: (obj) => { if (ws && ws.readyState === 1) ws.send(JSON.stringify(obj)); } };
}

function esc(value) {
  return String(value === null || value === undefined ? "" : value).replace(/[&<>"']/g,
    (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour12: false });
}

function ago(ms, now) {
  const s = Math.max(0, Math.round((now - ms) / 1000));
  if (s < 60) return s + " s ago";
  if (s < 3600) return Math.floor(s / 60) + " min ago";
  return Math.floor(s / 3600) + " h ago";
}

async function signOut() {
  await fetch("/api/logout", { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  location.replace("/login?next=" + encodeURIComponent(location.pathname));
}
