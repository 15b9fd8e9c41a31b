-- name: next_plan
-- Plans by priority, then submit order.
SELECT id, eval_id, eval_token, namespace, job_id, priority, snapshot_index, all_at_once, node_update,
       node_allocation, node_preemptions, deployment, deployment_updates
FROM plans WHERE status = 'pending'
ORDER BY priority DESC, id
LIMIT 1;

-- name: fence_term
-- Every leader-only commit checks its term. FOR KEY SHARE, not an UPDATE: the renewer (another
-- connection) must be able to bump renewed_at while a long apply runs, or the holder would look
-- stale and be replaced mid-apply. A takeover terminates the old holder's session first.
SELECT term FROM leader_terms WHERE role = :role AND term = :term FOR KEY SHARE;

-- name: eval_still_owned
-- Locked until the plan commits: a lease that lapses meanwhile cannot be rescued (the claim
-- skips locked rows) and a lapsed lease is not honoured.
SELECT 1 FROM evaluations
WHERE id = :eval_id AND lease_token = :token AND status = 'pending' AND lease_expires_at > now()
FOR UPDATE;

-- name: plan_nodes
SELECT id, name, datacenter, node_class, node_pool, computed_class, status, scheduling_eligibility, drain,
       attributes, meta, drivers, cpu_shares, memory_mb, disk_mb, reserved_cpu, reserved_memory_mb,
       reserved_disk_mb, reserved_ports
FROM nodes WHERE id = ANY(:ids);

-- name: plan_node_usage
SELECT node_id, cpu, memory_mb, disk_mb FROM node_usage WHERE node_id = ANY(:ids);

-- name: plan_node_ports
SELECT node_id, host_ports FROM allocations
WHERE node_id = ANY(:ids) AND host_ports <> '{}'
  AND desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown');

-- name: plan_touched_allocs
SELECT id, node_id, desired_status, client_status, cpu, memory_mb, disk_mb, host_ports
FROM allocations WHERE id = ANY(:ids);

-- name: preempted_jobs
-- The jobs that lose allocations to a plan's preemptions: each gets one `preemption` evaluation.
SELECT DISTINCT j.namespace, j.id, j.type, j.priority, j.job_modify_index
FROM allocations a JOIN jobs j ON j.namespace = a.namespace AND j.id = a.job_id
WHERE a.id = ANY(:ids)
ORDER BY j.namespace, j.id;

-- name: mark_preempted_by
-- After the preemptors exist (the foreign key needs them): who evicted each victim.
UPDATE allocations a SET preempted_by_allocation = v.by
FROM unnest(CAST(:victims AS uuid[]), CAST(:bys AS uuid[])) AS v(victim, by)
WHERE a.id = v.victim;
