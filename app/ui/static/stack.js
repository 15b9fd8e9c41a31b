// corral's web UI, Nomad's native service stack: the Variables pages (list by prefix and
// namespace, view, create, edit with check-and-set, delete) and the Services pages (the catalog,
// a service's instances with their checks). Every call is a /v1 call with the visitor's token:
// the API's ACL checks decide, and a refusal is shown in words, never as a script error.
import { ago, api, deny, enc, fill, facts, h, jobPath, link, root, short } from "./ui.js";
import { chosenNamespace } from "./actions.js";

const $ = (id) => document.getElementById(id);
const params = () => new URLSearchParams(location.search);
const pageNamespace = () => params().get("namespace") || (chosenNamespace() === "*" ? "default" : chosenNamespace());

export function variablePath(path, namespace) {
  const ns = namespace && namespace !== "default" ? `?namespace=${enc(namespace)}` : "";
  return `/variable/${path.split("/").map(enc).join("/")}${ns}`;
}

const apiVar = (path, namespace) => `/v1/var/${path.split("/").map(enc).join("/")}?namespace=${enc(namespace)}`;

function refusal(box, err, what) {
  box.textContent = err.status === 403 ? `Permission denied: this token may not ${what}.` : `${err.message}`;
  box.hidden = false;
}

// ---- the variables list ------------------------------------------------------------------------

export async function variablesPage() {
  const prefix = $("var-prefix");
  prefix.value = params().get("prefix") || "";
  $("var-filters").addEventListener("submit", (e) => e.preventDefault());
  const refresh = async () => {
    const ns = chosenNamespace();
    const box = $("vars-denied");
    let list = [];
    try {
      list = (await api(`/v1/vars?namespace=${enc(ns)}&prefix=${enc(prefix.value.trim())}`)).data;
      box.hidden = true;
    } catch (err) {
      if (err.status !== 403) throw err;
      refusal(box, err, `list variables in namespace ${ns === "*" ? "any namespace" : ns}`);
    }
    fill("variables", list.map((v) => [link(variablePath(v.Path, v.Namespace), v.Path), v.Namespace,
      String(v.ModifyIndex), ago(v.ModifyTime)]), prefix.value ? "No variable has that prefix." : "No variables.");
  };
  prefix.addEventListener("input", () => refresh().catch(() => {}));
  return refresh;
}

// ---- one variable: view, create, edit with check-and-set, delete --------------------------------

function itemRow(key = "", value = "") {
  const row = h("tr", {},
    h("td", {}, h("input", { class: "item-key", value: key, "aria-label": "Key", spellcheck: "false", autocomplete: "off" })),
    h("td", {}, h("textarea", { class: "item-value", rows: 1, "aria-label": `Value of ${key || "the new item"}`,
      spellcheck: "false" }, value)),
    h("td", {}, h("button", { type: "button", class: "linkish", onclick: () => row.remove() }, "Remove")));
  return row;
}

function formItems() {
  const items = {};
  for (const row of $("var-items").tBodies[0].rows) {
    const key = row.querySelector(".item-key").value.trim();
    if (key) items[key] = row.querySelector(".item-value").value;
  }
  return items;
}

function showItems(items) {
  const rows = Object.entries(items || {}).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => itemRow(k, v));
  $("var-items").tBodies[0].replaceChildren(...(rows.length ? rows : [itemRow()]));
}

