-- Garbage collection: each statement is one bounded batch (at most :limit parent rows),
-- children deleted before parents, every cascaded kind counted. Eligibility lives in the
-- corral_*_collectable_v1 functions (sql/functions/gc_v1.sql). Cutoffs are ages in seconds
-- (:threshold_s) measured back from :as_of, the time the run started (so a run never chases
-- work that finished after it began); 0 means "everything terminal when the run started".

-- name: gc_allocations
-- Eval GC, first half: terminal allocations nobody needs any more (Nomad deletes these even
-- when their evaluation must stay). Batch jobs use the batch evaluation threshold.
WITH victim AS MATERIALIZED (
    SELECT a.id
    FROM allocations a
    JOIN jobs j ON j.namespace = a.namespace AND j.id = a.job_id
    WHERE NOT corral_alloc_live_v1(a.desired_status, a.client_status)
      -- The looser of the two cutoffs, as a plain range: it walks ix_allocations_gc in order.
      AND a.modify_time < CAST(:as_of AS timestamptz) - make_interval(secs => least(:threshold_s, :batch_threshold_s))
      AND corral_alloc_collectable_v1(
          a, j,
          CAST(:as_of AS timestamptz) - make_interval(secs => CASE WHEN j.type = 'batch' THEN :batch_threshold_s ELSE :threshold_s END),
          false)
    ORDER BY a.modify_time
    LIMIT :limit
    FOR UPDATE OF a SKIP LOCKED
), gone AS (
    DELETE FROM allocations a USING victim v WHERE a.id = v.id RETURNING 1
)
SELECT count(*) AS allocations FROM gone;

-- name: gc_evaluations
-- Eval GC, second half: terminal evaluations with no allocation left, their plans and plan
-- results with them. A claimed or queued evaluation is never terminal, so never touched.
WITH victim AS MATERIALIZED (
    SELECT e.id
    FROM evaluations e
    WHERE e.status IN ('complete', 'failed', 'canceled')
      -- The looser cutoff as a plain range, so the batch walks ix_evaluations_gc in order instead
      -- of scanning and sorting every evaluation; the exact per-type cutoff follows.
      AND e.modify_time < CAST(:as_of AS timestamptz) - make_interval(secs => least(:threshold_s, :batch_threshold_s))
      AND e.modify_time < CAST(:as_of AS timestamptz) - make_interval(secs => CASE WHEN e.type = 'batch' THEN :batch_threshold_s ELSE :threshold_s END)
      -- OFFSET 0 keeps this a per-row probe of the eval_id index. As an anti join the planner
      -- would hash the whole allocations table per batch whenever its statistics still count
      -- the rows the allocation pass just deleted (seconds per batch at a million rows).
      AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.eval_id = e.id OFFSET 0)
    ORDER BY e.modify_time
    LIMIT :limit
    FOR UPDATE OF e SKIP LOCKED
), results AS (
    DELETE FROM plan_results r USING plans p, victim v WHERE r.plan_id = p.id AND p.eval_id = v.id RETURNING 1
), plans_gone AS (
    DELETE FROM plans p USING victim v WHERE p.eval_id = v.id RETURNING 1
), gone AS (
    DELETE FROM evaluations e USING victim v WHERE e.id = v.id RETURNING 1
)
SELECT (SELECT count(*) FROM gone) AS evaluations,
       (SELECT count(*) FROM plans_gone) AS plans,
       (SELECT count(*) FROM results) AS plan_results;

-- name: gc_lock_jobs
-- Job GC, step 1: lock candidate jobs. Anyone adding an evaluation or allocation to a locked
-- job waits on this lock (their foreign-key check), so step 2, with a fresh snapshot, sees
-- every child committed before it and none can appear after it.
SELECT j.namespace, j.id
FROM jobs j
-- The cheap column tests first: most jobs are live and never reach the function's subqueries.
WHERE (j.stop OR j.purged_at IS NOT NULL OR j.type IN ('batch', 'sysbatch'))
  AND greatest(j.submit_time, j.status_updated_at, j.updated_at, j.purged_at) < CAST(:as_of AS timestamptz) - make_interval(secs => :threshold_s)
  AND corral_job_collectable_v1(j, CAST(:as_of AS timestamptz) - make_interval(secs => :threshold_s))
ORDER BY j.namespace, j.id
LIMIT :limit
FOR UPDATE OF j SKIP LOCKED;

