-- name: next_plans
-- The next batch of plans by priority, then submit order (group commit: one transaction applies
-- them all). Only the lock holder applies, so no row lock is needed to keep them to itself.
-- :exclude holds the plans of the batch still committing (the pipeline), pending until it has.
-- completes: the plan carries its evaluation's completion (complete_evals reads it in place).
SELECT id, eval_id, eval_token, namespace, job_id, priority, snapshot_index, all_at_once, node_update,
       node_allocation, node_preemptions, deployment, deployment_updates, completion IS NOT NULL AS completes,
       placement_metrics
FROM plans WHERE status = 'pending' AND id <> ALL(CAST(:exclude AS bigint[]))
ORDER BY priority DESC, id
LIMIT :limit;

-- name: next_plans_before_0037
-- next_plans on the schema before revision 0037 (a rolling upgrade): no placement_metrics
-- column; a plan's metrics, if any, ride inside node_allocation.
SELECT id, eval_id, eval_token, namespace, job_id, priority, snapshot_index, all_at_once, node_update,
       node_allocation, node_preemptions, deployment, deployment_updates, completion IS NOT NULL AS completes
FROM plans WHERE status = 'pending' AND id <> ALL(CAST(:exclude AS bigint[]))
ORDER BY priority DESC, id
LIMIT :limit;

-- name: evals_owned
-- The batch's evaluations whose lease is live, with its token, as the check sees them: not
-- locked (the pipeline checks a batch outside the transaction that writes it); the writing
-- transaction locks them again with evals_still_owned and fences any lease that moved on.
SELECT id, lease_token FROM evaluations
WHERE id = ANY(:ids) AND lease_token IS NOT NULL AND status = 'pending' AND lease_expires_at > now();

-- name: plans_decided
-- Which of these plans have a recorded status in this snapshot: the pipeline's test of whether
-- the batch still committing is visible to the read of the next one.
SELECT id FROM plans WHERE id = ANY(CAST(:ids AS bigint[])) AND status <> 'pending';

-- name: fence_term
-- Every leader-only commit checks its term. FOR KEY SHARE, not an UPDATE: the renewer (another
-- connection) must be able to bump renewed_at while a long apply runs, or the holder would look
-- stale and be replaced mid-apply. A takeover terminates the old holder's session first.
SELECT term FROM leader_terms WHERE role = :role AND term = :term FOR KEY SHARE;

-- name: evals_still_owned
-- The batch's evaluations whose lease is live, with its token (the applier matches each plan's
-- token). Locked until the batch commits: a lease that lapses meanwhile cannot be rescued (the
-- claim skips locked rows) and a lapsed lease is not honoured. In id order, so two lockers of
-- the same rows never wait on each other in a cycle. NO KEY UPDATE: it still excludes the claim's
-- FOR UPDATE and the renewal's UPDATE, but not the key-share lock of the foreign key from plans,
-- so a worker can submit its next chunk of the same evaluation while this batch writes one.
SELECT id, lease_token FROM evaluations
WHERE id = ANY(:ids) AND lease_token IS NOT NULL AND status = 'pending' AND lease_expires_at > now()
ORDER BY id
FOR NO KEY UPDATE;

-- name: plan_check_nodes
-- Only what the applier's fit check reads (no attributes, meta or drivers to decode).
SELECT id, computed_class, status, scheduling_eligibility, drain, cpu_shares, memory_mb, disk_mb, reserved_cpu,
       reserved_memory_mb, reserved_disk_mb, reserved_ports
FROM nodes WHERE id = ANY(:ids);

-- name: plan_node_usage
SELECT node_id, cpu, memory_mb, disk_mb FROM node_usage WHERE node_id = ANY(:ids);

-- name: plan_node_ports
-- The host ports and whole cores the nodes' live allocations hold.
SELECT node_id, host_ports, reserved_cores FROM allocations
WHERE node_id = ANY(:ids) AND (host_ports <> '{}' OR reserved_cores <> '{}')
  AND desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown');

-- name: plan_touched_allocs
-- The allocations a batch places (in-place updates, or IDs already taken), stops or evicts.
SELECT id, node_id, desired_status, client_status, cpu, memory_mb, disk_mb, host_ports, namespace, job_id, name,
       reserved_cores