export async function variablePage() {
  const creating = document.body.dataset.page === "variable_new";
  const note = $("var-result");
  let path = creating ? "" : document.body.dataset.id;
  let ns = pageNamespace();
  let loaded = null; // the variable as last read: its ModifyIndex is the check-and-set index
  let dirty = false;
  $("var-path-label").hidden = !creating;
  $("var-ns-label").hidden = !creating;
  $("var-ns-input").value = ns;
  $("var-delete").hidden = creating;
  $("var-delete").disabled = true; // until the variable (and its check-and-set index) is loaded
  $("var-form").addEventListener("input", () => { dirty = true; });
  $("var-add").addEventListener("click", () => {
    $("var-items").tBodies[0].append(itemRow());
    dirty = true;
  });
  const conflict = (current) => {
    const items = current.Items ? JSON.stringify(current.Items, null, 2) : "(not readable with this token)";
    $("var-conflict-text").textContent = current.ModifyIndex
      ? `The variable changed after you loaded it (you had modify index ${loaded?.ModifyIndex ?? 0}; it is now at `
        + `${current.ModifyIndex}). Your change was not written. Its current items:`
      : "The variable was deleted (or created) by someone else meanwhile. Your change was not written.";
    $("var-conflict-items").textContent = current.ModifyIndex ? items : "";
    $("var-conflict").hidden = false;
    note.textContent = "Refused: check-and-set conflict.";
  };
  const failed = (err, what, needs) => {
    if (err.status === 409) {
      try {
        conflict(JSON.parse(err.body));
      } catch {
        note.textContent = `Refused: ${err.message}`;
      }
      return;
    }
    note.textContent = err.status === 403 ? `Permission denied: this token may not ${what}.` : `Refused: ${err.message}`;
    if (err.status === 403) deny(needs);
  };
  $("var-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (creating) {
      path = $("var-path-input").value.trim().replace(/^\/+|\/+$/g, "");
      ns = $("var-ns-input").value.trim() || "default";
      if (!path) {
        note.textContent = "Refused: a variable needs a path.";
        return;
      }
    }
    const cas = loaded ? loaded.ModifyIndex : 0; // 0: only if it does not exist yet
    try {
      const { data } = await api(`${apiVar(path, ns)}&cas=${cas}`, { method: "PUT",
        body: { Namespace: ns, Path: path, Items: formItems() } });
      $("var-conflict").hidden = true;
      dirty = false;
      if (creating) {
        location.assign(`${root()}${variablePath(path, ns)}`);
        return;
      }
      loaded = data;
      note.textContent = `Saved (modify index ${data.ModifyIndex}).`;
      render(data);
    } catch (err) {
      failed(err, `write variable ${path}`, "var-write");
    }
  });
  $("var-delete").addEventListener("click", async () => {
    if (!loaded || !confirm(`Delete variable "${path}" in namespace ${ns}?`)) return;
    try {
      await api(`${apiVar(path, ns)}&cas=${loaded.ModifyIndex}`, { method: "DELETE" });
      location.assign(`${root()}/variables`);
    } catch (err) {
      failed(err, `delete variable ${path}`, "var-destroy");
    }
  });
  $("var-reload").addEventListener("click", async () => {
    dirty = false;
    loaded = null;
    $("var-conflict").hidden = true;
    note.textContent = "";
    await refresh();
  });
  const render = (v) => {
    facts("var-facts", [["Namespace", v.Namespace], ["Path", h("span", { class: "mono" }, v.Path)],
      ["Create index", String(v.CreateIndex)], ["Modify index", String(v.ModifyIndex)], ["Modified", ago(v.ModifyTime)],
      ["Lock", v.Lock ? `held (TTL ${v.Lock.TTL})` : undefined]]);
  };
  const refresh = async () => {
    if (creating) {
      if (!$("var-items").tBodies[0].rows.length) showItems({});
      return;
    }
    try {
      const { data } = await api(apiVar(path, ns));
      $("var-denied").hidden = true;
      $("var-form").hidden = false;
      render(data);
      // A live refresh never overwrites what the visitor is typing: check-and-set catches a
      // change made meanwhile when they save.
      if (!dirty && (!loaded || loaded.ModifyIndex !== data.ModifyIndex)) {
        loaded = data;
        showItems(data.Items);
      }
      $("var-delete").disabled = false;
    } catch (err) {
      if (err.status !== 403 && err.status !== 404) throw err;
      $("var-form").hidden = true;
      refusal($("var-denied"), err, `read variable ${path} in namespace ${ns}`);
      if (err.status === 404) $("var-denied").textContent = `No variable ${path} in namespace ${ns}.`;
    }
  };
  return refresh;
}

// ---- services -----------------------------------------------------------------------------------

const servicePath = (name, namespace) => `/service/${enc(name)}?namespace=${enc(namespace)}`;

export async function servicesPage() {
  let rows = [];
  const render = () => {
    const q = $("service-search").value.trim().toLowerCase();
    const shown = rows.filter((r) => !q || r.name.toLowerCase().includes(q) || r.tags.some((t) => t.toLowerCase().includes(q)));
    fill("services", shown.map((r) => [link(servicePath(r.name, r.namespace), r.name), r.namespace, r.tags.join(", ") || "—"]),
      rows.length ? "No service matches." : "No services are registered.");
  };
  $("service-search").addEventListener("input", render);
  $("service-filters").addEventListener("submit", (e) => e.preventDefault());
  return async () => {
    const ns = chosenNamespace();
    try {
      const { data } = await api(`/v1/services?namespace=${enc(ns)}`);
      rows = data.flatMap((space) => space.Services.map((s) => ({ name: s.ServiceName, namespace: space.Namespace,
        tags: s.Tags || [] })));
      $("services-denied").hidden = true;
    } catch (err) {
      if (err.status !== 403) throw err;
      rows = [];
      refusal($("services-denied"), err, `read services in namespace ${ns === "*" ? "any namespace" : ns}`);
    }
    render();
  };
}

// The checks of one service on one allocation, as the client reports them; null when the
// client cannot be asked (a token without read-job there, the node unreachable).
async function checksOf(allocId, service) {
  try {
    const { data } = await api(`/v1/client/allocation/${enc(allocId)}/checks`);
    return Object.values(data || {}).filter((c) => c.Service === service);
  } catch {
    return null;
  }
}

function checksCell(results) {
  if (results === null) return h("span", { class: "muted" }, "unavailable");
  if (!results.length) return h("span", { class: "muted" }, "no checks");
  return results.map((c) => h("span", { class: `badge s-${c.Status === "success" ? "running" : "failed"}`,
    title: c.Output || "" }, `${c.Check}: ${c.Status}`));
}

export async function servicePage() {
  const name = document.body.dataset.id;
  const ns = pageNamespace();
  return async () => {
    let instances = [];
    try {
      instances = (await api(`/v1/service/${enc(name)}?namespace=${enc(ns)}`)).data;
      $("service-denied").hidden = true;
    } catch (err) {
      if (err.status !== 403) throw err;
      refusal($("service-denied"), err, `read services in namespace ${ns}`);
    }
    const checks = await Promise.all(instances.map((i) => checksOf(i.AllocID, i.ServiceName)));
    const passing = checks.filter((c) => c && c.length && c.every((r) => r.Status === "success")).length;
    const cards = $("service-counts");
    cards.replaceChildren(...[["Instances", instances.length], ["Checks passing", passing]]
      .map(([k, v]) => h("div", {}, h("dt", {}, k), h("dd", {}, String(v)))));
    fill("instances", instances.map((i, n) => [i.Address, String(i.Port), (i.Tags || []).join(", ") || "—",
      link(`/allocation/${i.AllocID}`, short(i.AllocID)), link(jobPath(i.JobID, i.Namespace), i.JobID),
      link(`/node/${i.NodeID}`, short(i.NodeID)), checksCell(checks[n])]), `No instance of ${name} in namespace ${ns}.`);
  };
}
