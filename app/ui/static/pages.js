// corral's web UI, one renderer per page. Each reads the /v1 API (with the visitor's token) and
// fills the shell the server rendered; live() re-runs it whenever the cluster's state changes.
import {
  act, ago, api, applyDenied, badge, bar, cards, countBy, enc, facts, failureLines, fill, h, jobPath, link, live,
  session, short, specDiff, timeNanos, when, wireTokenButton,
} from "./ui.js";
import { allocRestart, chosenNamespace, fileBrowser, jobActions, namespaceSelector, runPage } from "./actions.js";
import { servicePage, servicesPage, variablePage, variablesPage } from "./stack.js";
import { execTerminal } from "./terminal.js";

const $ = (id) => document.getElementById(id);
const objectId = () => document.body.dataset.id;
const params = new URLSearchParams(location.search);
const namespace = params.get("namespace") || "default";
const nsArg = `namespace=${enc(namespace)}`;
const apiJob = () => `/v1/job/${enc(objectId())}`;
const LIVE_ALLOC = 'ClientStatus == "pending" or ClientStatus == "running"';

function restarts(alloc) {
  return Object.values(alloc.TaskStates || {}).reduce((sum, task) => sum + (task.Restarts || 0), 0);
}

// ---- jobs ----------------------------------------------------------------------------------

let jobs = [];

function jobRows() {
  const q = $("job-search").value.trim().toLowerCase();
  const status = $("job-status").value;
  const type = $("job-type").value;
  return jobs
    .filter((j) => (!q || j.ID.toLowerCase().includes(q) || j.Name.toLowerCase().includes(q))
      && (!status || j.Status === status) && (!type || j.Type === type))
    .map((j) => {
      const groups = Object.entries(j.JobSummary?.Summary || {});
      const sum = (field) => groups.reduce((n, [, s]) => n + (s[field] || 0), 0);
      return [
        link(jobPath(j.ID, j.Namespace), j.ID), j.Namespace, badge(j.Status), j.Type, String(j.Priority),
        String(groups.length),
        `${sum("Running")} running, ${sum("Starting")} starting, ${sum("Queued")} queued, ${sum("Failed")} failed`,
      ];
    });
}

function renderJobs() {
  fill("jobs", jobRows(), jobs.length ? "No job matches the filter." : "No jobs yet.");
}

async function jobsPage() {
  for (const id of ["job-search", "job-status", "job-type"]) $(id).addEventListener("input", renderJobs);
  $("job-filters").addEventListener("submit", (e) => e.preventDefault());
  return async () => {
    jobs = (await api(`/v1/jobs?namespace=${enc(chosenNamespace())}`)).data;
    const by = countBy(jobs, (j) => j.Status);
    cards("job-counts", [["Jobs", jobs.length], ["Running", by.running || 0], ["Pending", by.pending || 0],
      ["Dead", by.dead || 0]]);
    renderJobs();
  };
}

// ---- one job -------------------------------------------------------------------------------

let versions = [];

function renderDiff() {
  const find = (v) => versions.find((spec) => String(spec.Version) === v);
  const older = find($("diff-a").value);
  const newer = find($("diff-b").value);
  if (!older || !newer) return;
  const lines = specDiff(older, newer);
  $("diff").replaceChildren(...(lines.length ? lines.map(([kind, text]) => h("span", { class: kind }, `${text}\n`))
    : [`Versions ${older.Version} and ${newer.Version} are the same.`]));
}

function renderVersions(list) {
  const known = versions.map((v) => v.Version).join();
  versions = list;
  if (known === list.map((v) => v.Version).join()) return; // keep the visitor's choice
  const options = () => list.map((v) => h("option", { value: v.Version }, `v${v.Version}${v.Stable ? " (stable)" : ""}`));
  $("diff-a").replaceChildren(...options());
  $("diff-b").replaceChildren(...options());
  if (list.length > 1) $("diff-a").value = String(list[1].Version);
  $("versions").replaceChildren(...list.map((v) => h("li", {}, `Version ${v.Version}`, v.Stable ? " · stable" : "",
    " · submitted ", ago(v.SubmitTime))));
}

