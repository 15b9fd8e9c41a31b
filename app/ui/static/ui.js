// corral's web UI, the shared part: the token, calls to the /v1 API, live updates and small DOM
// helpers. Plain ES module, no build step, nothing fetched from elsewhere.

const TOKEN_KEY = "corral.token";
const HIDDEN_KEY = "corral.denied"; // control groups a 403 showed this token cannot use
const WAIT = "60s"; // one blocking query per page waits this long before asking again
const MIN_REFRESH_MS = 1000; // a busy cluster refreshes a page at most once a second

export class ApiError extends Error {
  constructor(status, message, path, body = "") {
    super(message);
    this.status = status;
    this.path = path;
    this.body = body; // the answer as sent: a 409 of check-and-set carries the current object
  }
}

export const token = () => sessionStorage.getItem(TOKEN_KEY) || "";

function problemText(text) {
  try {
    const body = JSON.parse(text);
    return body.detail || body.title || text;
  } catch {
    return text.trim() || "no answer";
  }
}

// One /v1 call with the visitor's token. Answers {data, index}; throws ApiError on a non-2xx.
export async function api(path, { method = "GET", body, text = false } = {}) {
  const headers = {};
  const secret = token();
  if (secret) headers["X-Nomad-Token"] = secret;
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  const raw = await resp.text();
  if (!resp.ok) throw new ApiError(resp.status, problemText(raw), path, raw);
  const index = Number(resp.headers.get("X-Nomad-Index") || 0);
  return { data: text ? raw : raw ? JSON.parse(raw) : null, index };
}

// A write from a button or form: answers the body, or shows the refusal next to the control and
// answers null. A 403 hides every control of that kind for the rest of the session.
export async function act(path, body, { method = "PUT", note, needs } = {}) {
  try {
    const { data } = await api(path, { method, body });
    if (note) note.textContent = "Done.";
    return data ?? {};
  } catch (err) {
    if (note) note.textContent = err.status === 403 ? `Permission denied: ${err.message}` : `Refused: ${err.message}`;
    if (err.status === 403 && needs) deny(needs);
    return null;
  }
}

function denied() {
  try {
    return new Set(JSON.parse(sessionStorage.getItem(HIDDEN_KEY) || "[]"));
  } catch {
    return new Set();
  }
}

export function deny(needs) {
  const set = denied();
  set.add(needs);
  sessionStorage.setItem(HIDDEN_KEY, JSON.stringify([...set]));
  applyDenied();
}

export function applyDenied() {
  const set = denied();
  for (const el of document.querySelectorAll("[data-needs]")) {
    if (set.has(el.dataset.needs)) el.hidden = true;
  }
}

// `corral ui -authenticate` opens a page with ?ott=<one-time secret> (Nomad's parameter): trade
// it for the token it stands for and keep that for the tab, as a token typed into the prompt is.
// The secret leaves the address bar first (it is spent either way). Answers the refusal, or "".
async function exchangeOneTimeToken() {
  const url = new URL(location.href);
  const secret = url.searchParams.get("ott");
  if (!secret) return "";
  url.searchParams.delete("ott");
  history.replaceState(history.state, "", url);
  // Sent without the tab's current token: the one-time secret alone says who the visitor is.
  const resp = await fetch("/v1/acl/token/onetime/exchange", {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ OneTimeSecretID: secret }),
  });
  const raw = await resp.text();
  if (!resp.ok) return `That one-time token was refused: ${problemText(raw)}`;
  sessionStorage.setItem(TOKEN_KEY, JSON.parse(raw).Token.SecretID);
  sessionStorage.removeItem(HIDDEN_KEY);
  return "";
}

// What the API says of the visitor: {acl: false} with ACLs off, {acl: true, token} with a
// valid token, or null when a token is needed (the prompt is then shown instead of the page).
export async function session() {
  const refused = await exchangeOneTimeToken();
  if (refused) {
    askForToken(refused);
    return null;
  }
  try {
    const { data } = await api("/v1/acl/token/self");
    document.getElementById("token-button").hidden = false;
    if (data.Type === "management") sessionStorage.removeItem(HIDDEN_KEY);
    return { acl: true, token: data };
  } catch (err) {
    if (err.status === 400 && /ACL support disabled/i.test(err.message)) return { acl: false };
    askForToken(token() ? `That token was refused: ${err.message}` : "");
    return null;
  }
}

