// The instancer page: one card per startable challenge, live from the
// instance's event stream. The team token comes once in the URL fragment
// (never sent to a server in a URL), then lives in session storage.
"use strict";

const tokenKey = "challenge-instancer-token";

// token is the team's, once chosen (chooseToken).
let token = null;

// linkToken takes the token out of the URL fragment (and the address bar).
function linkToken() {
  const fromLink = new URLSearchParams(location.hash.slice(1)).get("token");
  if (fromLink) history.replaceState(null, "", location.pathname + location.search);
  return fromLink;
}

// chooseToken returns the token the page acts with: the link's, unless it
// is another team's than the one stored, and the participant, asked,
// keeps the stored team (a link of another team once switched the page
// without a word).
async function chooseToken(fromLink) {
  const stored = sessionStorage.getItem(tokenKey);
  if (!fromLink) return stored;
  const linkTeam = teamOf(fromLink), storedTeam = stored ? teamOf(stored) : "";
  if (storedTeam && linkTeam !== storedTeam && !(await askSwitch(linkTeam, storedTeam))) return stored;
  sessionStorage.setItem(tokenKey, fromLink);
  return fromLink;
}

// askSwitch asks whether to leave storedTeam for linkTeam, in the page.
function askSwitch(linkTeam, storedTeam) {
  const box = document.getElementById("switch");
  document.getElementById("switch-text").textContent = "This link signs in as " +
    (linkTeam ? "team " + linkTeam : "another team") + ", but this page is signed in as team " + storedTeam + ".";
  const yes = document.getElementById("switch-yes"), no = document.getElementById("switch-no");
  yes.textContent = linkTeam ? "Switch to team " + linkTeam : "Switch teams";
  no.textContent = "Stay team " + storedTeam;
  box.hidden = false;
  no.focus();
  return new Promise((resolve) => {
    const answer = (switching) => () => { box.hidden = true; resolve(switching); };
    yes.onclick = answer(true);
    no.onclick = answer(false);
  });
}

function notice(text) {
  const el = document.getElementById("notice");
  el.textContent = text;
  el.hidden = !text;
}

async function api(method, path, body) {
  const res = await fetch("api/v1/" + path, {
    method,
    headers: Object.assign({ Authorization: "Bearer " + token }, body ? { "Content-Type": "application/json" } : {}),
    body: body ? JSON.stringify(body) : undefined,
  });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) {
    throw new Error(data.message || "The request failed (" + res.status + ").");
  }
  return data;
}

// proofOfWork solves the instancer's challenge for action (start or renew)
// on template and returns the solution to send (ALTCHA's encoding).
async function proofOfWork(template, action, onProgress) {
  const c = await api("GET", "instances/" + encodeURIComponent(template) + "/challenge?action=" + action);
  const number = await solve(c, onProgress);
  return btoa(JSON.stringify({ algorithm: c.algorithm, challenge: c.challenge, number, salt: c.salt, signature: c.signature }));
}

// solve finds the number, from 0 to the challenge's maxNumber, whose
// SHA-256 after the salt is the challenge. The hashes go by batches, so
// that the page stays responsive and shows how far it got.
async function solve(c, onProgress) {
  if (!window.crypto || !crypto.subtle) {
    throw new Error("This challenge asks your browser for a proof of work, which needs the page over HTTPS.");
  }
  const want = new Uint8Array(c.challenge.match(/../g).map((h) => parseInt(h, 16)));
  const same = (digest) => {
    const got = new Uint8Array(digest);
    for (let i = 0; i < want.length; i++) if (got[i] !== want[i]) return false;
    return true;
  };
  const encoder = new TextEncoder(), batch = 1000;
  for (let from = 0; from <= c.maxNumber; from += batch) {
    const to = Math.min(from + batch, c.maxNumber + 1), digests = [];
    for (let n = from; n < to; n++) digests.push(crypto.subtle.digest("SHA-256", encoder.encode(c.salt + n)));
    const found = (await Promise.all(digests)).findIndex(same);
    if (found >= 0) return from + found;
    onProgress(to / (c.maxNumber + 1));
  }
  throw new Error("Your browser's check failed; try again.");
}

// Events need the Authorization header, which EventSource cannot send: read
// the stream with fetch instead.
async function follow(template, onInstance, signal) {
  for (;;) {
    let wait = 2000;
    try {
      const res = await fetch("api/v1/instances/" + encodeURIComponent(template) + "/events", {
        headers: { Authorization: "Bearer " + token }, signal,
      });
      if (!res.ok) {
        // A refused stream (429) says when to look again.
        wait = Math.max(2, Number(res.headers.get("Retry-After")) || 0) * 1000;
        throw new Error("stream " + res.status);
      }
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        let end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const data = block.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
          if (data) onInstance(JSON.parse(data));
        }
      }
    } catch (e) {
      if (signal.aborted) return;
    }
    await new Promise((r) => setTimeout(r, wait)); // reconnect
  }
}

// watchShared asks for a shared template's one instance every few
// seconds: every team's page shows the same, and none starts it.
async function watchShared(template, onInstance) {
  for (;;) {
    try { onInstance(await api("GET", "instances/" + encodeURIComponent(template))); }
    catch (e) { onInstance({ phase: "Absent" }); }
    await new Promise((r) => setTimeout(r, 5000));
  }
}

