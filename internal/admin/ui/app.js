// Coxswain dashboard: reads /api/v1/* with the user's bearer token and
// redraws the current page every second. No external assets.
"use strict";

const tokenKey = "coxswain.token";
const pages = ["topology", "fleet", "routing", "problems"];
let timer = null;

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function svgEl(tag, attrs, text) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

async function api(path) {
  const token = sessionStorage.getItem(tokenKey) || "";
  const r = await fetch("api/v1/" + path, { headers: { Authorization: "Bearer " + token }, cache: "no-store" });
  if (r.status === 401 || r.status === 403) {
    const body = await r.json().catch(() => ({}));
    const err = new Error(body.error || r.statusText);
    err.auth = true;
    throw err;
  }
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}

function page() {
  const p = location.hash.replace(/^#/, "").split("?")[0];
  return pages.includes(p) ? p : "topology";
}

function table(headers, rows, empty) {
  if (rows.length === 0) return el("p", { class: "empty" }, empty);
  return el("table", {}, el("tr", {}, headers.map((h) => el("th", {}, h))), rows);
}

function renderFleet(v) {
  const rows = v.proxies.map((p) =>
    el("tr", { "data-proxy": p.nodeId },
      el("td", {}, p.nodeId), el("td", {}, p.scope), el("td", {}, p.peer || ""), el("td", {}, p.layout || ""),
      el("td", { class: p.inSync ? "ok" : "bad" }, p.ackedVersion ? p.ackedVersion.slice(0, 12) + (p.inSync ? " (current)" : " (behind)") : "none"),
      el("td", {}, p.lastAck ? new Date(p.lastAck).toLocaleTimeString() : ""),
      el("td", {}, (p.gateways || []).map((g) => g.namespace + "/" + g.name + " gen " + g.generation).join(", ")),
      el("td", {}, (p.boundPorts || []).join(", ")),
      el("td", {}, p.svidExpiresIn),
      el("td", { class: p.rejected ? "bad" : "" }, p.rejected ? p.rejected.detail : "")));
  const scopes = v.scopes.map((s) =>
    el("tr", {}, el("td", {}, s.scope), el("td", {}, s.version.slice(0, 12)), el("td", {}, new Date(s.published).toLocaleTimeString()),
      el("td", {}, (s.gateways || []).map((g) => g.namespace + "/" + g.name).join(", ")), el("td", {}, s.proxies)));
  const note = v.discovery ? null : el("p", { class: "empty" }, "This replica does not run the snapshot stream.");
  const standby = v.leader ? null : el("p", { class: "warning" }, "This replica is a standby: the leader holds the fleet.");
  return [standby, note,
    el("h2", {}, "Proxies"),
    table(["Node", "Scope", "Address", "Layout", "Acked snapshot", "Last ack", "Gateways (acked generation)", "Bound ports", "SVID expires in", "Refused"], rows, "No proxy is connected."),
    el("h2", {}, "Published scopes"),
    table(["Scope", "Version", "Published", "Gateways", "Proxies"], scopes, "Nothing is published yet.")];
}

function renderRouting(v) {
  const out = [];
  for (const s of v.scopes) {
    out.push(el("h2", {}, "Scope " + s.scope + " — " + (s.gateways || []).map((g) => g.namespace + "/" + g.name).join(", ")));
    for (const l of s.listeners) {
      out.push(el("h3", {}, l.name + " (" + l.protocol + " :" + l.port + ")"));
      const rows = [];
      const route = (host, r) => rows.push(el("tr", { "data-route": r.id },
        el("td", {}, host), el("td", {}, r.source.kind + " " + r.source.namespace + "/" + r.source.name),
        el("td", {}, r.match || ""), el("td", {}, r.action), el("td", {}, (r.policies || []).join(", ")),
        el("td", {}, (r.backends || []).map((b) =>
          el("div", { class: b.invalid || b.endpoints.length === 0 ? "bad" : "" },
            (b.service || "invalid") + " w" + b.weight + ": " + (b.endpoints.length ? b.endpoints.join(" ") : "no endpoints"))))));
      for (const vh of l.virtualHosts || []) for (const r of vh.routes) route(vh.hostname, r);
      for (const r of l.streamRoutes || []) route(r.match || "*", r);
      out.push(table(["Host / SNI", "Source", "Match", "Action", "Policies", "Backends and endpoints"], rows, "No routes."));
    }
  }
  return out.length ? out : [el("p", { class: "empty" }, "Nothing to serve yet.")];
}

function renderProblems(v) {
  const rows = v.problems.map((p) =>
    el("tr", { "data-problem": p.object.kind + "/" + (p.object.namespace ? p.object.namespace + "/" : "") + p.object.name, class: p.severity },
      el("td", {}, p.severity), el("td", {}, p.object.kind), el("td", {}, (p.object.namespace ? p.object.namespace + "/" : "") + p.object.name),
      el("td", {}, p.where || ""), el("td", {}, p.type), el("td", {}, p.reason), el("td", {}, p.message)));
  return [el("h2", {}, "Problems"), table(["Severity", "Kind", "Object", "Where", "Condition", "Reason", "Message"], rows, "No problems: everything is accepted, resolved and programmed.")];
}

function renderTopology(v) {
  const colW = 230, boxW = 200, boxH = 34, gapY = 14, top = 30;
  const cols = {};
  for (const n of v.nodes) (cols[n.column] = cols[n.column] || []).push(n);
  const pos = {};
  let height = 0;
  for (const [c, ns] of Object.entries(cols)) {
    ns.forEach((n, i) => { pos[n.id] = { x: 10 + Number(c) * colW, y: top + i * (boxH + gapY) }; });
    height = Math.max(height, top + ns.length * (boxH + gapY));
  }
  const svg = svgEl("svg", { id: "topology", width: 10 + 5 * colW, height: Math.max(height, 80) });
  ["Proxies", "Gateways", "Listeners", "Routes", "Services"].forEach((t, i) => svg.append(svgEl("text", { x: 10 + i * colW, y: 16, class: "edge-label" }, t)));
  for (const e of v.edges) {
    const a = pos[e.from], b = pos[e.to];
    if (!a || !b) continue;
    const x1 = a.x + boxW, y1 = a.y + boxH / 2, x2 = b.x, y2 = b.y + boxH / 2, mx = (x1 + x2) / 2;
    svg.append(svgEl("path", { class: "edge", d: `M${x1},${y1} C${mx},${y1} ${mx},${y2} ${x2},${y2}`, "data-from": e.from, "data-to": e.to }));
    if (e.label) svg.append(svgEl("text", { class: "edge-label", x: mx - 15, y: (y1 + y2) / 2 - 3 }, e.label));
  }
  for (const n of v.nodes) {
    const p = pos[n.id];
    const g = svgEl("g", { class: "node" + (n.ok ? "" : " bad"), "data-id": n.id, transform: `translate(${p.x},${p.y})` });
    g.append(svgEl("title", {}, n.kind + " " + n.label + (n.detail ? "\n" + n.detail : "")));
    g.append(svgEl("rect", { width: boxW, height: boxH }));
    const kind = n.kind + (n.detail ? " · " + n.detail : "");
    g.append(svgEl("text", { x: 6, y: 12, class: "kind" }, kind.length > 44 ? kind.slice(0, 43) + "…" : kind));
    g.append(svgEl("text", { x: 6, y: 27 }, n.label.length > 32 ? n.label.slice(0, 31) + "…" : n.label));
    svg.append(g);
  }
  return v.nodes.length ? [svg] : [el("p", { class: "empty" }, "Nothing to draw yet.")];
}

const renderers = { fleet: renderFleet, routing: renderRouting, problems: renderProblems, topology: renderTopology };

function showLogin(message) {
  clearTimeout(timer);
  document.getElementById("view").hidden = true;
  document.getElementById("login").hidden = false;
  document.getElementById("logout").hidden = true;
  document.getElementById("login-error").textContent = message || "";
}

async function refresh() {
  clearTimeout(timer);
  const p = page();
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.dataset.page === p);
  if (!sessionStorage.getItem(tokenKey)) { showLogin(""); return; }
  try {
    const [v, problems] = await Promise.all([api(p === "routing" ? "routing" : p), api("problems")]);
    const view = document.getElementById("view");
    view.replaceChildren(...renderers[p](v).filter((x) => x));
    view.dataset.revision = v.revision;
    view.dataset.page = p;
    view.hidden = false;
    document.getElementById("login").hidden = true;
    document.getElementById("logout").hidden = false;
    document.getElementById("problem-count").textContent = problems.problems.length || "";
    document.getElementById("status").textContent = "revision " + v.revision + " · " + new Date().toLocaleTimeString();
  } catch (e) {
    if (e.auth) { sessionStorage.removeItem(tokenKey); showLogin(e.message); return; }
    document.getElementById("status").textContent = "error: " + e.message;
  }
  timer = setTimeout(refresh, 1000);
}

document.addEventListener("DOMContentLoaded", () => {
  document.getElementById("login-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    sessionStorage.setItem(tokenKey, document.getElementById("token").value.trim());
    document.getElementById("token").value = "";
    refresh();
  });
  document.getElementById("logout").addEventListener("click", () => { sessionStorage.removeItem(tokenKey); showLogin(""); });
  window.addEventListener("hashchange", refresh);
  refresh();
});
