-- name: next_plan
-- Plans by priority, then submit order.
SELECT id, eval_id, eval_token, namespace, job_id, all_at_once, node_update, node_allocation, node_preemptions
FROM plans WHERE status = 'pending'
ORDER BY priority DESC, id
LIMIT 1;

-- name: fence_term
-- Every applier commit starts here: a deposed holder's term no longer matches.
UPDATE leader_terms SET renewed_at = now() WHERE role = :role AND term = :term RETURNING term;

-- name: eval_still_owned
SELECT 1 FROM evaluations WHERE id = :eval_id AND lease_token = :token AND status = 'pending';

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
