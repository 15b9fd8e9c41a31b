// corral's web UI, the parts that change the cluster beyond a button: the namespace selector,
// running a job from its HCL (plan with its diff, then run), a job's stop / purge / start and
// group scaling, an allocation's restart and its file browser. Every action is a /v1 call with
// the visitor's token, so the API's ACL checks decide; a refusal is shown next to the control.
import { act, api, enc, h, jobPath, root } from "./ui.js";

const NS_KEY = "corral.namespace";
const $ = (id) => document.getElementById(id);

// ---- the namespace selector ----------------------------------------------------------------

// The namespace the lists show: the URL's ?namespace= first, then the visitor's last choice in
// this tab, else every namespace the token can read ("*").
export function chosenNamespace() {
  return new URLSearchParams(location.search).get("namespace") || sessionStorage.getItem(NS_KEY) || "*";
}

export async function namespaceSelector() {
  const select = $("ns-select");
  if (!select) return;
  let names = [];
  try {
    names = (await api("/v1/namespaces")).data.map((n) => n.Name);
  } catch {
    names = []; // a token that may not list namespaces still gets "All" and its own
  }
  const chosen = chosenNamespace();
  if (chosen !== "*" && !names.includes(chosen)) names.push(chosen);
  select.replaceChildren(h("option", { value: "*" }, "All namespaces"),
    ...names.sort().map((name) => h("option", { value: name }, name)));
  select.value = chosen;
  select.parentElement.hidden = false;
  select.addEventListener("change", () => {
    sessionStorage.setItem(NS_KEY, select.value);
    const url = new URL(location.href);
    if (select.value === "*") url.searchParams.delete("namespace");
    else url.searchParams.set("namespace", select.value);
    location.assign(url.toString());
  });
}

// ---- run a job from its HCL ---------------------------------------------------------------

// Nomad's order and wording of a group's DesiredTGUpdates, as `job plan` prints them.
const UPDATE_WORDS = [["Place", "create"], ["Stop", "destroy"], ["Migrate", "migrate"],
  ["InPlaceUpdate", "in-place update"], ["DestructiveUpdate", "create/destroy update"], ["Canary", "canary"],
  ["Ignore", "ignore"]];

const updateText = (u) => UPDATE_WORDS.filter(([key]) => u?.[key]).map(([key, word]) => `${u[key]} ${word}`).join(", ");

// Nomad's plan diff (Type, Name, Fields, Objects, TaskGroups, Tasks) as lines of text, each
// group with what the scheduler would do to it (the plan's DesiredTGUpdates).
export function planDiffLines(diff, desired = {}) {
  const lines = [];
  const sign = { Added: "+", Deleted: "-", Edited: "+/-", None: " " };
  const walk = (node, depth) => {
    const pad = "  ".repeat(depth);
    for (const f of node.Fields || []) {
      if (f.Type === "None") continue;
      const change = f.Type === "Edited" ? `"${f.Old}" => "${f.New}"` : f.Type === "Added" ? `"${f.New}"` : `"${f.Old}"`;
      lines.push([f.Type, `${pad}${sign[f.Type] || " "} ${f.Name}: ${change}`]);
    }
    for (const o of node.Objects || []) {
      if (o.Type === "None") continue;
      lines.push([o.Type, `${pad}${sign[o.Type] || " "} ${o.Name} {`]);
      walk(o, depth + 1);
      lines.push([o.Type, `${pad}  }`]);
    }
    for (const [kind, children] of [["Task Group", node.TaskGroups], ["Task", node.Tasks]]) {
      for (const c of children || []) {
        if (c.Type === "None" && !(kind === "Task Group" && updateText(desired[c.Name]))) continue;
        const updates = kind === "Task Group" ? updateText(desired[c.Name]) : "";
        lines.push([c.Type, `${pad}${sign[c.Type] || " "} ${kind}: "${c.Name}"${updates ? ` (${updates})` : ""}`]);
        walk(c, depth + 1);
      }
    }
  };
  if (diff) {
    lines.push([diff.Type, `${sign[diff.Type] || " "} Job: "${diff.ID}"`]);
    walk(diff, 1);
  }
  return lines;
}

