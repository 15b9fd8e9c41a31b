-- name: task_group_summaries
-- Nomad's per-task-group job summary, from the v_job_summary view.
SELECT namespace, job_id, task_group, queued, complete, failed, running, starting, lost, unknown
FROM v_job_summary
WHERE (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
  AND (CAST(:job_id AS text) IS NULL OR job_id = :job_id);

-- name: job_status
-- One job's status as Nomad derives it (sql/functions/job_status_v1.sql).
SELECT corral_job_status_v1(j) FROM jobs j WHERE j.namespace = :namespace AND j.id = :job_id;

-- name: job_statuses
-- Every live job's derived status, in one namespace or (NULL) all.
SELECT j.namespace, j.id, corral_job_status_v1(j) FROM jobs j
WHERE j.purged_at IS NULL AND (CAST(:namespace AS text) IS NULL OR j.namespace = :namespace);
