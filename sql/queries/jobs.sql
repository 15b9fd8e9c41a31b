-- name: task_group_summaries
-- Nomad's per-task-group job summary, from the v_job_summary view.
SELECT namespace, job_id, task_group, queued, complete, failed, running, starting, lost, unknown
FROM v_job_summary
WHERE (CAST(:namespace AS text) IS NULL OR namespace = :namespace)
  AND (CAST(:job_id AS text) IS NULL OR job_id = :job_id);
