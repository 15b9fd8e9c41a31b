-- Garbage collection: each statement is one bounded batch (at most :limit parent rows; the job
-- GC statements at most :limit rows), children deleted before parents, every cascaded kind
-- counted. Eligibility lives in the corral_*_collectable functions (sql/functions/gc_v1.sql,
-- gc_v2.sql). Cutoffs are ages in seconds (:threshold_s) measured back from :as_of, the time
-- the run started (so a run never chases work that finished after it began); 0 means
-- "everything terminal when the run started".

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

-- name: gc_job_candidates
-- Job GC, step 1: the next window of at most :limit candidates after the cursor
-- (:after_namespace, :after_id), in key order through the partial index ix_jobs_gc_candidates
-- (stopped, purged and batch jobs only), each with whether it looks collectable now. No locks.
-- A run walks its candidates once, window by window, so no batch rescans jobs already judged;
-- the caller moves the cursor to the last row returned.
WITH scanned AS MATERIALIZED (
    SELECT j.namespace, j.id
    FROM jobs j
    WHERE (j.stop OR j.purged_at IS NOT NULL OR j.type IN ('batch', 'sysbatch'))
      AND (j.namespace, j.id) > (CAST(:after_namespace AS text), CAST(:after_id AS text))
    ORDER BY j.namespace, j.id
    LIMIT :limit
)
SELECT s.namespace, s.id,
       -- The cheap column test first: most candidates that fail, fail here.
       (greatest(j.submit_time, j.status_updated_at, j.updated_at, j.purged_at)
            < CAST(:as_of AS timestamptz) - make_interval(secs => :threshold_s)
        AND corral_job_collectable_v2(j, CAST(:as_of AS timestamptz) - make_interval(secs => :threshold_s))) AS collectable
FROM scanned s
JOIN jobs j ON j.namespace = s.namespace AND j.id = s.id
ORDER BY s.namespace, s.id;

-- name: gc_lock_jobs
-- Job GC, step 2 (first statement of every job batch): lock the candidates still there that
-- pass the cheap column tests (a live job, such as a parent revisited after its last child
-- went, is never locked). Anyone adding an evaluation, allocation, deployment, version or
-- child job to a locked job waits on this lock (their foreign-key check key-shares the job),
-- re-registering it waits too, and a job somebody is adding to is skipped.
SELECT j.namespace, j.id
FROM jobs j
WHERE (j.namespace, j.id) IN (SELECT * FROM unnest(CAST(:namespaces AS text[]), CAST(:ids AS text[])))
  AND (j.stop OR j.purged_at IS NOT NULL OR j.type IN ('batch', 'sysbatch'))
  AND (j.stop OR j.purged_at IS NOT NULL OR NOT (j.periodic OR (j.parameterized AND NOT j.dispatched)))
  AND greatest(j.submit_time, j.status_updated_at, j.updated_at, j.purged_at)
      < CAST(:as_of AS timestamptz) - make_interval(secs => :threshold_s)
ORDER BY j.namespace, j.id
FOR UPDATE OF j SKIP LOCKED;

-- name: gc_recheck_jobs
-- Job GC, step 3: re-check the locked jobs with a fresh snapshot, which sees every child
-- committed before the lock; none can follow it while this batch holds the lock. Only the
-- jobs returned lose anything in this batch.
SELECT j.namespace, j.id
FROM jobs j
WHERE (j.namespace, j.id) IN (SELECT * FROM unnest(CAST(:namespaces AS text[]), CAST(:ids AS text[])))
  AND corral_job_collectable_v2(j, CAST(:as_of AS timestamptz) - make_interval(secs => :threshold_s))
ORDER BY j.namespace, j.id;

