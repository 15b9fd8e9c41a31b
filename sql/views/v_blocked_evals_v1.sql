-- Evaluations waiting for capacity, and what they are waiting for.
CREATE OR REPLACE VIEW v_blocked_evals AS
SELECT
    e.id,
    e.namespace,
    e.job_id,
    e.type,
    e.priority,
    e.triggered_by,
    e.node_id,
    e.escaped_computed_class,
    (SELECT count(*) FROM jsonb_each(e.class_eligibility) c WHERE c.value = 'false'::jsonb)
        AS ineligible_classes,
    (SELECT string_agg(g, ',' ORDER BY g) FROM jsonb_object_keys(e.failed_tg_allocs) g)
        AS failed_task_groups,
    (SELECT COALESCE(sum(q.value::text::bigint), 0)::bigint FROM jsonb_each(e.queued_allocations) q)
        AS queued_allocations,
    e.previous_eval,
    e.snapshot_index,
    e.status_description,
    e.create_time,
    date_trunc('second', now() - e.create_time) AS age
FROM evaluations e
WHERE e.status = 'blocked'
ORDER BY e.priority DESC, e.create_index;

COMMENT ON VIEW v_blocked_evals IS
    'Blocked evaluations (queued-allocs or max-plan-attempts): the task groups that failed to place, '
    'how many allocations wait, and whether any node change (escaped) or only eligible classes unblock them.';