FROM allocations WHERE id = ANY(:ids);

-- name: preempted_jobs
-- The jobs that lose allocations to a plan's preemptions: each gets one `preemption` evaluation.
SELECT DISTINCT j.namespace, j.id, j.type, j.priority, j.job_modify_index
FROM allocations a JOIN jobs j ON j.namespace = a.namespace AND j.id = a.job_id
WHERE a.id = ANY(:ids)
ORDER BY j.namespace, j.id;

-- name: mark_preempted_by
-- After the preemptors exist (the foreign key needs them): who evicted each victim.
UPDATE allocations a SET preempted_by_allocation = v.by
FROM unnest(CAST(:victims AS uuid[]), CAST(:bys AS uuid[])) AS v(victim, by)
WHERE a.id = v.victim;

-- name: plan_stop_allocs
-- The batch's stops and evictions in one statement. Before the new allocations: the usage
-- trigger must see the room they free.
UPDATE allocations a
SET desired_status = v.desired_status, desired_description = v.description,
    client_status = COALESCE(v.client_status, a.client_status),
    modify_index = :index, alloc_modify_index = :index, modify_time = now()
FROM unnest(CAST(:ids AS uuid[]), CAST(:desired AS text[]), CAST(:descriptions AS text[]),
            CAST(:client AS text[])) AS v(id, desired_status, description, client_status)
WHERE a.id = v.id;

-- name: plan_update_in_place
-- An in-place update keeps the allocation and changes its version and resources; it joins the
-- plan's deployment (health judged anew) when it has one.
UPDATE allocations
SET job_version = :job_version, eval_id = :eval_id, cpu = :cpu, memory_mb = :memory_mb,
    memory_max_mb = :memory_max_mb, disk_mb = :disk_mb, modify_index = :index,
    alloc_modify_index = :index, modify_time = now(),
    deployment_id = COALESCE(CAST(:deployment_id AS uuid), deployment_id),
    deployment_status = CASE WHEN CAST(:deployment_id AS uuid) IS NULL THEN deployment_status END
WHERE id = :id;

-- name: plan_claim_volumes
-- Sticky host volume claims of the batch's new allocations: one row per job, group and volume;
-- a claim the group already holds moves to the newest allocation (keeping its ID). A volume
-- deleted since the plan's snapshot is not claimed (its allocation's start fails on the node).
-- DISTINCT ON: two new allocations of a group on one volume in the same batch make one claim.
INSERT INTO host_volume_claims AS c
    (id, namespace, job_id, task_group, alloc_id, volume_id, volume_name, create_index, modify_index)
SELECT DISTINCT ON (v.namespace, v.job_id, v.task_group, v.volume_id)
       v.id, v.namespace, v.job_id, v.task_group, v.alloc_id, v.volume_id, v.volume_name, :index, :index
FROM unnest(CAST(:ids AS uuid[]), CAST(:namespaces AS text[]), CAST(:job_ids AS text[]), CAST(:groups AS text[]),
            CAST(:allocs AS uuid[]), CAST(:volumes AS uuid[]), CAST(:names AS text[]))
     AS v(id, namespace, job_id, task_group, alloc_id, volume_id, volume_name)
JOIN host_volumes h ON h.id = v.volume_id
ORDER BY v.namespace, v.job_id, v.task_group, v.volume_id
ON CONFLICT (namespace, job_id, task_group, volume_id) DO UPDATE
SET alloc_id = EXCLUDED.alloc_id, modify_index = EXCLUDED.modify_index
WHERE c.alloc_id <> EXCLUDED.alloc_id;

-- name: plan_link_previous
-- A replacement names its predecessor; the predecessor learns its successor.
UPDATE allocations a SET next_allocation = v.next
FROM unnest(CAST(:previous AS uuid[]), CAST(:next AS uuid[])) AS v(previous, next)
WHERE a.id = v.previous;