function showPlan(plan) {
  const lines = planDiffLines(plan.Diff, plan.Annotations?.DesiredTGUpdates || {});
  $("plan-diff").replaceChildren(...(lines.length ? lines.map(([type, text]) => h("span",
    { class: type === "Added" ? "add" : type === "Deleted" ? "del" : "" }, `${text}\n`)) : ["No changes.\n"]));
  const failures = Object.entries(plan.FailedTGAllocs || {});
  $("plan-failures").replaceChildren(...failures.map(([group, m]) => h("li", {},
    `Task group "${group}" would fail to place ${1 + (m.CoalescedFailures || 0)} allocation(s).`)));
  const warnings = (plan.Warnings || "").trim();
  $("plan-warnings").textContent = warnings;
  $("plan-warnings").hidden = !warnings;
}

export async function runPage() {
  let planned = null;
  const note = $("run-result");
  const job = async () => {
    const text = $("run-spec").value.trim();
    if (text.startsWith("{")) {
      const parsed = JSON.parse(text);
      return parsed.Job || parsed;
    }
    return (await api("/v1/jobs/parse", { method: "POST", body: { JobHCL: text, Canonicalize: true } })).data;
  };
  const fail = (err) => {
    note.textContent = err.status === 403 ? `Permission denied: ${err.message}` : `Refused: ${err.message}`;
  };
  $("run-form").addEventListener("input", () => {
    planned = null;
    $("run-button").disabled = true;
  });
  $("plan-button").addEventListener("click", async () => {
    note.textContent = "Planning…";
    try {
      const spec = await job();
      const ns = spec.Namespace || (chosenNamespace() === "*" ? "default" : chosenNamespace());
      spec.Namespace = ns;
      const plan = (await api(`/v1/job/${enc(spec.ID)}/plan?namespace=${enc(ns)}`, { method: "POST",
        body: { Job: spec, Diff: true } })).data;
      planned = { spec, index: plan.JobModifyIndex };
      showPlan(plan);
      $("plan-section").hidden = false;
      $("run-button").disabled = false;
      note.textContent = "Planned. Review the changes, then run.";
    } catch (err) {
      if (err instanceof SyntaxError) note.textContent = `Refused: the JSON does not parse: ${err.message}`;
      else fail(err);
    }
  });
  $("run-button").addEventListener("click", async () => {
    if (!planned) return;
    const { spec, index } = planned;
    const answer = await act(`/v1/jobs?namespace=${enc(spec.Namespace)}`, { Job: spec, EnforceIndex: true,
      JobModifyIndex: index }, { method: "POST", note, needs: "job-submit" });
    if (answer) location.assign(`${root()}${jobPath(spec.ID, spec.Namespace)}`);
  });
  return async () => {};
}

// ---- a job's lifecycle and scaling -----------------------------------------------------------

