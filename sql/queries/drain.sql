-- name: draining_nodes
SELECT id FROM nodes WHERE drain_strategy IS NOT NULL ORDER BY id;

-- name: drain_candidates
-- Live allocations on a draining node not yet asked to migrate, with what the drainer needs
-- to respect each group's migrate.max_parallel.
SELECT a.id, a.namespace, a.job_id, a.task_group, j.type AS job_type, j.priority, j.job_modify_index,
       COALESCE((g.value -> 'Migrate' ->> 'MaxParallel')::int, 1) AS max_parallel
FROM allocations a
JOIN jobs j ON j.namespace = a.namespace AND j.id = a.job_id
JOIN job_versions v ON v.namespace = a.namespace AND v.job_id = a.job_id AND v.version = a.job_version
LEFT JOIN LATERAL (
    SELECT value FROM jsonb_array_elements(v.spec -> 'TaskGroups') WHERE value ->> 'Name' = a.task_group
) g ON true
WHERE a.node_id = :node_id
  AND a.desired_status = 'run' AND a.client_status IN ('pending', 'running', 'unknown')
  AND COALESCE((a.desired_transition ->> 'Migrate')::boolean, false) = false
ORDER BY a.create_index, a.id;

-- name: drain_migrations
-- Allocations on draining nodes already asked to migrate, of the given jobs, one row per
-- replacement (none: NULL replacement columns), with the replacement's health verdict (the
-- client judges it by the group's migrate block). They pace the next batch
-- (app/leader/drain_rules.py).
SELECT a.id, a.namespace, a.job_id, a.task_group, j.type AS job_type, a.client_status, a.desired_status,
       r.client_status AS replacement_status, (r.deployment_status ->> 'Healthy')::boolean AS replacement_healthy
FROM allocations a
JOIN nodes n ON n.id = a.node_id AND n.drain_strategy IS NOT NULL
JOIN jobs j ON j.namespace = a.namespace AND j.id = a.job_id
LEFT JOIN allocations r ON r.previous_allocation = a.id
WHERE COALESCE((a.desired_transition ->> 'Migrate')::boolean, false)
  AND a.namespace = ANY(:namespaces) AND a.job_id = ANY(:job_ids)
ORDER BY a.id, r.id;

-- name: drain_remaining
-- What still keeps a drain open: live allocations on the node (system ones unless ignored).
SELECT count(*) FROM allocations a JOIN jobs j ON j.namespace = a.namespace AND j.id = a.job_id
WHERE a.node_id = :node_id
  AND a.desired_status = 'run' AND a.client_status IN ('pending', 'running', 'unknown')
  AND (NOT CAST(:ignore_system AS boolean) OR j.type NOT IN ('system', 'sysbatch'));