-- name: gc_job_allocations
-- Job GC, step 4 (this statement and the five after it, in the same batch until its row
-- budget is spent): the locked, re-checked jobs lose their children in row-bounded statements,
-- allocations first, then plans, evaluations, deployments and old versions; the job row goes
-- last with its current version and periodic launch record. A later kind is only reached once
-- the earlier ones are exhausted. A job that becomes live between two batches fails the next
-- re-check and keeps the rest: every child deleted so far was finished with on its own.
WITH victim AS MATERIALIZED (
    SELECT j.namespace, j.id, j.version
    FROM jobs j
    WHERE (j.namespace, j.id) IN (SELECT * FROM unnest(CAST(:namespaces AS text[]), CAST(:ids AS text[])))
), doomed AS MATERIALIZED (
    SELECT a.id
    FROM victim v
    JOIN allocations a ON a.namespace = v.namespace AND a.job_id = v.id
    LIMIT :limit
), gone AS (
    DELETE FROM allocations a USING doomed d
    WHERE a.id = d.id
      -- Re-checked on the row as it is when locked, should a client update have won the race.
      -- Only for being finished: a terminal allocation its client touched since (say, to
      -- report its directory destroyed) is no reason to keep a dead job's allocation.
      AND NOT corral_alloc_live_v1(a.desired_status, a.client_status)
      AND a.client_status NOT IN ('running', 'unknown')
    RETURNING 1
)
SELECT count(*) AS allocations FROM gone;

-- name: gc_job_plans
-- At most :limit plans, each with its plan result.
WITH victim AS MATERIALIZED (
    SELECT j.namespace, j.id, j.version
    FROM jobs j
    WHERE (j.namespace, j.id) IN (SELECT * FROM unnest(CAST(:namespaces AS text[]), CAST(:ids AS text[])))
), doomed AS MATERIALIZED (
    SELECT p.id
    FROM victim v
    JOIN evaluations e ON e.namespace = v.namespace AND e.job_id = v.id
    JOIN plans p ON p.eval_id = e.id
    LIMIT :limit
), results AS (
    DELETE FROM plan_results r USING doomed d WHERE r.plan_id = d.id RETURNING 1
), gone AS (
    DELETE FROM plans p USING doomed d WHERE p.id = d.id RETURNING 1
)
SELECT (SELECT count(*) FROM gone) AS plans, (SELECT count(*) FROM results) AS plan_results;

-- name: gc_job_evaluations
WITH victim AS MATERIALIZED (
    SELECT j.namespace, j.id, j.version
    FROM jobs j
    WHERE (j.namespace, j.id) IN (SELECT * FROM unnest(CAST(:namespaces AS text[]), CAST(:ids AS text[])))
), doomed AS MATERIALIZED (
    SELECT e.id
    FROM victim v
    JOIN evaluations e ON e.namespace = v.namespace AND e.job_id = v.id
    WHERE NOT EXISTS (SELECT 1 FROM plans p WHERE p.eval_id = e.id)
      -- Reached once the allocations are gone; should one have stayed, its evaluation stays.
      AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.eval_id = e.id)
    LIMIT :limit
), gone AS (
    DELETE FROM evaluations e USING doomed d WHERE e.id = d.id RETURNING 1
)
SELECT count(*) AS evaluations FROM gone;

-- name: gc_job_deployments
WITH victim AS MATERIALIZED (
    SELECT j.namespace, j.id, j.version
    FROM jobs j
    WHERE (j.namespace, j.id) IN (SELECT * FROM unnest(CAST(:namespaces AS text[]), CAST(:ids AS text[])))
), doomed AS MATERIALIZED (
    SELECT d.id
    FROM victim v
    JOIN deployments d ON d.namespace = v.namespace AND d.job_id = v.id
    WHERE NOT EXISTS (SELECT 1 FROM allocations a WHERE a.deployment_id = d.id)
    LIMIT :limit
), gone AS (
    DELETE FROM deployments d USING doomed x WHERE d.id = x.id RETURNING 1
)
SELECT count(*) AS deployments FROM gone;

