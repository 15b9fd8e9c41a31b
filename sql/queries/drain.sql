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

-- name: migrations_in_flight
-- Per job and group: allocations on draining nodes asked to migrate whose replacement is not
-- running yet (these pace the next batch, as healthy replacements do in Nomad).
SELECT a.namespace, a.job_id, a.task_group, count(*) AS in_flight
FROM allocations a JOIN nodes n ON n.id = a.node_id AND n.drain_strategy IS NOT NULL
WHERE COALESCE((a.desired_transition ->> 'Migrate')::boolean, false)
  AND a.namespace = ANY(:namespaces) AND a.job_id = ANY(:job_ids)
  AND NOT EXISTS (
      SELECT 1 FROM allocations r WHERE r.previous_allocation = a.id AND r.client_status IN ('running', 'complete')
  )
  AND NOT (a.client_status IN ('complete', 'failed', 'lost') AND a.desired_status = 'run')
GROUP BY a.namespace, a.job_id, a.task_group;

-- name: drain_remaining
-- What still keeps a drain open: live allocations on the node (system ones unless ignored).
SELECT count(*) FROM allocations a JOIN jobs j ON j.namespace = a.namespace AND j.id = a.job_id
WHERE a.node_id = :node_id
  AND a.desired_status = 'run' AND a.client_status IN ('pending', 'running', 'unknown')
  AND (NOT CAST(:ignore_system AS boolean) OR j.type NOT IN ('system', 'sysbatch'));
