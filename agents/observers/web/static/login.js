// The sign-in form: the server checks the user and password with the broker; on
// success it sets a cookie and this page goes on to where the browser was going.
"use strict";

const next = new URLSearchParams(location.search).get("next") || "/";
const safeNext = next.startsWith("/") && !next.startsWith("//") ? next : "/";

document.getElementById("login-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const error = document.getElementById("login-error");
  const button = document.getElementById("sign-in");
  error.textContent = "";
  button.disabled = true;
  try {
    const reply = await fetch("/api/login", {
      method: "POST", headers: { "content-type": "application/json" },
      body: JSON.stringify({ username: document.getElementById("username").value,
        password: document.getElementById("password").value }),
    });
    const data = await reply.json().catch(() => ({ error: `the server answered ${reply.status}` }));
    if (reply.ok) { location.replace(safeNext); return; }
    error.textContent = data.error || "refused";
  } catch (e) {
    error.textContent = `the web view cannot be reached: ${e}`;
  } finally {
    button.disabled = false;
  }
});