function countdown(until) {
  const s = Math.max(0, Math.round((until - Date.now()) / 1000));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), sec = s % 60;
  return (h ? h + "h " : "") + String(m).padStart(h ? 2 : 1, "0") + "m " + String(sec).padStart(2, "0") + "s";
}

function card(template) {
  const node = document.getElementById("card").content.firstElementChild.cloneNode(true);
  node.dataset.template = template.name;
  const $ = (sel) => node.querySelector(sel);
  $(".title").textContent = template.title;
  let instance = { phase: "Absent" };
  let busy = false;

  function render() {
    const present = instance.phase !== "Absent" && instance.phase !== "Deleted";
    const phase = $(".phase");
    phase.dataset.phase = instance.phase;
    // None is accepted, not yet looked at by the operator (not queued).
    phase.textContent = { Absent: "Not started", None: "Accepted" }[instance.phase] || instance.phase;
    let detail = "";
    if (instance.phase === "Pending" && instance.reason) detail = "(" + instance.reason + ")";
    if (instance.phase === "None") detail = "starting in a moment";
    if (instance.phase === "Queued") {
      detail = (instance.queuePosition ? "position " + instance.queuePosition + " in the queue" : "in the queue") +
        "; its time starts when it does";
    }
    if (instance.phase === "Error") detail = instance.message || instance.reason || "";
    if (instance.phase === "Deleted") detail = "stopping…";
    if (template.shared) detail = present ? "shared by every team" : "shared by every team; the organisers start it";
    $(".detail").textContent = detail;
    $(".connect").hidden = !instance.connect;
    $(".endpoint").textContent = instance.connect || "";
    $(".expiry").hidden = !(present && instance.expiresAt);
    $(".start").hidden = present || template.shared;
    $(".start").disabled = busy || instance.phase === "Deleted";
    $(".stop").hidden = !present || template.shared;
    $(".stop").disabled = busy;
    const renew = $(".renew");
    renew.hidden = !present || !instance.expiresAt || template.shared;
    const none = instance.renewalsLeft === 0;
    renew.disabled = busy || none;
    const why = $(".why");
    why.hidden = !(present && none);
    why.textContent = none ? "No renewals left for this instance." : "";
    if (instance.renewalsLeft != null && !none) renew.textContent = "Renew (" + instance.renewalsLeft + " left)";
    else renew.textContent = "Renew";
    tick();
  }
  function tick() {
    if (instance.expiresAt) $(".countdown").textContent = countdown(Date.parse(instance.expiresAt));
  }
  async function act(fn) {
    busy = true; render(); notice("");
    try { const got = await fn(); if (got && got.phase) instance = got; }
    catch (e) { notice(e.message); }
    finally { busy = false; render(); }
  }
  // checked is the proof of work for action, when the template asks for
  // one, with its progress shown on the card.
  async function checked(action) {
    if (!template.proofOfWork) return undefined;
    const check = $(".check");
    check.textContent = "Checking your browser…";
    check.hidden = false;
    try {
      return await proofOfWork(template.name, action, (share) => {
        check.textContent = "Checking your browser… " + Math.floor(share * 100) + "%";
      });
    } finally {
      check.hidden = true;
    }
  }
  $(".start").addEventListener("click", () => act(async () => {
    const proof = await checked("start");
    return api("POST", "instances", Object.assign({ template: template.name }, proof ? { proofOfWork: proof } : {}));
  }));
  $(".stop").addEventListener("click", () => act(() => api("DELETE", "instances/" + encodeURIComponent(template.name))));
  $(".renew").addEventListener("click", () => act(async () => {
    const proof = await checked("renew");
    return api("POST", "instances/" + encodeURIComponent(template.name) + "/renew", proof ? { proofOfWork: proof } : undefined);
  }));
  $(".copy").addEventListener("click", async () => {
    try { await navigator.clipboard.writeText(instance.connect); $(".copy").textContent = "Copied"; }
    catch (e) { notice("Copy failed: select the text instead."); }
    setTimeout(() => { $(".copy").textContent = "Copy"; }, 1500);
  });
  setInterval(tick, 1000);
  render();
  if (template.shared) watchShared(template.name, (got) => { instance = got; render(); });
  else follow(template.name, (got) => { instance = got; render(); }, new AbortController().signal);
  return node;
}

// teamOf reads the token's subject, for display only: the server checks it.
function teamOf(raw) {
  try {
    const payload = raw.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    return JSON.parse(atob(payload)).sub || "";
  } catch (e) {
    return "";
  }
}

async function main() {
  token = await chooseToken(linkToken());
  // A link opened in this tab later (only the fragment changes, so the
  // page stays): the same question, then the page again for that team.
  window.addEventListener("hashchange", async () => {
    const fromLink = linkToken();
    if (fromLink && (await chooseToken(fromLink)) !== token) location.reload();
  });
  if (!token) {
    notice("Open this page with your team's link: it carries your token.");
    return;
  }
  const team = teamOf(token);
  document.getElementById("team").textContent = team ? "Team " + team : "";
  try {
    const { templates } = await api("GET", "templates");
    const list = document.getElementById("templates");
    templates.forEach((t) => list.appendChild(card(t)));
    document.getElementById("empty").hidden = templates.length > 0;
  } catch (e) {
    notice(e.message);
  }
}

main();
