-- name: metrics_broker
-- Pending evaluations by the state v_eval_queue gives them: Nomad's broker ready, unacked,
-- pending (behind one of the same job) and waiting (delayed) totals.
SELECT state, count(*) AS n FROM v_eval_queue GROUP BY state;

-- name: metrics_blocked
SELECT count(*) AS total, count(*) FILTER (WHERE escaped_computed_class) AS escaped
FROM evaluations WHERE status = 'blocked';

-- name: metrics_plan_queue
SELECT count(*) AS n FROM plans WHERE status = 'pending';

-- name: metrics_heartbeats
-- Nodes the servers expect a heartbeat from (Nomad's heartbeat.active: live TTL timers).
SELECT count(*) AS n
FROM node_heartbeats h JOIN nodes n ON n.id = h.node_id
WHERE n.status IN ('initializing', 'ready');

-- name: metrics_job_status
SELECT status, count(*) AS n FROM jobs WHERE purged_at IS NULL GROUP BY status;

-- name: metrics_job_summary
SELECT namespace, job_id, task_group, queued, starting, running, complete, failed, lost, unknown
FROM v_job_summary;

-- name: metrics_node_usage
-- What Nomad's clients report as nomad.client.allocated.* and unallocated.*, per live node.
SELECT id, name, datacenter, node_class, node_pool,
       cpu_used, cpu_capacity, memory_mb_used, memory_mb_capacity, disk_mb_used, disk_mb_capacity
FROM v_node_usage
WHERE status <> 'down';