function deploymentButtons(d, note) {
  const path = (verb) => `/v1/deployment/${verb}/${d.ID}`;
  const groups = Object.values(d.TaskGroups || {});
  const canPromote = groups.some((g) => g.DesiredCanaries > 0 && !g.Promoted);
  const active = d.Status === "running" || d.Status === "paused";
  const button = (label, verb, body, kind) => h("button", { type: "button", class: kind, "data-needs": "job-submit",
    onclick: () => act(path(verb), body, { note, needs: "job-submit" }) }, label);
  return [
    active && canPromote && button("Promote canaries", "promote", { DeploymentID: d.ID, All: true }),
    d.Status === "running" && button("Pause", "pause", { DeploymentID: d.ID, Pause: true }, "secondary"),
    d.Status === "paused" && button("Resume", "pause", { DeploymentID: d.ID, Pause: false }, "secondary"),
    active && button("Fail", "fail", { DeploymentID: d.ID }, "danger"),
  ];
}

function renderDeployment(d) {
  const note = h("p", { class: "note", role: "status" });
  const rows = Object.entries(d.TaskGroups || {}).map(([name, g]) => h("tr", {},
    h("td", {}, name), h("td", {}, String(g.DesiredTotal)),
    h("td", {}, `${(g.PlacedCanaries || []).length}/${g.DesiredCanaries}`), h("td", {}, String(g.PlacedAllocs)),
    h("td", {}, String(g.HealthyAllocs)), h("td", {}, String(g.UnhealthyAllocs)), h("td", {}, g.Promoted ? "yes" : "no")));
  return h("article", { class: "deployment", "aria-label": `Deployment ${short(d.ID)}` },
    h("p", {}, h("span", { class: "mono" }, short(d.ID)), " ", badge(d.Status), ` version ${d.JobVersion} · `,
      d.StatusDescription),
    h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, ["Group", "Desired", "Canaries", "Placed", "Healthy", "Unhealthy", "Promoted"]
        .map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows))),
    h("div", { class: "buttons" }, deploymentButtons(d, note)), note);
}

function renderFailures(evals) {
  const blocked = evals.some((e) => e.Status === "blocked");
  const latest = evals.find((e) => Object.keys(e.FailedTGAllocs || {}).length);
  const lines = blocked && latest ? failureLines(latest) : [];
  $("failures-section").hidden = !lines.length;
  $("failures").replaceChildren(...lines.map((line) => h("li", {}, line, " ", link(`/evaluation/${latest.ID}`,
    `(evaluation ${short(latest.ID)})`))));
}

async function jobPage() {
  $("diff-form").addEventListener("submit", (e) => {
    e.preventDefault();
    renderDiff();
  });
  return async () => {
    const [job, summary, allocs, evals, deployments, vs] = await Promise.all([
      api(`${apiJob()}?${nsArg}`), api(`${apiJob()}/summary?${nsArg}`), api(`${apiJob()}/allocations?${nsArg}`),
      api(`${apiJob()}/evaluations?${nsArg}`), api(`${apiJob()}/deployments?${nsArg}`),
      api(`${apiJob()}/versions?${nsArg}`),
    ].map((p) => p.then((r) => r.data)));
    $("job-status").replaceWith(Object.assign(badge(job.Status), { id: "job-status" }));
    facts("job-facts", [["Namespace", job.Namespace], ["Type", job.Type], ["Priority", String(job.Priority)],
      ["Version", String(job.Version)], ["Datacenters", (job.Datacenters || []).join(", ")],
      ["Node pool", job.NodePool], ["Submitted", ago(job.SubmitTime)]]);
    fill("groups", (job.TaskGroups || []).map((g) => {
      const s = summary.Summary?.[g.Name] || {};
      return [g.Name, String(g.Count), ...["Queued", "Starting", "Running", "Complete", "Failed", "Lost"]
        .map((k) => String(s[k] || 0))];
    }), "No task groups.");
    allocs.sort((a, b) => b.CreateIndex - a.CreateIndex);
    fill("allocations", allocs.map((a) => [link(`/allocation/${a.ID}`, short(a.ID)), a.TaskGroup,
      link(`/node/${a.NodeID}`, a.NodeName || short(a.NodeID)), badge(a.ClientStatus), a.DesiredStatus,
      String(a.JobVersion), String(restarts(a)), ago(a.ModifyTime)]), "No allocations yet.");
    evals.sort((a, b) => b.CreateIndex - a.CreateIndex);
    fill("evaluations", evals.map((e) => [link(`/evaluation/${e.ID}`, short(e.ID)), e.TriggeredBy, badge(e.Status),
      [e.StatusDescription, ...failureLines(e)].filter(Boolean).join(" "), ago(e.CreateTime)]), "No evaluations.");
    renderFailures(evals);
    $("deployments").replaceChildren(...(deployments.length ? deployments.slice(0, 3).map(renderDeployment)
      : [h("p", { class: "muted" }, "No deployments.")]));
    renderVersions(vs.Versions || []);
    jobActions(job, summary, apiJob());
    applyDenied();
  };
}

