-- name: claim_ready
-- Claim the best ready evaluations, up to a batch of distinct jobs (a worker loop schedules them
-- together: one snapshot, one submit; docs/scheduling.md): priority, then age. One short
-- statement; the lease and fencing token are the claim, no transaction stays open while
-- scheduling. A job with an evaluation in flight is skipped; of several pending evaluations of
-- one job only the best is leased (and the unique index uq_evaluations_in_flight_job makes a
-- racing second claim of a job fail instead of running two passes of it). Each claim gets its
-- own token. Rows come back in no order. broker.claim_ready_sql writes the batch size in as a literal
-- (a parameter LIMIT would be planned anew on every call).
-- The set_config(..., true) makes the statement's own transaction commit without waiting for
-- its WAL flush: a claim is a lease, and losing one in a crash is safe (docs/scheduling.md, "How
-- scheduling works"). Run it autocommitted, so that transaction is the claim alone.
WITH candidate AS MATERIALIZED (
    SELECT e.id, e.namespace, e.job_id, e.priority, e.create_index
    FROM evaluations e
    WHERE e.status = 'pending' AND e.lease_token IS NULL
      AND e.type = ANY(:types)
      AND (e.wait_until IS NULL OR e.wait_until <= now())
      AND (e.not_before IS NULL OR e.not_before <= now())
      AND NOT EXISTS (
          SELECT 1 FROM evaluations f
          WHERE f.namespace = e.namespace AND f.job_id = e.job_id AND f.lease_token IS NOT NULL
      )
      AND NOT (SELECT pause_eval_broker FROM scheduler_config WHERE id = 1)
      AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'
    ORDER BY e.priority DESC, e.create_index
    LIMIT :batch
    FOR UPDATE OF e SKIP LOCKED
), best_per_job AS (
    SELECT DISTINCT ON (namespace, job_id) id FROM candidate
    ORDER BY namespace, job_id, priority DESC, create_index
)
UPDATE evaluations e
SET lease_token = gen_random_uuid(), lease_owner = :owner,
    lease_expires_at = now() + make_interval(secs => :lease_s), delivery_count = e.delivery_count + 1
FROM best_per_job c
WHERE e.id = c.id
RETURNING e.id, coalesce(e.namespace, '-') AS namespace, e.job_id, e.type, e.priority, e.triggered_by, e.job_modify_index, e.node_id,
          e.deployment_id, e.status, e.annotate_plan, e.delivery_count, e.create_index, e.lease_token;

-- name: claim_expired
-- Rescue an evaluation whose worker stopped renewing its lease: any worker may take it over
-- (a new token fences the old worker out) while it is under the delivery limit. Committed
-- without waiting for its flush, as claim_ready is.
WITH candidate AS MATERIALIZED (
    SELECT e.id
    FROM evaluations e
    WHERE e.lease_token IS NOT NULL AND e.lease_expires_at < now() AND e.status = 'pending'
      AND e.delivery_count < :delivery_limit AND e.type = ANY(:types)
      AND NOT (SELECT pause_eval_broker FROM scheduler_config WHERE id = 1)
      AND (SELECT set_config('synchronous_commit', 'off', true)) = 'off'
    ORDER BY e.lease_expires_at
    LIMIT 1
    FOR UPDATE OF e SKIP LOCKED
)
UPDATE evaluations e
SET lease_token = :token, lease_owner = :owner, lease_expires_at = now() + make_interval(secs => :lease_s),
    delivery_count = e.delivery_count + 1
FROM candidate c
WHERE e.id = c.id
RETURNING e.id, coalesce(e.namespace, '-') AS namespace, e.job_id, e.type, e.priority, e.triggered_by, e.job_modify_index, e.node_id,
          e.deployment_id, e.status, e.annotate_plan, e.delivery_count, e.create_index;

-- name: renew_lease
UPDATE evaluations SET lease_expires_at = now() + make_interval(secs => :lease_s)
WHERE id = :id AND lease_token = :token AND status = 'pending'
RETURNING id;

-- name: release_expired_over_limit
-- Leases that lapsed on their last allowed delivery: handed to the failure path.
SELECT id, lease_token FROM evaluations
WHERE lease_token IS NOT NULL AND lease_expires_at < now() AND status = 'pending'
  AND delivery_count >= :delivery_limit
ORDER BY lease_expires_at
LIMIT :batch
FOR UPDATE SKIP LOCKED;

-- name: unblock_class
-- Capacity appeared in a class: release blocked evals that did not rule that class out.
-- System blocked evals (blocked_nodes set) wait on their own nodes only: see unblock_nodes.
UPDATE evaluations
SET status = 'pending', modify_index = :index, modify_time = now(), delivery_count = 0,
    status_description = 'unblocked: capacity changed in class ' || :computed_class
WHERE status = 'blocked' AND blocked_nodes IS NULL
  AND (escaped_computed_class OR COALESCE(class_eligibility ->> :computed_class, 'true') <> 'false');

-- name: mark_node_unblocks
-- When capacity last appeared on each of these nodes, for the missed-unblock check of system
-- blocked evals (a node deleted meanwhile simply gets no row).
INSERT INTO node_unblocks AS u (node_id, unblock_index)
SELECT n.id, :index FROM nodes n WHERE n.id = ANY(:node_ids)
ON CONFLICT (node_id) DO UPDATE SET unblock_index = GREATEST(u.unblock_index, EXCLUDED.unblock_index);

-- name: unblock_nodes
-- Capacity appeared on these nodes: release the system blocked evals waiting on any of them
-- (Nomad's UnblockNode).
UPDATE evaluations
SET status = 'pending', modify_index = :index, modify_time = now(), delivery_count = 0,
    status_description = 'unblocked: capacity changed on a node it waits on'
WHERE status = 'blocked' AND blocked_nodes IS NOT NULL AND blocked_nodes && CAST(:node_ids AS uuid[]);

-- name: sweep_max_plan_blocked
-- Nomad retries max-plan-attempts blocked evaluations every minute whatever the class.
UPDATE evaluations
SET status = 'pending', modify_index = :index, modify_time = now(), delivery_count = 0,
    status_description = 'unblocked by the periodic sweep of max-plan-attempts evaluations'
WHERE status = 'blocked' AND triggered_by = 'max-plan-attempts';

-- name: missed_unblock
-- True when a class this eval could use got capacity after its snapshot.
SELECT EXISTS (
    SELECT 1 FROM class_unblocks u
    WHERE u.unblock_index > :snapshot_index
      AND (CAST(:escaped AS boolean) OR COALESCE(CAST(:eligibility AS jsonb) ->> u.computed_class, 'true') <> 'false')
);

-- name: missed_node_unblock
-- True when a node this system eval waits on got capacity after its snapshot.
SELECT EXISTS (
    SELECT 1 FROM node_unblocks WHERE node_id = ANY(:node_ids) AND unblock_index > :snapshot_index
);

-- name: any_expired_over_limit
SELECT EXISTS (
    SELECT 1 FROM evaluations
    WHERE lease_token IS NOT NULL AND lease_expires_at < now() AND status = 'pending'
      AND delivery_count >= :delivery_limit
);

-- name: any_max_plan_blocked
SELECT EXISTS (SELECT 1 FROM evaluations WHERE status = 'blocked' AND triggered_by = 'max-plan-attempts');

-- name: complete_eval
-- The hot path of every pass, in one statement: record the outcome (fenced by the token),
-- cancel the job's pending evaluations this pass already served (coalescing), and on success
-- cancel the job's blocked evaluation.
WITH finished AS (
    UPDATE evaluations
    SET status = :status, status_description = :description, lease_token = NULL, lease_owner = NULL,
        lease_expires_at = NULL, snapshot_index = :snapshot_index,
        failed_tg_allocs = CAST(:failed AS jsonb), queued_allocations = CAST(:queued AS jsonb),
        class_eligibility = CAST(:eligibility AS jsonb), escaped_computed_class = :escaped,
        modify_index = :index, modify_time = now()
    WHERE id = :eval_id AND lease_token = :token AND status = 'pending'
    RETURNING id
), coalesced AS (
    UPDATE evaluations
    SET status = 'canceled', status_description = 'coalesced into evaluation ' || CAST(:eval_id AS text),
        modify_index = :index, modify_time = now()
    WHERE namespace = :namespace AND job_id = :job_id AND status = 'pending' AND lease_token IS NULL
      AND id <> :eval_id AND create_index <= :snapshot_index
      AND (wait_until IS NULL OR wait_until <= CAST(:scheduled_at AS timestamptz))
      AND EXISTS (SELECT 1 FROM finished)
    RETURNING id
), unblocked AS (
    UPDATE evaluations
    SET status = 'canceled', status_description = 'evaluation ' || CAST(:eval_id AS text) || ' successful',
        modify_index = :index, modify_time = now()
    WHERE namespace = :namespace AND job_id = :job_id AND status = 'blocked'
      AND CAST(:cancel_blocked AS boolean) AND EXISTS (SELECT 1 FROM finished)
    RETURNING id
)
SELECT (SELECT count(*) FROM finished) AS finished, (SELECT count(*) FROM coalesced) AS coalesced;

-- name: complete_eval_success
-- complete_eval for a pass that placed everything, with take_index's logging of this
-- transaction's own index against 'evaluations' in the same statement (one statement, no
-- pipeline: the broker's hottest write). `known` is take_index's check that the name is a
-- state index name (it always is: the initial migration logs it).
WITH taken AS MATERIALIZED (SELECT state_index_own() AS index), known AS MATERIALIZED (
    SELECT true AS known FROM state_index s WHERE s.name = 'evaluations' LIMIT 1
), stamped AS (
    INSERT INTO state_index (name, value) SELECT 'evaluations', t.index FROM taken t CROSS JOIN known
    ON CONFLICT (name, value) DO NOTHING
    RETURNING name
), finished AS (
    UPDATE evaluations
    SET status = 'complete', status_description = :description, lease_token = NULL, lease_owner = NULL,
        lease_expires_at = NULL, snapshot_index = :snapshot_index, failed_tg_allocs = '{}',
        queued_allocations = CAST(:queued AS jsonb), class_eligibility = CAST(:eligibility AS jsonb),
        escaped_computed_class = :escaped, modify_index = (SELECT index FROM taken), modify_time = now()
    WHERE id = :eval_id AND lease_token = :token AND status = 'pending'
    RETURNING id
), coalesced AS (
    UPDATE evaluations
    SET status = 'canceled', status_description = 'coalesced into evaluation ' || CAST(:eval_id AS text),
        modify_index = (SELECT index FROM taken), modify_time = now()
    WHERE namespace = :namespace AND job_id = :job_id AND status = 'pending' AND lease_token IS NULL
      AND id <> :eval_id AND create_index <= :snapshot_index
      AND (wait_until IS NULL OR wait_until <= CAST(:scheduled_at AS timestamptz))
      AND EXISTS (SELECT 1 FROM finished)
    RETURNING id
), unblocked AS (
    UPDATE evaluations
    SET status = 'canceled', status_description = 'evaluation ' || CAST(:eval_id AS text) || ' successful',
        modify_index = (SELECT index FROM taken), modify_time = now()
    WHERE namespace = :namespace AND job_id = :job_id AND status = 'blocked' AND EXISTS (SELECT 1 FROM finished)
    RETURNING id
)
SELECT (SELECT count(*) FROM finished) AS finished, (SELECT count(*) FROM known) AS stamped;
