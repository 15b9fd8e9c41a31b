-- name: snapshot_indexes
SELECT name, value FROM state_index WHERE name IN ('_global', 'nodes');

-- name: snapshot_nodes
SELECT id, name, datacenter, node_class, node_pool, computed_class, status, scheduling_eligibility, drain,
       attributes, meta, drivers, cpu_shares, memory_mb, disk_mb, reserved_cpu, reserved_memory_mb,
       reserved_disk_mb, reserved_ports
FROM nodes;

-- name: snapshot_usage
SELECT node_id, cpu, memory_mb, disk_mb FROM node_usage WHERE live_allocs > 0;

-- name: snapshot_ports
SELECT node_id, host_ports FROM allocations
WHERE desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown') AND host_ports <> '{}';

-- name: snapshot_job
SELECT spec, version, job_modify_index, create_index, stop, purged_at FROM jobs
WHERE namespace = :namespace AND id = :job_id;

-- name: snapshot_job_allocations
SELECT id, namespace, job_id, job_version, task_group, name, node_id, node_name, eval_id, desired_status,
       client_status, cpu, memory_mb, memory_max_mb, disk_mb, allocated_resources, previous_allocation,
       deployment_id, followup_eval_id, reschedule_tracker, desired_transition, create_index, modify_index
FROM allocations WHERE namespace = :namespace AND job_id = :job_id;

-- name: snapshot_job_versions
SELECT version, spec, job_modify_index FROM job_versions
WHERE namespace = :namespace AND job_id = :job_id AND version = ANY(:versions);

-- name: snapshot_config
SELECT scheduler_algorithm, preemption_system, preemption_sysbatch, preemption_batch, preemption_service,
       memory_oversubscription, pause_eval_broker
FROM scheduler_config WHERE id = 1;