// ---- one allocation --------------------------------------------------------------------------

const LOG_KEEP = 256 * 1024;
let logOffset = 0;
let logKey = "";

async function tailLog() {
  const task = $("log-task").value;
  const type = $("log-type").value;
  if (!task) return;
  const key = `${task}/${type}`;
  if (key !== logKey) {
    logKey = key;
    logOffset = 0;
    $("log").textContent = "";
  }
  const path = `/v1/client/fs/logs/${objectId()}?task=${enc(task)}&type=${type}&origin=start&offset=${logOffset}&plain=true`;
  const { data } = await api(path, { text: true });
  if (key !== logKey || !data) return;
  logOffset += new TextEncoder().encode(data).length;
  const pre = $("log");
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  pre.append(data);
  // The page keeps the last LOG_KEEP characters: a chatty task must not grow the page without end.
  if (pre.textContent.length > LOG_KEEP) pre.textContent = pre.textContent.slice(-LOG_KEEP);
  if (atEnd) pre.scrollTop = pre.scrollHeight;
}

// The log route cannot follow (it answers what the file holds now), so a followed log is read
// again from where it stopped every two seconds while this page is open and visible.
async function followLogs() {
  for (;;) {
    if (!document.hidden && ($("log-follow").checked || logOffset === 0)) {
      try {
        await tailLog();
      } catch (err) {
        $("log").dataset.error = err.message;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 2000));
  }
}