export function jobActions(job, summary, apiJob) {
  const ns = `namespace=${enc(job.Namespace)}`;
  const note = $("job-action-result");
  const stopped = job.Stop === true;
  const confirmText = (what) => `${what} job "${job.ID}" in namespace ${job.Namespace}?`;
  const buttons = [
    !stopped && h("button", { type: "button", class: "danger", "data-needs": "job-submit", onclick: () => {
      if (confirm(confirmText("Stop"))) act(`${apiJob}?${ns}`, undefined, { method: "DELETE", note, needs: "job-submit" });
    } }, "Stop job"),
    stopped && h("button", { type: "button", "data-needs": "job-submit", onclick: async () => {
      // Nomad's `job start`: the latest version submitted again with Stop cleared.
      const spec = { ...(await api(`${apiJob}?${ns}`)).data, Stop: false };
      act(`/v1/jobs?${ns}`, { Job: spec }, { method: "POST", note, needs: "job-submit" });
    } }, "Start job"),
    h("button", { type: "button", class: "danger", "data-needs": "job-submit", onclick: async () => {
      if (!confirm(`${confirmText("Purge")} This removes it and its history.`)) return;
      const done = await act(`${apiJob}?${ns}&purge=true`, undefined, { method: "DELETE", note, needs: "job-submit" });
      if (done) location.assign(`${root()}/jobs`);
    } }, "Purge job"),
  ];
  $("job-actions").replaceChildren(...buttons.filter(Boolean));
  const scalable = job.Type === "service" || job.Type === "batch";
  $("scale-section").hidden = !scalable;
  if (!scalable) return;
  const rows = (job.TaskGroups || []).map((g) => {
    const input = h("input", { type: "number", min: 0, value: g.Count, "aria-label": `Count of group ${g.Name}` });
    const running = summary.Summary?.[g.Name]?.Running || 0;
    const button = h("button", { type: "button", class: "secondary", "data-needs": "job-scale", onclick: () =>
      act(`${apiJob}/scale?${ns}`, { Count: Number(input.value), Target: { Group: g.Name },
        Message: "scaled from the web UI" }, { method: "POST", note: $("scale-result"), needs: "job-scale" }) }, "Scale");
    return h("tr", {}, h("td", {}, g.Name), h("td", {}, String(running)), h("td", {}, input), h("td", {}, button));
  });
  const body = $("scale-groups").tBodies[0];
  // Rebuilt only when the groups or their counts change: a live refresh keeps what is typed.
  const key = (job.TaskGroups || []).map((g) => `${g.Name}=${g.Count}`).join();
  if (body.dataset.key !== key) {
    body.replaceChildren(...rows);
    body.dataset.key = key;
  }
}

// ---- an allocation's restart and files --------------------------------------------------------

export function allocRestart(a) {
  const note = $("alloc-action-result");
  const live = a.ClientStatus === "running";
  $("alloc-actions").replaceChildren(...(live ? [h("button", { type: "button", class: "secondary",
    "data-needs": "alloc-lifecycle", onclick: () => act(`/v1/client/allocation/${a.ID}/restart`, {},
      { method: "POST", note, needs: "alloc-lifecycle" }) }, "Restart all tasks")] : []));
}

const sizeText = (n) => (n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} KiB` : `${(n / 1048576).toFixed(1)} MiB`);
const FILE_SHOWN = 64 * 1024;

export function fileBrowser(allocId) {
  let where = "/";
  const open = async (path) => {
    where = path;
    $("files-path").textContent = path;
    $("file-view").textContent = "";
    $("file-view").hidden = true;
    const parent = path === "/" ? null : path.replace(/[^/]+\/?$/, "") || "/";
    try {
      const { data } = await api(`/v1/client/fs/ls/${allocId}?path=${enc(path)}`);
      const entries = [...data].sort((x, y) => Number(y.IsDir) - Number(x.IsDir) || x.Name.localeCompare(y.Name));
      const rows = entries.map((e) => {
        const full = `${path.replace(/\/$/, "")}/${e.Name}`;
        const name = h("button", { type: "button", class: "linkish", onclick: () => (e.IsDir ? open(`${full}/`) : show(full)) },
          e.IsDir ? `${e.Name}/` : e.Name);
        return h("tr", {}, h("td", {}, name), h("td", {}, e.IsDir ? "—" : sizeText(e.Size)), h("td", {}, e.FileMode || ""));
      });
      if (parent) rows.unshift(h("tr", {}, h("td", {}, h("button", { type: "button", class: "linkish",
        onclick: () => open(parent) }, "../")), h("td", {}), h("td", {})));
      $("files").tBodies[0].replaceChildren(...rows);
      $("files-error").hidden = true;
    } catch (err) {
      $("files-error").textContent = err.status === 403 ? `Permission denied: ${err.message}` : err.message;
      $("files-error").hidden = false;
    }
  };
  const show = async (path) => {
    try {
      const { data } = await api(`/v1/client/fs/readat/${allocId}?path=${enc(path)}&offset=0&limit=${FILE_SHOWN}`,
        { text: true });
      $("file-view").textContent = data;
      $("file-view").setAttribute("aria-label", `Contents of ${path}`);
      $("file-view").hidden = false;
    } catch (err) {
      $("files-error").textContent = err.message;
      $("files-error").hidden = false;
    }
  };
  return { open: () => open(where), path: () => where };
}