export function askForToken(problem) {
  const form = document.getElementById("token-form");
  document.getElementById("content").hidden = true;
  form.hidden = false;
  const error = document.getElementById("token-error");
  error.hidden = !problem;
  error.textContent = problem;
  form.onsubmit = (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, document.getElementById("token-input").value.trim());
    sessionStorage.removeItem(HIDDEN_KEY);
    location.reload();
  };
  document.getElementById("token-input").focus();
}

export function wireTokenButton() {
  document.getElementById("token-button").onclick = () => {
    sessionStorage.removeItem(TOKEN_KEY);
    sessionStorage.removeItem(HIDDEN_KEY);
    askForToken("");
  };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function showError(err) {
  const box = document.getElementById("page-error");
  box.hidden = !err;
  box.textContent = err ? `${err.message}${err.path ? ` (${err.path})` : ""}` : "";
}

// Keeps a page current: one blocking query on the cluster's state index (GET /v1/status/leader
// ?index=N answers when anything commits after N); each change re-reads the page's data once.
export async function live(refresh) {
  const status = document.getElementById("live");
  const run = async () => {
    try {
      await refresh();
      showError(null);
    } catch (err) {
      if (err.status === 403 && !token()) return askForToken("");
      showError(err);
    }
  };
  let index = 0;
  try {
    index = (await api("/v1/status/leader")).index;
  } catch {
    index = 0;
  }
  await run();
  for (;;) {
    const began = Date.now();
    try {
      status.textContent = "live";
      const answer = await api(`/v1/status/leader?index=${index}&wait=${WAIT}`);
      if (answer.index !== index) {
        index = answer.index < index ? 0 : answer.index; // a restored database starts lower
        await sleep(Math.max(0, MIN_REFRESH_MS - (Date.now() - began)));
        await run();
        document.body.dataset.index = String(index);
      }
    } catch {
      status.textContent = "reconnecting…";
      await sleep(5000);
    }
  }
}

// ---- DOM --------------------------------------------------------------------------------

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    // Through CSSOM: the Content-Security-Policy (style-src 'self') refuses style attributes.
    else if (key === "style") el.style.cssText = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

export const root = () => document.body.dataset.root.replace(/\/$/, "");
// Eight characters name an allocation or node; evaluation IDs are time-ordered (UUIDv7), whose
// first eight characters are shared by everything created in the same minute.
export const short = (id) => (!id ? "" : String(id).slice(0, String(id)[14] === "7" ? 13 : 8));
export const link = (path, text) => h("a", { href: `${root()}${path}` }, text);
export const badge = (status) => h("span", { class: `badge s-${status}` }, status || "—");
export const enc = encodeURIComponent;

export function jobPath(job, namespace) {
  const ns = namespace && namespace !== "default" ? `?namespace=${enc(namespace)}` : "";
  return `/job/${job.split("/").map(enc).join("/")}${ns}`;
}

// Replaces a table body's rows; `rows` are arrays of cells (text or nodes).
export function fill(table, rows, empty) {
  const body = (typeof table === "string" ? document.getElementById(table) : table).tBodies[0];
  const columns = body.parentElement.tHead.rows[0].cells.length;
  const built = rows.map((cells) => h("tr", {}, cells.map((c) => h("td", {}, c))));
  if (!built.length) built.push(h("tr", {}, h("td", { colspan: columns, class: "empty" }, empty)));
  // A keyboard user tabbing through the rows keeps their place when the rows are rebuilt.
  const focused = body.contains(document.activeElement) ? document.activeElement.getAttribute("href") : null;
  body.replaceChildren(...built);
  if (focused) [...body.querySelectorAll("a")].find((a) => a.getAttribute("href") === focused)?.focus();
}

export function facts(id, pairs) {
  const dl = document.getElementById(id);
  dl.replaceChildren(...pairs.filter(([, v]) => v !== undefined).flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

export function cards(id, pairs) {
  const dl = document.getElementById(id);
  dl.replaceChildren(...pairs.map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, String(v)))));
}

export function countBy(items, key) {
  const counts = {};
  for (const item of items) counts[key(item)] = (counts[key(item)] || 0) + 1;
  return counts;
}

// Nomad times are nanoseconds since the epoch.
export function ago(nanos) {
  if (!nanos) return "—";
  const seconds = Math.round((Date.now() - nanos / 1e6) / 1000);
  const when = new Date(nanos / 1e6).toISOString().replace("T", " ").slice(0, 19) + " UTC";
  const text = seconds < 60 ? `${Math.max(seconds, 0)}s ago` : seconds < 3600 ? `${Math.round(seconds / 60)}m ago`
    : seconds < 86400 ? `${Math.round(seconds / 3600)}h ago` : `${Math.round(seconds / 86400)}d ago`;
  return h("time", { datetime: new Date(nanos / 1e6).toISOString(), title: when }, text);
}

