-- name: task_group_summaries
-- Nomad's per-task-group job summary, from the v_job_summary view.
SELECT namespace, job_id, task_group, queued, complete, failed, running, starting, lost, unknown
FROM v_job_summary
WHERE (:namespace IS NULL OR namespace = :namespace)
  AND (:job_id IS NULL OR job_id = :job_id);
