-- Nomad's job summary, per task group, computed from allocations and the latest evaluation.
CREATE OR REPLACE VIEW v_job_summary AS
SELECT
    j.namespace,
    j.id AS job_id,
    j.type,
    j.status AS job_status,
    j.stop,
    j.version,
    tg.name AS task_group,
    tg.desired,
    COALESCE((
        SELECT (e.queued_allocations ->> tg.name)::bigint
        FROM evaluations e
        WHERE e.namespace = j.namespace AND e.job_id = j.id
          AND e.status IN ('complete', 'blocked')
        ORDER BY e.create_index DESC
        LIMIT 1
    ), 0) AS queued,
    count(a.id) FILTER (WHERE a.client_status = 'pending') AS starting,
    count(a.id) FILTER (WHERE a.client_status = 'running') AS running,
    count(a.id) FILTER (WHERE a.client_status = 'complete') AS complete,
    count(a.id) FILTER (WHERE a.client_status = 'failed') AS failed,
    count(a.id) FILTER (WHERE a.client_status = 'lost') AS lost,
    count(a.id) FILTER (WHERE a.client_status = 'unknown') AS unknown
FROM jobs j
CROSS JOIN LATERAL (
    SELECT g ->> 'Name' AS name, COALESCE((g ->> 'Count')::bigint, 1) AS desired
    FROM jsonb_array_elements(j.spec -> 'TaskGroups') g
) tg
LEFT JOIN allocations a
    ON a.namespace = j.namespace AND a.job_id = j.id AND a.task_group = tg.name
WHERE j.purged_at IS NULL
GROUP BY j.namespace, j.id, tg.name, tg.desired
ORDER BY j.namespace, j.id, tg.name;

COMMENT ON VIEW v_job_summary IS
    'One row per job and task group: desired count, allocations queued by the latest evaluation, '
    'and allocation counts by client status (Nomad''s job summary). Purged jobs are left out.';