-- name: gc_job_versions
-- Old versions; the current one goes with the job row.
WITH victim AS MATERIALIZED (
    SELECT j.namespace, j.id, j.version
    FROM jobs j
    WHERE (j.namespace, j.id) IN (SELECT * FROM unnest(CAST(:namespaces AS text[]), CAST(:ids AS text[])))
), doomed AS MATERIALIZED (
    SELECT jv.namespace, jv.job_id, jv.version
    FROM victim v
    JOIN job_versions jv ON jv.namespace = v.namespace AND jv.job_id = v.id
    WHERE jv.version <> v.version
      AND NOT EXISTS (
          SELECT 1 FROM allocations a
          WHERE a.namespace = jv.namespace AND a.job_id = jv.job_id AND a.job_version = jv.version)
    LIMIT :limit
), gone AS (
    DELETE FROM job_versions jv USING doomed d
    WHERE jv.namespace = d.namespace AND jv.job_id = d.job_id AND jv.version = d.version
    RETURNING 1
)
SELECT count(*) AS job_versions FROM gone;

-- name: gc_delete_jobs
-- At most :limit jobs with nothing left but their current version and periodic launch record
-- (three rows each). Returns the parents of the deleted children: a parent whose last child
-- went may be collectable now.
WITH victim AS MATERIALIZED (
    SELECT j.namespace, j.id, j.version
    FROM jobs j
    WHERE (j.namespace, j.id) IN (SELECT * FROM unnest(CAST(:namespaces AS text[]), CAST(:ids AS text[])))
), bare AS MATERIALIZED (
    SELECT j.namespace, j.id, j.parent_id
    FROM victim v
    JOIN jobs j ON j.namespace = v.namespace AND j.id = v.id
    WHERE NOT EXISTS (SELECT 1 FROM allocations a WHERE a.namespace = v.namespace AND a.job_id = v.id)
      AND NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.namespace = v.namespace AND e.job_id = v.id)
      AND NOT EXISTS (SELECT 1 FROM deployments d WHERE d.namespace = v.namespace AND d.job_id = v.id)
      AND NOT EXISTS (
          SELECT 1 FROM job_versions jv
          WHERE jv.namespace = v.namespace AND jv.job_id = v.id AND jv.version <> v.version)
    ORDER BY j.namespace, j.id
    LIMIT :limit
), versions AS (
    DELETE FROM job_versions jv USING bare b WHERE jv.namespace = b.namespace AND jv.job_id = b.id RETURNING 1
), launches AS (
    DELETE FROM periodic_launches pl USING bare b WHERE pl.namespace = b.namespace AND pl.job_id = b.id RETURNING 1
), gone AS (
    DELETE FROM jobs j USING bare b WHERE j.namespace = b.namespace AND j.id = b.id RETURNING j.namespace, j.parent_id
)
SELECT (SELECT count(*) FROM gone) AS jobs,
       (SELECT count(*) FROM versions) AS job_versions,
       (SELECT count(*) FROM launches) AS periodic_launches,
       (SELECT coalesce(array_agg(namespace ORDER BY namespace, parent_id), '{}') FROM gone WHERE parent_id IS NOT NULL)
           AS parent_namespaces,
       (SELECT coalesce(array_agg(parent_id ORDER BY namespace, parent_id), '{}') FROM gone WHERE parent_id IS NOT NULL)
           AS parent_ids;

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
-- Node GC, step 1: lock nodes down for longer than the threshold with no allocation at all
-- left on them (terminal ones included: they go with their evaluations or jobs first). Nodes
-- that still hold allocations are not candidates, so a batch never fills up with them and
-- stops short of the empty ones behind. Placing an allocation on a node key-shares it, so
-- none can land between step 1 and step 2.
SELECT n.id
FROM nodes n
WHERE n.status = 'down' AND n.status_updated_at < CAST(:as_of AS timestamptz) - make_interval(secs => :threshold_s)
  AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.node_id = n.id)