-- name: gc_delete_jobs
-- Job GC, step 2: re-check the locked jobs and delete each with everything it owns.
WITH victim AS MATERIALIZED (
    SELECT j.namespace, j.id
    FROM jobs j
    WHERE (j.namespace, j.id) IN (SELECT * FROM unnest(CAST(:namespaces AS text[]), CAST(:ids AS text[])))
      AND corral_job_collectable_v1(j, CAST(:as_of AS timestamptz) - make_interval(secs => :threshold_s))
), allocs AS (
    DELETE FROM allocations a USING victim v WHERE a.namespace = v.namespace AND a.job_id = v.id RETURNING 1
), results AS (
    DELETE FROM plan_results r USING plans p, evaluations e, victim v
    WHERE r.plan_id = p.id AND p.eval_id = e.id AND e.namespace = v.namespace AND e.job_id = v.id RETURNING 1
), plans_gone AS (
    DELETE FROM plans p USING evaluations e, victim v
    WHERE p.eval_id = e.id AND e.namespace = v.namespace AND e.job_id = v.id RETURNING 1
), evals AS (
    DELETE FROM evaluations e USING victim v WHERE e.namespace = v.namespace AND e.job_id = v.id RETURNING 1
), deployments_gone AS (
    DELETE FROM deployments d USING victim v WHERE d.namespace = v.namespace AND d.job_id = v.id RETURNING 1
), versions AS (
    DELETE FROM job_versions jv USING victim v WHERE jv.namespace = v.namespace AND jv.job_id = v.id RETURNING 1
), launches AS (
    DELETE FROM periodic_launches pl USING victim v WHERE pl.namespace = v.namespace AND pl.job_id = v.id RETURNING 1
), gone AS (
    DELETE FROM jobs j USING victim v WHERE j.namespace = v.namespace AND j.id = v.id RETURNING 1
)
SELECT (SELECT count(*) FROM gone) AS jobs,
       (SELECT count(*) FROM versions) AS job_versions,
       (SELECT count(*) FROM evals) AS evaluations,
       (SELECT count(*) FROM plans_gone) AS plans,
       (SELECT count(*) FROM results) AS plan_results,
       (SELECT count(*) FROM allocs) AS allocations,
       (SELECT count(*) FROM deployments_gone) AS deployments,
       (SELECT count(*) FROM launches) AS periodic_launches;

-- name: gc_deployments
-- Deployment GC: finished deployments no live allocation belongs to.
WITH victim AS MATERIALIZED (
    SELECT d.id
    FROM deployments d
    WHERE d.status NOT IN ('running', 'paused', 'initializing', 'pending', 'blocked', 'unblocking')
      AND d.modify_time < CAST(:as_of AS timestamptz) - make_interval(secs => :threshold_s)
      AND NOT EXISTS (
          SELECT 1 FROM allocations a
          WHERE a.deployment_id = d.id AND corral_alloc_live_v1(a.desired_status, a.client_status))
    ORDER BY d.modify_time
    LIMIT :limit
    FOR UPDATE OF d SKIP LOCKED
), gone AS (
    DELETE FROM deployments d USING victim v WHERE d.id = v.id RETURNING 1
)
SELECT count(*) AS deployments FROM gone;

-- name: gc_lock_nodes
-- Node GC, step 1: lock nodes down for longer than the threshold. Placing an allocation on
-- a node takes a key-share lock on it, so none can land between step 1 and step 2.
SELECT n.id
FROM nodes n
WHERE n.status = 'down' AND n.status_updated_at < CAST(:as_of AS timestamptz) - make_interval(secs => :threshold_s)
ORDER BY n.status_updated_at
LIMIT :limit
FOR UPDATE OF n SKIP LOCKED;

-- name: gc_delete_nodes
-- Node GC, step 2: delete the locked nodes that are still down and hold no allocation at all
-- (terminal ones included: they go with their evaluations or jobs first), and the unblock
-- markers of node classes no node has any more.
WITH victim AS MATERIALIZED (
    SELECT n.id
    FROM nodes n
    WHERE n.id = ANY(CAST(:ids AS uuid[])) AND n.status = 'down'
      AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.node_id = n.id)
), gone AS (
    DELETE FROM nodes n USING victim v WHERE n.id = v.id RETURNING n.computed_class
), classes AS (
    DELETE FROM class_unblocks c
    WHERE c.computed_class IN (SELECT computed_class FROM gone)
      AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.computed_class = c.computed_class AND n.id NOT IN (SELECT id FROM victim))
    RETURNING 1
)
SELECT (SELECT count(*) FROM gone) AS nodes, (SELECT count(*) FROM classes) AS class_unblocks;

-- name: gc_prune_runs
-- The GC log collects itself: a week of runs, at most 1000.
WITH gone AS (
    DELETE FROM gc_runs g
    WHERE g.status <> 'running'
      AND (g.started_at < now() - interval '7 days'
           OR g.id <= (SELECT id FROM gc_runs ORDER BY id DESC OFFSET 1000 LIMIT 1))
    RETURNING 1
)
SELECT count(*) AS gc_runs FROM gone;

-- name: gc_enqueue_core
-- Queue a core evaluation. A scheduled collector already queued is not queued twice
-- (uq_evaluations_core_queued); force-gc always gets its own.
INSERT INTO evaluations (id, namespace, job_id, priority, type, triggered_by, job_modify_index, status,
                         core_params, create_index, modify_index)
VALUES (:id, NULL, :kind, :priority, '_core', 'scheduled', :index, 'pending', CAST(:params AS jsonb), :index, :index)
ON CONFLICT (job_id) WHERE type = '_core' AND status = 'pending' AND job_id <> 'force-gc' DO NOTHING
RETURNING id;
