-- Pending evaluations in the order workers will claim them, with why each is waiting.
CREATE OR REPLACE VIEW v_eval_queue AS
SELECT
    e.id,
    e.namespace,
    e.job_id,
    e.type,
    e.priority,
    e.triggered_by,
    CASE
        WHEN e.lease_token IS NOT NULL THEN 'in-flight'
        WHEN GREATEST(e.wait_until, e.not_before) > now() THEN 'delayed'
        WHEN EXISTS (
            SELECT 1 FROM evaluations f
            WHERE f.namespace = e.namespace AND f.job_id = e.job_id AND f.lease_token IS NOT NULL
        ) THEN 'behind-in-flight'
        ELSE 'ready'
    END AS state,
    GREATEST(e.wait_until, e.not_before) AS claimable_at,
    e.delivery_count,
    e.lease_owner,
    e.lease_expires_at,
    e.create_index,
    e.create_time,
    date_trunc('second', now() - e.create_time) AS age
FROM evaluations e
WHERE e.status = 'pending'
ORDER BY e.lease_token IS NULL, e.priority DESC, e.create_index;

COMMENT ON VIEW v_eval_queue IS
    'Pending evaluations in claim order (priority, then age). state: in-flight (claimed by a worker), '
    'delayed (wait_until or nack back-off in the future), behind-in-flight (its job already has one '
    'in flight), ready (next to be claimed).';