ORDER BY n.status_updated_at
LIMIT :limit
FOR UPDATE OF n SKIP LOCKED;

-- name: gc_delete_nodes
-- Node GC, step 2: re-check the locked nodes with a fresh snapshot and delete them.
WITH victim AS MATERIALIZED (
    SELECT n.id
    FROM nodes n
    WHERE n.id = ANY(CAST(:ids AS uuid[])) AND n.status = 'down'
      AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.node_id = n.id)
), gone AS (
    DELETE FROM nodes n USING victim v WHERE n.id = v.id RETURNING 1
)
SELECT count(*) AS nodes FROM gone;

-- name: gc_lock_class_unblocks
-- Node GC, step 3: lock unblock markers of node classes no node has any more (the last node
-- of the class was collected, or changed class). A node joining such a class upserts the
-- marker: if it did so first, the row is locked and skipped here; if it comes later, it waits
-- for this batch and inserts the marker afresh.
SELECT c.computed_class
FROM class_unblocks c
WHERE NOT EXISTS (SELECT 1 FROM nodes n WHERE n.computed_class = c.computed_class)
ORDER BY c.computed_class
LIMIT :limit
FOR UPDATE OF c SKIP LOCKED;

-- name: gc_delete_class_unblocks
-- Node GC, step 4: re-check with a fresh snapshot (a node of the class committed meanwhile
-- keeps its marker) and delete.
WITH gone AS (
    DELETE FROM class_unblocks c
    WHERE c.computed_class = ANY(CAST(:classes AS text[]))
      AND NOT EXISTS (SELECT 1 FROM nodes n WHERE n.computed_class = c.computed_class)
    RETURNING 1
)
SELECT count(*) AS class_unblocks FROM gone;

-- name: gc_prune_runs
-- The GC log tidies itself: a run still marked running whose evaluation is no longer pending
-- (failed by the lease reaper, or its worker died and nobody took it over) is marked
-- interrupted; then it keeps a week of runs, at most 1000.
WITH interrupted AS (
    UPDATE gc_runs g
    SET status = 'interrupted', finished_at = now(),
        error = coalesce(g.error, 'its evaluation ended while the run was still marked running (the worker stopped)')
    WHERE g.status = 'running'
      AND NOT EXISTS (SELECT 1 FROM evaluations e WHERE e.id = g.eval_id AND e.status = 'pending')
    RETURNING 1
), gone AS (
    DELETE FROM gc_runs g
    WHERE g.status <> 'running'
      AND (g.started_at < now() - interval '7 days'
           OR g.id <= (SELECT id FROM gc_runs ORDER BY id DESC OFFSET 1000 LIMIT 1))
    RETURNING 1
)
SELECT (SELECT count(*) FROM gone) AS gc_runs, (SELECT count(*) FROM interrupted) AS interrupted;

-- name: gc_core_queued
-- Is this scheduled collector already queued (or running)? Asked before taking an index, so
-- a tick that has nothing to add writes nothing and wakes no blocking query.
SELECT EXISTS (
    SELECT 1 FROM evaluations
    WHERE type = '_core' AND status = 'pending' AND job_id <> 'force-gc' AND job_id = :kind
) AS queued;

-- name: gc_enqueue_core
-- Queue a core evaluation. A scheduled collector already queued is not queued twice
-- (uq_evaluations_core_queued); force-gc always gets its own.
INSERT INTO evaluations (id, namespace, job_id, priority, type, triggered_by, job_modify_index, status,
                         core_params, create_index, modify_index)
VALUES (:id, NULL, :kind, :priority, '_core', 'scheduled', :index, 'pending', CAST(:params AS jsonb), :index, :index)
ON CONFLICT (job_id) WHERE type = '_core' AND status = 'pending' AND job_id <> 'force-gc' DO NOTHING
RETURNING id;
