-- Garbage-collection runs, newest first: what each removed, and how long it held locks.
-- v2: adds timeouts (batches cancelled by statement_timeout and retried smaller).
CREATE OR REPLACE VIEW v_gc_runs AS
SELECT
    g.id,
    g.kind,
    g.status,
    g.started_at,
    date_trunc('millisecond', coalesce(g.finished_at, now()) - g.started_at) AS duration,
    (SELECT coalesce(sum(value::bigint), 0) FROM jsonb_each_text(g.removed)) AS rows_removed,
    g.removed,
    g.batches,
    g.longest_batch_ms,
    g.thresholds,
    g.worker,
    g.eval_id,
    g.error,
    g.timeouts
FROM gc_runs g
ORDER BY g.id DESC;

COMMENT ON VIEW v_gc_runs IS
    'Garbage-collection runs, newest first: kind, outcome, rows removed per kind and in total, batches, the longest batch (lock hold) in ms, and batches retried smaller after a statement timeout.';
