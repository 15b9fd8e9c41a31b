-- Plans waiting for the applier, in the order it takes them.
CREATE OR REPLACE VIEW v_plan_queue AS
SELECT
    p.id AS plan_id,
    p.eval_id,
    p.namespace,
    p.job_id,
    p.priority,
    p.attempt,
    p.all_at_once,
    p.snapshot_index,
    (SELECT count(*) FROM jsonb_object_keys(p.node_allocation)) AS nodes,
    (SELECT COALESCE(sum(jsonb_array_length(v)), 0) FROM jsonb_each(p.node_allocation) x(k, v))
        AS placements,
    (SELECT COALESCE(sum(jsonb_array_length(v)), 0) FROM jsonb_each(p.node_update) x(k, v))
        AS stops,
    (SELECT COALESCE(sum(jsonb_array_length(v)), 0) FROM jsonb_each(p.node_preemptions) x(k, v))
        AS preemptions,
    p.created_at,
    date_trunc('milliseconds', now() - p.created_at) AS age
FROM plans p
WHERE p.status = 'pending'
ORDER BY p.priority DESC, p.id;

COMMENT ON VIEW v_plan_queue IS
    'Plans submitted by workers and not yet decided by the applier, highest priority first, '
    'with how many nodes, placements, stops and preemptions each carries.';