function renderTask(name, state) {
  const events = (state.Events || []).slice().reverse();
  return h("article", { class: "task", "aria-label": `Task ${name}` },
    h("h3", {}, name, " ", badge(state.State)),
    h("p", {}, `Restarts: ${state.Restarts || 0}`, state.Failed ? " · failed" : "", " · started ", ago(timeNanos(state.StartedAt)),
      timeNanos(state.FinishedAt) ? [" · finished ", ago(timeNanos(state.FinishedAt))] : ""),
    h("div", { class: "scroll" }, h("table", {},
      h("thead", {}, h("tr", {}, ["Time", "Type", "Message"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, events.map((e) => h("tr", {}, h("td", {}, ago(e.Time)), h("td", {}, e.Type),
        h("td", {}, e.DisplayMessage || e.Message || "")))))));
}

// Three significant digits, as `alloc status -verbose` prints a score ("0.235", "1", "0").
const score = (value) => String(Number(Number(value || 0).toPrecision(3)));

function duration(nanos) {
  const ns = Number(nanos || 0);
  if (ns < 1e6) return `${(ns / 1e3).toFixed(1)} µs`;
  return ns < 1e9 ? `${(ns / 1e6).toFixed(1)} ms` : `${(ns / 1e9).toFixed(2)} s`;
}

const tally = (counts) => Object.entries(counts || {}).map(([what, n]) => `${what}: ${n}`).join(", ");

// How the scheduler chose the node (Nomad's placement metrics): the counts, then the best nodes'
// scores by scorer, as `alloc status -verbose` prints them.
function renderPlacement(m) {
  if (!m) {
    $("placement").replaceChildren(h("p", { class: "muted" }, "No placement metrics were recorded."));
    return;
  }
  const filtered = tally(m.ConstraintFiltered);
  const exhausted = tally(m.DimensionExhausted);
  const summary = h("dl", { class: "facts", id: "placement-facts" }, [
    ["Nodes evaluated", `${m.NodesEvaluated} of ${m.NodesInPool} in the pool`],
    ["Nodes filtered", `${m.NodesFiltered}${filtered ? ` (${filtered})` : ""}`],
    ["Nodes exhausted", `${m.NodesExhausted}${exhausted ? ` (${exhausted})` : ""}`],
    ["Allocation time", duration(m.AllocationTime)],
  ].flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
  const top = m.ScoreMetaData || [];
  const scorers = Object.keys(top[0]?.Scores || {}).sort();
  const table = !top.length ? h("p", { class: "muted" }, "No node was scored.")
    : h("div", { class: "scroll" }, h("table", { id: "placement-scores" }, h("caption", {}, "Best nodes by score"),
      h("thead", {}, h("tr", {}, ["Node", ...scorers, "Final score"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, top.map((s) => h("tr", {}, h("td", {}, link(`/node/${s.NodeID}`, short(s.NodeID))),
        scorers.map((n) => h("td", {}, score(s.Scores?.[n]))), h("td", {}, score(s.NormScore)))))));
  $("placement").replaceChildren(summary, table);
}

async function allocationPage() {
  let started = false;
  const files = fileBrowser(objectId());
  const terminal = execTerminal(objectId());
  $("log-task").addEventListener("change", () => tailLog().catch(() => {}));
  $("log-type").addEventListener("change", () => tailLog().catch(() => {}));
  return async () => {
    const a = (await api(`/v1/allocation/${enc(objectId())}`)).data;
    $("alloc-name").textContent = a.Name;
    $("alloc-status").replaceWith(Object.assign(badge(a.ClientStatus), { id: "alloc-status" }));
    const r = a.Resources || {};
    const note = h("span", { class: "note", role: "status" });
    facts("alloc-facts", [["ID", h("span", { class: "mono" }, a.ID)], ["Job", link(jobPath(a.JobID, a.Namespace), a.JobID)],
      ["Group", a.TaskGroup], ["Node", link(`/node/${a.NodeID}`, a.NodeName || short(a.NodeID))],
      ["Status", `${a.ClientStatus} — ${a.ClientDescription || ""}`],
      ["Desired", `${a.DesiredStatus} ${a.DesiredDescription || ""}`], ["Restarts", String(restarts(a))],
      ["Resources", `${r.CPU ?? "?"} MHz CPU, ${r.MemoryMB ?? "?"} MB memory, ${r.DiskMB ?? "?"} MB disk`],
      ["Evaluation", link(`/evaluation/${a.EvalID}`, short(a.EvalID))], ["Version", String(a.Job ? a.Job.Version : a.JobVersion)],
      ["Created", ago(a.CreateTime)], ["Modified", ago(a.ModifyTime)],
      ["Actions", a.DesiredStatus === "run" ? h("span", { "data-needs": "alloc-lifecycle" },
        h("button", { type: "button", class: "danger", onclick: () => act(`/v1/allocation/${a.ID}/stop`, {},
          { note, needs: "alloc-lifecycle" }) }, "Stop and reschedule"), " ", note) : "—"]]);
    const states = a.TaskStates || {};
    const tasks = Object.keys(states).length ? Object.keys(states)
      : (a.Job?.TaskGroups || []).find((g) => g.Name === a.TaskGroup)?.Tasks?.map((t) => t.Name) || [];
    $("tasks").replaceChildren(...(Object.keys(states).length ? Object.entries(states).map(([n, s]) => renderTask(n, s))
      : [h("p", { class: "muted" }, "No task has reported yet.")]));
    renderPlacement(a.Metrics);
    allocRestart(a);
    terminal.tasks(tasks);
    terminal.live(a.ClientStatus === "running");
    if ($("log-task").options.length !== tasks.length) {
      $("log-task").replaceChildren(...tasks.map((t) => h("option", {}, t)));
    }
    applyDenied();
    if (!started && tasks.length) {
      started = true;
      followLogs();
      files.open();
    }
  };
}

// ---- nodes ---------------------------------------------------------------------------------

function capacity(node) {
  const total = node.NodeResources || {};
  const reserved = node.ReservedResources || {};
  return {
    cpu: (total.Cpu?.CpuShares || 0) - (reserved.Cpu?.CpuShares || 0),
    memory: (total.Memory?.MemoryMB || 0) - (reserved.Memory?.MemoryMB || 0),
    disk: (total.Disk?.DiskMB || 0) - (reserved.Disk?.DiskMB || 0),
  };
}

function usage(allocs) {
  const used = {};
  for (const a of allocs) {
    const u = (used[a.NodeID] ||= { cpu: 0, memory: 0, disk: 0 });
    u.cpu += a.Resources?.CPU || 0;
    u.memory += a.Resources?.MemoryMB || 0;
    u.disk += a.Resources?.DiskMB || 0;
  }
  return used;
}

function bars(cap, used) {
  const u = used || { cpu: 0, memory: 0, disk: 0 };
  return h("div", { class: "bars" }, bar("CPU", u.cpu, cap.cpu, "MHz"), bar("Memory", u.memory, cap.memory, "MB"),
    bar("Disk", u.disk, cap.disk, "MB"));
}

const eligibilityText = (n) => (n.SchedulingEligibility === "eligible" ? "eligible" : "ineligible");

async function nodesPage() {
  let list = [];
  let used = {};
  const render = () => {
    const q = $("node-search").value.trim().toLowerCase();
    const matches = (n) => [n.Name, n.NodeClass, n.Datacenter, n.NodePool, n.ID].some((v) => (v || "").toLowerCase().includes(q));
    const shown = list.filter((n) => !q || matches(n));
    fill("nodes", shown.map((n) => [link(`/node/${n.ID}`, n.Name), badge(n.Status), badge(eligibilityText(n)),
      n.Drain ? badge("draining") : "no", n.NodeClass || "—", n.NodePool, n.Datacenter, bars(capacity(n), used[n.ID])]),
    list.length ? "No node matches." : "No nodes have registered.");
  };
  $("node-search").addEventListener("input", render);
  return async () => {
    const [nodes, allocs] = await Promise.all([api("/v1/nodes?resources=true"),
      api(`/v1/allocations?namespace=*&filter=${enc(LIVE_ALLOC)}`)]);
    list = nodes.data;
    used = usage(allocs.data);
    const by = countBy(list, (n) => n.Status);
    cards("node-counts", [["Nodes", list.length], ["Ready", by.ready || 0], ["Down", by.down || 0],
      ["Draining", list.filter((n) => n.Drain).length],
      ["Ineligible", list.filter((n) => eligibilityText(n) !== "eligible").length]]);
    render();
  };
}

function drainText(drain, last) {
  const force = drain ? timeNanos(drain.ForceDeadline) : 0;
  if (drain) return ["draining", force > 0 ? [" until ", when(force)] : ""];
  return ["no", last ? [` · Last drain: ${last.Status} `, ago(timeNanos(last.UpdatedAt))] : ""];
}

async function nodePage() {
  const id = objectId();
  let node = null;
  const note = $("node-result");
  $("drain-button").addEventListener("click", () => {
    const body = node.DrainStrategy ? { NodeID: id, DrainSpec: null, MarkEligible: true }
      : { NodeID: id, DrainSpec: { Deadline: 3600e9, IgnoreSystemJobs: false } };
    act(`/v1/node/${id}/drain`, body, { note, needs: "node-write" });
  });
  $("eligibility-button").addEventListener("click", () => {
    const next = node.SchedulingEligibility === "eligible" ? "ineligible" : "eligible";
    act(`/v1/node/${id}/eligibility`, { NodeID: id, Eligibility: next }, { note, needs: "node-write" });
  });
  return async () => {
    const filter = enc(`NodeID == "${id}"`);
    const [n, allocs] = await Promise.all([api(`/v1/node/${enc(id)}`), api(`/v1/allocations?namespace=*&filter=${filter}`)]);
    node = n.data;
    $("node-name").textContent = node.Name;
    $("node-status").replaceWith(Object.assign(badge(node.Status), { id: "node-status" }));
    const drain = node.DrainStrategy;
    facts("node-facts", [["ID", h("span", { class: "mono" }, node.ID)], ["Address", node.HTTPAddr || node.LinkAddr || node.Address],
      ["Datacenter", node.Datacenter], ["Pool", node.NodePool], ["Class", node.NodeClass || "—"],
      ["Eligibility", badge(eligibilityText(node))], ["Drain", drainText(drain, node.LastDrain)],
      ["Drivers", Object.keys(node.Drivers || {}).join(", ")],
      ["Last heartbeat", node.LastHeartbeat ? ago(node.LastHeartbeat) : "never"],
      ["Status changed", ago((node.StatusUpdatedAt || 0) * 1e9)], ["Version", (node.Attributes || {})["nomad.version"] || "—"]]);
    const live = allocs.data.filter((a) => a.ClientStatus === "pending" || a.ClientStatus === "running");
    $("node-usage").replaceChildren(bars(capacity(node), usage(live)[node.ID]));
    $("drain-button").textContent = node.DrainStrategy ? "Stop draining" : "Drain (1h deadline)";
    $("drain-button").className = node.DrainStrategy ? "secondary" : "danger";
    $("eligibility-button").textContent = node.SchedulingEligibility === "eligible" ? "Mark ineligible" : "Mark eligible";
    $("eligibility-button").className = "secondary";
    allocs.data.sort((a, b) => b.CreateIndex - a.CreateIndex);
    fill("allocations", allocs.data.map((a) => [link(`/allocation/${a.ID}`, short(a.ID)),
      link(jobPath(a.JobID, a.Namespace), a.JobID), a.TaskGroup, badge(a.ClientStatus), a.DesiredStatus,
      `${a.Resources?.CPU ?? "?"} MHz`, `${a.Resources?.MemoryMB ?? "?"} MB`]),
    "No allocations on this node.");
    applyDenied();
  };
}

// ---- evaluations -----------------------------------------------------------------------------

function evalRow(e) {
  const subject = e.JobID ? link(jobPath(e.JobID, e.Namespace), e.JobID) : link(`/node/${e.NodeID}`, short(e.NodeID));
  const reason = [e.StatusDescription, ...failureLines(e)].filter(Boolean).join(" ");
  const previous = e.PreviousEval ? [" (", link(`/evaluation/${e.PreviousEval}`, `after ${short(e.PreviousEval)}`), ")"] : "";
  return [link(`/evaluation/${e.ID}`, short(e.ID)), subject, e.TriggeredBy, badge(e.Status), [reason, previous],
    ago(e.CreateTime)];
}

function gauge(metrics, name) {
  return (metrics.Gauges || []).filter((g) => g.Name === name).reduce((sum, g) => sum + g.Value, 0);
}

async function evaluationsPage() {
  const ns = enc(chosenNamespace());
  const list = (status) => api(`/v1/evaluations?namespace=${ns}&filter=${enc(`Status == "${status}"`)}`).then((r) => r.data);
  return async () => {
    const [pending, blocked, recent, metrics] = await Promise.all([list("pending"), list("blocked"),
      api(`/v1/evaluations?namespace=${ns}&per_page=25&reverse=true`).then((r) => r.data),
      api("/v1/metrics").then((r) => r.data)]);
    // A pending evaluation with a lease is being scheduled by a worker; without one it is queued.
    const flying = pending.filter((e) => e.LeaseExpiresAt > 0);
    const queued = pending.filter((e) => !(e.LeaseExpiresAt > 0));
    cards("eval-counts", [["Queued", queued.length], ["In flight", flying.length], ["Blocked", blocked.length],
      ["Waiting (delayed)", gauge(metrics, "nomad.nomad.broker.total_waiting")]]);
    fill("evals-pending", queued.map(evalRow), "Nothing queued.");
    fill("evals-flight", flying.map(evalRow), "Nothing in flight.");
    fill("evals-blocked", blocked.map(evalRow), "Nothing blocked.");
    fill("evals-recent", recent.filter((e) => e.Status !== "pending" && e.Status !== "blocked").map(evalRow), "None yet.");
  };
}

async function evaluationPage() {
  const note = $("eval-result");
  let current = null;
  $("reevaluate").addEventListener("click", async () => {
    const e = current;
    const path = e.JobID ? `/v1/job/${enc(e.JobID)}/evaluate?namespace=${enc(e.Namespace)}`
      : `/v1/node/${e.NodeID}/evaluate`;
    const answer = await act(path, {}, { note, needs: "job-submit" });
    if (answer?.EvalID) note.replaceChildren("Created ", link(`/evaluation/${answer.EvalID}`, short(answer.EvalID)));
  });
  return async () => {
    const e = (await api(`/v1/evaluation/${enc(objectId())}?related=true`)).data;
    current = e;
    $("eval-status").replaceWith(Object.assign(badge(e.Status), { id: "eval-status" }));
    const follow = (label, id) => (id ? link(`/evaluation/${id}`, short(id)) : undefined);
    facts("eval-facts", [["ID", h("span", { class: "mono" }, e.ID)],
      ["Job", e.JobID ? link(jobPath(e.JobID, e.Namespace), e.JobID) : undefined],
      ["Node", e.NodeID ? link(`/node/${e.NodeID}`, short(e.NodeID)) : undefined], ["Type", e.Type],
      ["Triggered by", e.TriggeredBy], ["Priority", String(e.Priority)], ["Description", e.StatusDescription || "—"],
      ["Previous", follow("Previous", e.PreviousEval)], ["Next", follow("Next", e.NextEval)],
      ["Blocked follow-up", follow("Blocked", e.BlockedEval)], ["Created", ago(e.CreateTime)],
      ["Modified", ago(e.ModifyTime)]]);
    const lines = failureLines(e);
    const none = () => [h("li", { class: "muted" }, "None.")];
    $("failures").replaceChildren(...(lines.length ? lines.map((l) => h("li", {}, l)) : none()));
    const related = e.RelatedEvals || [];
    const item = (r) => h("li", {}, link(`/evaluation/${r.ID}`, short(r.ID)), " ", badge(r.Status), ` ${r.TriggeredBy}`);
    $("related").replaceChildren(...(related.length ? related.map(item) : none()));
    applyDenied();
  };
}

// ---- overview --------------------------------------------------------------------------------

const SVG_NS = "http://www.w3.org/2000/svg";
const svg = (tag, attrs) => {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  return el;
};
const minuteText = (unix) => `${new Date(unix * 1000).toISOString().slice(11, 16)} UTC`;

// The activity chart: one line per series over a 600×100 box the CSS stretches to the page's
// width (the strokes keep their width), its numbers in the svg's <desc> and a visually hidden table.
function renderActivity(buckets) {
  const top = Math.max(1, ...buckets.flatMap((b) => [b.Placements, b.Evaluations]));
  const x = (i) => (buckets.length > 1 ? (i * 600) / (buckets.length - 1) : 300);
  const y = (n) => 98 - (n / top) * 94; // 2 units of margin keep a zero or a peak line visible
  const points = (key) => buckets.map((b, i) => `${x(i).toFixed(1)},${y(b[key]).toFixed(1)}`).join(" ");
  const total = (key) => buckets.reduce((n, b) => n + b[key], 0);
  const most = (key) => Math.max(0, ...buckets.map((b) => b[key]));
  const line = (key, cls) => svg("polyline", { class: cls, points: points(key), "vector-effect": "non-scaling-stroke" });
  const title = $("activity-title");
  const desc = $("activity-desc");
  desc.textContent = buckets.length ? `${total("Placements")} placements and ${total("Evaluations")} evaluations `
    + `from ${minuteText(buckets[0].Minute)} to ${minuteText(buckets.at(-1).Minute)}; at most `
    + `${most("Placements")} placements and ${most("Evaluations")} evaluations in one minute.` : "No data.";
  const grid = [50, 2].map((at) => svg("line", { class: "grid", x1: 0, x2: 600, y1: at, y2: at,
    "vector-effect": "non-scaling-stroke" }));
  $("activity-chart").replaceChildren(title, desc, ...grid, line("Placements", "placements"),
    line("Evaluations", "evaluations"));
  $("activity-top").textContent = `${top} per minute`;
  $("activity-from").textContent = buckets.length ? minuteText(buckets[0].Minute) : "";
  $("activity-to").textContent = buckets.length ? minuteText(buckets.at(-1).Minute) : "";
  $("activity-placements").textContent = String(total("Placements"));
  $("activity-evaluations").textContent = String(total("Evaluations"));
  const busy = buckets.filter((b) => b.Placements || b.Evaluations);
  fill("activity-table", busy.map((b) => [minuteText(b.Minute), String(b.Placements), String(b.Evaluations)]),
    "No placements or evaluations in the last hour.");
}

function renderGcRuns(runs) {
  const started = (iso) => ago(Date.parse(iso) * 1e6);
  const duration = (ms) => (ms === null ? "running" : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);
  const deleted = (run) => h("span", { title: Object.entries(run.Removed).map(([k, n]) => `${k}: ${n}`).join(", ") },
    String(run.RowsRemoved));
  fill("gc-runs", runs.map((r) => [started(r.StartedAt), r.Kind, badge(r.Status), deleted(r), duration(r.DurationMs)]),
    "No garbage collection has run yet.");
}

// A section whose route needs operator:read: drawn from the answer, or hidden with its note on a 403.
async function operatorSection(path, render, shown, note) {
  try {
    render((await api(path)).data);
    $(shown).hidden = false;
    $(note).hidden = true;
  } catch (err) {
    if (err.status !== 403) throw err;
    $(shown).hidden = true;
    $(note).hidden = false;
  }
}

async function overviewPage() {
  const form = $("scheduler-form");
  const note = $("scheduler-result");
  let config = null;
  let dirty = false;
  const boxes = ["MemoryOversubscriptionEnabled", "RejectJobRegistration", "PauseEvalBroker"];
  const preemption = ["SystemSchedulerEnabled", "SysBatchSchedulerEnabled", "BatchSchedulerEnabled",
    "ServiceSchedulerEnabled"];
  form.addEventListener("input", () => { dirty = true; });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const body = { SchedulerAlgorithm: form.elements.SchedulerAlgorithm.value, PreemptionConfig: {} };
    for (const name of boxes) body[name] = form.elements[name].checked;
    for (const name of preemption) body.PreemptionConfig[name] = form.elements[name].checked;
    const answer = await act(`/v1/operator/scheduler/configuration?cas=${config.ModifyIndex}`, body,
      { note, needs: "operator-write" });
    if (answer) {
      note.textContent = answer.Updated ? "Saved."
        : "Not saved: someone changed the configuration first; it is shown again below.";
      dirty = false;
      config = null;
      await refresh(); // a refused check-and-set changed nothing, so no change would wake the page
    }
  });
  const fillForm = (c) => {
    form.elements.SchedulerAlgorithm.value = c.SchedulerAlgorithm;
    for (const name of boxes) form.elements[name].checked = Boolean(c[name]);
    for (const name of preemption) form.elements[name].checked = Boolean(c.PreemptionConfig?.[name]);
    $("scheduler-index").textContent = `Modify index ${c.ModifyIndex}`;
  };
  const refresh = async () => {
    const get = (path) => api(path).then((r) => r.data);
    const [jobList, nodeList, allocs, metrics] = await Promise.all([get("/v1/jobs?namespace=*"), get("/v1/nodes"),
      get(`/v1/allocations?namespace=*&filter=${enc(LIVE_ALLOC)}`), get("/v1/metrics")]);
    const jobsBy = countBy(jobList, (j) => j.Status);
    const nodesBy = countBy(nodeList, (n) => n.Status);
    cards("counts", [["Jobs running", jobsBy.running || 0], ["Jobs pending", jobsBy.pending || 0],
      ["Nodes ready", nodesBy.ready || 0], ["Nodes down", nodesBy.down || 0],
      ["Allocations live", allocs.length]]);
    const g = (name) => gauge(metrics, name);
    cards("queues", [["Broker ready", g("nomad.nomad.broker.total_ready")],
      ["In flight", g("nomad.nomad.broker.total_unacked")],
      ["Waiting", g("nomad.nomad.broker.total_waiting")], ["Blocked", g("nomad.nomad.blocked_evals.total_blocked")],
      ["Plan queue", g("nomad.nomad.plan.queue_depth")]]);
    await Promise.all([
      operatorSection("/v1/operator/activity?minutes=60", renderActivity, "activity", "activity-denied"),
      operatorSection("/v1/system/gc/runs?limit=5", renderGcRuns, "gc-box", "gc-denied"),
    ]);
    try {
      const fresh = (await get("/v1/operator/scheduler/configuration")).SchedulerConfig;
      if (!dirty && (!config || config.ModifyIndex !== fresh.ModifyIndex)) fillForm(fresh);
      if (!dirty) config = fresh;
    } catch (err) {
      if (err.status !== 403) throw err;
      form.hidden = true; // operator:read is missing: the token cannot see or change it
    }
    applyDenied();
  };
  return refresh;
}

const PAGES = {
  overview: overviewPage, jobs: jobsPage, job: jobPage, allocation: allocationPage, nodes: nodesPage, node: nodePage,
  evaluations: evaluationsPage, evaluation: evaluationPage, run: runPage, variables: variablesPage,
  variable: variablePage, variable_new: variablePage, services: servicesPage, service: servicePage,
};

async function main() {
  wireTokenButton();
  const visitor = await session();
  if (!visitor) {
    $("live").textContent = "token needed";
    return;
  }
  applyDenied();
  namespaceSelector();
  const refresh = await PAGES[document.body.dataset.page]();
  await live(refresh);
}

main();
