-- Nomad's job summary, per task group, computed from allocations and the latest evaluation.
-- v2 (revision 0042): the allocations are counted per job and group in one hashed aggregate,
-- then joined to the jobs' groups; v1 sorted every allocation by job and group to merge them
-- with the jobs (about half of a 500-job list's time in this view). Same columns, same rows.
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
    COALESCE(c.starting, 0) AS starting,
    COALESCE(c.running, 0) AS running,
    COALESCE(c.complete, 0) AS complete,
    COALESCE(c.failed, 0) AS failed,
    COALESCE(c.lost, 0) AS lost,
    COALESCE(c.unknown, 0) AS unknown
FROM jobs j
CROSS JOIN LATERAL (
    SELECT g ->> 'Name' AS name, COALESCE((g ->> 'Count')::bigint, 1) AS desired
    FROM jsonb_array_elements(j.spec -> 'TaskGroups') g
) tg
LEFT JOIN (
    SELECT
        a.namespace,
        a.job_id,
        a.task_group,
        count(*) FILTER (WHERE a.client_status = 'pending') AS starting,
        count(*) FILTER (WHERE a.client_status = 'running') AS running,
        count(*) FILTER (WHERE a.client_status = 'complete') AS complete,
        count(*) FILTER (WHERE a.client_status = 'failed') AS failed,
        count(*) FILTER (WHERE a.client_status = 'lost') AS lost,
        count(*) FILTER (WHERE a.client_status = 'unknown') AS unknown
    FROM allocations a
    GROUP BY a.namespace, a.job_id, a.task_group
) c ON c.namespace = j.namespace AND c.job_id = j.id AND c.task_group = tg.name
WHERE j.purged_at IS NULL
ORDER BY j.namespace, j.id, tg.name;

COMMENT ON VIEW v_job_summary IS
    'One row per job and task group: desired count, allocations queued by the latest evaluation, '
    'and allocation counts by client status (Nomad''s job summary). Purged jobs are left out.';
