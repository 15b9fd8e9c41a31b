-- name: task_group_summaries
-- Nomad's per-task-group job summary, from the v_job_summary view.
SELECT namespace, job_id, task_group, queued, complete, failed, running, starting, lost, unknown
FROM v_job_summary
WHERE (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
  AND (CAST(:job_id AS text) IS NULL OR job_id = :job_id);

-- name: job_task_group_summaries
-- One job's summary per task group: equalities only (no "IS NULL OR"), so the planner carries
-- the job's key into the view's grouped allocations and reads that job's alone by index.
SELECT namespace, job_id, task_group, queued, complete, failed, running, starting, lost, unknown
FROM v_job_summary
WHERE namespace = :namespace AND job_id = :job_id;

-- name: job_status
-- One job's status as Nomad derives it (sql/functions/job_status_v1.sql).
SELECT corral_job_status_v1(j) FROM jobs j WHERE j.namespace = :namespace AND j.id = :job_id;

-- name: job_statuses
-- Every live job's derived status, in one namespace or (NULL) all: corral_job_status_v1 for a
-- whole list at once. The function runs its four probes per job (about 80 us each at a few
-- hundred jobs, most of a job list's database time); here each table is read once, grouped by
-- job. tests/integration/test_job_statuses_query.py holds the two to the same answers.
SELECT j.namespace, j.id,
       CASE
           WHEN j.type = 'system' OR j.periodic OR (j.parameterized AND NOT j.dispatched) THEN
               CASE WHEN j.stop THEN 'dead' ELSE 'running' END
           WHEN a.live THEN 'running'
           WHEN e.waiting THEN 'pending'
           WHEN a.job_id IS NOT NULL OR e.job_id IS NOT NULL THEN 'dead'
           ELSE 'pending'
       END
FROM jobs j
LEFT JOIN (
    SELECT namespace, job_id,
           bool_or(desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown')) AS live
    FROM allocations
    WHERE CAST(:namespace AS text) IS NULL OR namespace = :namespace
    GROUP BY namespace, job_id
) a ON a.namespace = j.namespace AND a.job_id = j.id
LEFT JOIN (
    SELECT namespace, job_id, bool_or(status IN ('pending', 'blocked')) AS waiting
    FROM evaluations
    WHERE namespace IS NOT NULL AND (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
    GROUP BY namespace, job_id
) e ON e.namespace = j.namespace AND e.job_id = j.id
WHERE j.purged_at IS NULL AND (CAST(:namespace AS text) IS NULL OR j.namespace = :namespace);

-- name: job_types
-- The type of each of a list's jobs at once (an allocation list's JobType), purged or not.
SELECT j.namespace, j.id, j.type FROM jobs j
JOIN unnest(CAST(:namespaces AS text[]), CAST(:ids AS text[])) AS k(namespace, id)
  ON j.namespace = k.namespace AND j.id = k.id;

-- name: job_stubs
-- The live jobs of a namespace (NULL: all) with an ID prefix (NULL: any), as a job list shows
-- them: the stub's columns (app.store.job.job_reads.JobListed, in its order) and the two keys
-- of the specification it shows, not the whole specification.
SELECT j.namespace, j.id, j.name, j.type, j.priority, j.status, j.status_description, j.stop,
       j.job_modify_index, j.submit_time, j.datacenters, j.node_pool, j.parent_id, j.periodic,
       j.parameterized, j.create_index, j.modify_index, j.spec -> 'Multiregion', j.spec -> 'Meta'
FROM jobs j
WHERE j.purged_at IS NULL
  AND (CAST(:namespace AS text) IS NULL OR j.namespace = :namespace)
  AND (CAST(:prefix AS text) IS NULL OR starts_with(j.id, :prefix))
ORDER BY j.namespace, j.id;
