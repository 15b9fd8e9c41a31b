-- Deployments and how far each task group got, newest first: what `corral deployment status`
-- shows, for psql. Counts come from the allocations, as the API counts them.
CREATE OR REPLACE VIEW v_deployments AS
SELECT
    d.id,
    d.namespace,
    d.job_id,
    d.job_version,
    d.status,
    d.status_description,
    g.key AS task_group,
    (g.value ->> 'DesiredTotal')::int AS desired,
    (g.value ->> 'DesiredCanaries')::int AS canaries,
    coalesce((g.value ->> 'Promoted')::boolean, false) AS promoted,
    coalesce(c.placed, 0) AS placed,
    coalesce(c.healthy, 0) AS healthy,
    coalesce(c.unhealthy, 0) AS unhealthy,
    CASE WHEN coalesce((g.value ->> 'RequireProgressBy')::bigint, 0) > 0
         THEN to_timestamp((g.value ->> 'RequireProgressBy')::bigint / 1e9) END AS require_progress_by,
    d.create_time,
    d.modify_time
FROM deployments d
CROSS JOIN LATERAL jsonb_each(d.task_groups) g
LEFT JOIN LATERAL (
    SELECT count(*) AS placed,
           count(*) FILTER (WHERE (a.deployment_status ->> 'Healthy')::boolean) AS healthy,
           count(*) FILTER (WHERE NOT (a.deployment_status ->> 'Healthy')::boolean) AS unhealthy
    FROM allocations a
    WHERE a.deployment_id = d.id AND a.task_group = g.key
) c ON true
ORDER BY d.create_index DESC, g.key;

COMMENT ON VIEW v_deployments IS
    'Deployments per task group, newest first: status and description, desired allocations and canaries, whether promoted, allocations placed, healthy and unhealthy (counted from the allocations), and the progress deadline.';