-- name: plan_record_status
-- The batch's statuses, and the NOTIFY (delivered at the batch's commit) that tells the waiting
-- workers their verdicts. Its payload (:verdicts, built by the applier) holds one entry per
-- plan, comma-separated: `id:placed:stopped:rejected_nodes:refresh_index:flags`, the flags `r`
-- (the plan was refused) and `c` (this commit completed the plan's evaluation). A worker takes its
-- verdict from there and reads nothing; the values are plan_verdict's, and a NOTIFY is delivered
-- only once its transaction committed. A list too long for a payload (8000 bytes) is sent empty,
-- which wakes every waiter to read its plan's result (plan_verdict), as does any notification it
-- missed. The plans are found by `id = ANY(:ids)`, a primary-key probe each, whatever the
-- statistics say: joined on the unnest alone, a table never analyzed (a burst of submits) was
-- read whole.
WITH recorded AS (
    UPDATE plans p SET status = v.status, applied_at = now()
    FROM unnest(CAST(:ids AS bigint[]), CAST(:statuses AS text[])) AS v(id, status)
    WHERE p.id = ANY(CAST(:ids AS bigint[])) AND p.id = v.id
    RETURNING p.id
)
SELECT (SELECT count(*) FROM recorded) AS recorded,
       pg_notify('corral_verdicts', CASE WHEN length(CAST(:verdicts AS text)) <= 7900 THEN CAST(:verdicts AS text) ELSE '' END)
           AS notified;

-- name: complete_evals
-- complete_eval_success for every evaluation of the batch whose last plan applied in full, in
-- one statement: record each pass (fenced by its token), cancel each job's pending evaluations
-- the pass already served (coalescing) and its blocked evaluation. :plans are those plans; each
-- one's completion is read where the worker stored it, in the plan's row, rather than decoded
-- and sent back by the applier. The index is this transaction's own, the one the applier logged.
-- One evaluation per job is in flight, so no two finished rows share a job and no row is the
-- target of two of these updates.
-- Each update reaches its rows through an index whatever the statistics say: a LATERAL
-- subquery the planner may not flatten (OFFSET 0) probes, per finished evaluation, its row by
-- primary key and its job's served evaluations; the blocked ones are found by their jobs
-- (arrays built from the batch). Joined on the CTEs alone, a table never analyzed
-- (right after a burst of registrations) got plans that read every pending evaluation, up to
-- once per finished one: 2-3 ms a batch at 1,000 pending.
WITH taken AS (SELECT state_index_own() AS index), done AS (
    SELECT p.eval_id AS id, p.eval_token AS token, c."Description" AS description,
           c."SnapshotIndex" AS snapshot_index, c."QueuedAllocations" AS queued,
           c."ClassEligibility" AS eligibility, c."EscapedComputedClass" AS escaped,
           c."ScheduledAt" AS scheduled_at
    FROM plans p
    CROSS JOIN LATERAL jsonb_to_record(p.completion) AS c(
        "Description" text, "SnapshotIndex" bigint, "QueuedAllocations" jsonb, "ClassEligibility" jsonb,
        "EscapedComputedClass" boolean, "ScheduledAt" timestamptz)
    WHERE p.id = ANY(CAST(:plans AS bigint[])) AND p.completion IS NOT NULL
), finished AS (
    UPDATE evaluations e
    SET status = 'complete', status_description = d.description, lease_token = NULL, lease_owner = NULL,
        lease_expires_at = NULL, snapshot_index = d.snapshot_index, failed_tg_allocs = '{}',
        queued_allocations = d.queued, class_eligibility = d.eligibility, escaped_computed_class = d.escaped,
        modify_index = (SELECT index FROM taken), modify_time = now()
    FROM done d
    CROSS JOIN LATERAL (SELECT x.id FROM evaluations x WHERE x.id = d.id OFFSET 0) one
    WHERE e.id = one.id AND e.lease_token = d.token AND e.status = 'pending'
    RETURNING e.id, e.namespace, e.job_id, d.snapshot_index, d.scheduled_at
), coalesced AS (
    UPDATE evaluations e
    SET status = 'canceled', status_description = 'coalesced into evaluation ' || CAST(f.id AS text),
        modify_index = (SELECT index FROM taken), modify_time = now()
    FROM finished f
    CROSS JOIN LATERAL (
        SELECT s.id FROM evaluations s
        WHERE s.namespace = f.namespace AND s.job_id = f.job_id AND s.status = 'pending' AND s.lease_token IS NULL
          AND s.id <> f.id AND s.create_index <= f.snapshot_index
          AND (s.wait_until IS NULL OR s.wait_until <= f.scheduled_at)
        OFFSET 0  -- kept a subquery, run once per finished evaluation: a probe of its job
    ) served
    WHERE e.id = served.id
    RETURNING e.id
), unblocked AS (
    UPDATE evaluations e
    SET status = 'canceled', status_description = 'evaluation ' || CAST(f.id AS text) || ' successful',
        modify_index = (SELECT index FROM taken), modify_time = now()
    FROM finished f
    WHERE e.namespace = ANY(ARRAY(SELECT namespace FROM finished)) AND e.job_id = ANY(ARRAY(SELECT job_id FROM finished))
      AND e.namespace = f.namespace AND e.job_id = f.job_id AND e.status = 'blocked'
    RETURNING e.id
)
SELECT id FROM finished;

-- name: plan_deployments
-- The stored deployments a batch's plans create, advance or change the status of, locked until
-- the batch commits (operators and the watcher lock them too), in id order (no lock cycles).
SELECT id, namespace, job_id, job_version, status, status_description, task_groups
FROM deployments WHERE id = ANY(:ids)
ORDER BY id
FOR UPDATE;

-- name: plan_insert_deployments
-- Every deployment the batch creates, in one statement. The job spec modify index is the job
-- modify index the plan names, as a plan's deployment always recorded it.
INSERT INTO deployments (id, namespace, job_id, job_version, job_modify_index, job_spec_modify_index,
                         job_create_index, status, status_description, task_groups, eval_priority,
                         create_index, modify_index, create_time, modify_time)
SELECT d.id, d.namespace, d.job_id, d.job_version, d.job_modify_index, d.job_modify_index, d.job_create_index,
       d.status, d.description, d.task_groups, d.priority, :index, :index, now(), now()
FROM unnest(CAST(:ids AS uuid[]), CAST(:namespaces AS text[]), CAST(:job_ids AS text[]),
            CAST(:job_versions AS integer[]), CAST(:job_modify_indexes AS bigint[]),
            CAST(:job_create_indexes AS bigint[]), CAST(:statuses AS text[]), CAST(:descriptions AS text[]),
            CAST(:groups AS jsonb[]), CAST(:priorities AS integer[]))
    AS d(id, namespace, job_id, job_version, job_modify_index, job_create_index, status, description,
         task_groups, priority);

-- name: plan_update_deployments
-- The stored deployments the batch advanced (groups merged, description, status), as the
-- applier folded them; the rows are locked since plan_deployments.
UPDATE deployments d
SET task_groups = v.task_groups, status = v.status, status_description = v.description,
    modify_index = :index, modify_time = now()
FROM unnest(CAST(:ids AS uuid[]), CAST(:groups AS jsonb[]), CAST(:statuses AS text[]),
            CAST(:descriptions AS text[])) AS v(id, task_groups, status, description)
WHERE d.id = v.id;

-- name: plan_mark_stable
-- A successful deployment marks its job version stable (the version auto-revert returns to),
-- and the job too while that version is still its current one.
WITH v AS (
    SELECT * FROM unnest(CAST(:namespaces AS text[]), CAST(:job_ids AS text[]), CAST(:versions AS integer[]))
        AS v(namespace, job_id, version)
), versions AS (
    UPDATE job_versions jv SET stable = true
    FROM v WHERE jv.namespace = v.namespace AND jv.job_id = v.job_id AND jv.version = v.version
    RETURNING 1
)
UPDATE jobs j SET stable = true, modify_index = :index
FROM v WHERE j.namespace = v.namespace AND j.id = v.job_id AND j.version = v.version;

-- name: custom_plans
-- The batch's reads are prepared, and Postgres keeps a prepared statement's generic plan once it
-- costs no more than the custom ones: a plan made while allocations, node_usage or deployments
-- were nearly empty (a fresh cluster, a benchmark) is a sequential scan, kept as they grow until
-- autovacuum's next ANALYZE (measured: 0.66 ms for a touched-allocations read returning
-- nothing). Planned per execution, they use their indexes from the start; planning these short
-- reads costs less than one such scan. Until generic_plans (the writes' plans do not depend on
-- the tables' sizes, and planning them every time costs more than it saves).
SET LOCAL plan_cache_mode = force_custom_plan;

-- name: generic_plans
SET LOCAL plan_cache_mode = auto;