// An absolute moment (nanoseconds), in UTC.
// Nanoseconds of a Go time.Time in JSON (RFC 3339); 0 for Go's zero time ("never").
export function timeNanos(text) {
  if (!text || text.startsWith("0001-01-01")) return 0;
  const millis = Date.parse(text);
  return Number.isNaN(millis) ? 0 : millis * 1e6;
}

export function when(nanos) {
  const date = new Date(nanos / 1e6);
  return h("time", { datetime: date.toISOString() }, `${date.toISOString().replace("T", " ").slice(0, 19)} UTC`);
}

// A utilisation bar: used of total, labelled for screen readers.
export function bar(label, used, total, unit) {
  const share = total > 0 ? Math.min(1, used / total) : 0;
  const pct = Math.round(share * 100);
  return [
    h("span", {}, label),
    h("span", { class: share > 0.85 ? "bar high" : "bar", role: "meter", "aria-valuemin": 0, "aria-valuemax": total,
      "aria-valuenow": used, "aria-label": `${label} ${used} of ${total} ${unit}` },
    h("span", { style: `width:${pct}%` })),
    h("span", {}, `${used}/${total} ${unit}`),
  ];
}

// ---- placement failures in words --------------------------------------------------------

const nodes = (n) => `${n} node${n === 1 ? "" : "s"}`;

// Why a task group could not be placed, from an evaluation's FailedTGAllocs entry (AllocMetrics).
export function explainFailure(group, m) {
  const missing = 1 + (m.CoalescedFailures || 0);
  const reasons = [];
  if (!m.NodesEvaluated) reasons.push("no nodes were eligible for evaluation");
  for (const [dc, n] of Object.entries(m.NodesAvailable || {})) {
    if (!n) reasons.push(`no nodes are available in datacenter ${dc}`);
  }
  for (const [klass, n] of Object.entries(m.ClassFiltered || {})) reasons.push(`${nodes(n)} filtered by class ${klass}`);
  for (const [c, n] of Object.entries(m.ConstraintFiltered || {})) reasons.push(`${nodes(n)} filtered by constraint ${c}`);
  const dimensions = Object.entries(m.DimensionExhausted || {});
  for (const [dimension, n] of dimensions) reasons.push(`${n} exhausted on ${dimension}`);
  if (m.NodesExhausted && !dimensions.length) reasons.push(`${nodes(m.NodesExhausted)} exhausted`);
  for (const [klass, n] of Object.entries(m.ClassExhausted || {})) reasons.push(`class ${klass} exhausted on ${nodes(n)}`);
  for (const quota of m.QuotaExhausted || []) reasons.push(`quota limit reached on ${quota}`);
  if (!reasons.length) reasons.push("no reason recorded");
  const count = `${missing} allocation${missing === 1 ? "" : "s"}`;
  const pool = nodes(m.NodesInPool ?? m.NodesEvaluated);
  const evaluated = m.NodesEvaluated ? ` (${m.NodesEvaluated} of ${pool} in the pool evaluated)` : "";
  return `Task group "${group}" could not place ${count}: ${reasons.join(", ")}${evaluated}.`;
}

export function failureLines(evaluation) {
  return Object.entries(evaluation.FailedTGAllocs || {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([group, metric]) => explainFailure(group, metric));
}

// ---- versions diff -----------------------------------------------------------------------

function flatten(value, prefix, out) {
  if (value && typeof value === "object") {
    const entries = Array.isArray(value) ? value.map((v, i) => [`[${i}]`, v])
      : Object.entries(value).map(([k, v]) => [`.${k}`, v]);
    if (!entries.length) out.set(prefix || ".", JSON.stringify(value));
    for (const [key, child] of entries) flatten(child, `${prefix}${key}`, out);
  } else {
    out.set(prefix || ".", JSON.stringify(value));
  }
  return out;
}

// Lines of a diff between two job specs: "- path: old" and "+ path: new", bookkeeping left out.
export function specDiff(older, newer) {
  const skip = /^\.(Version|ModifyIndex|JobModifyIndex|CreateIndex|SubmitTime|Stable|Status|StatusDescription)$/;
  const a = flatten(older, "", new Map());
  const b = flatten(newer, "", new Map());
  const lines = [];
  for (const key of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    if (skip.test(key) || a.get(key) === b.get(key)) continue;
    if (a.has(key)) lines.push(["del", `- ${key}: ${a.get(key)}`]);
    if (b.has(key)) lines.push(["add", `+ ${key}: ${b.get(key)}`]);
  }
  return lines;
}
