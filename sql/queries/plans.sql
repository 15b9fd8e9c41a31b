-- The worker's side of plans (app/pipeline/plans.py): submit and verdict, one statement each,
-- prepared on the worker's raw psycopg connection.

-- name: submit_plan
-- The fence and the insert in one autocommitted statement. `owned` reads the evaluation's lease
-- in the statement's snapshot; the plan row is written only while the token still holds (a
-- token that moves on afterwards is the applier's to refuse: it re-checks the lease, locked,
-- in the batch that takes the plan). A retried submit (an ambiguous commit the worker did not
-- see) finds its row through `earlier` instead of writing a second plan. The NOTIFY on
-- corral_plans (delivered at commit, a hint only) wakes the applier, and only for a plan written.
WITH owned AS MATERIALIZED (
    SELECT id FROM evaluations
    WHERE id = :eval_id AND lease_token = :token AND status = 'pending'
), inserted AS (
    INSERT INTO plans (eval_id, eval_token, attempt, namespace, job_id, priority, all_at_once, snapshot_index,
                       node_update, node_allocation, node_preemptions, deployment, deployment_updates, completion,
                       placement_metrics)
    SELECT id, :token, :attempt, :namespace, :job_id, :priority, :all_at_once, :snapshot_index,
           CAST(:node_update AS jsonb), CAST(:node_allocation AS jsonb), CAST(:node_preemptions AS jsonb),
           CAST(:deployment AS jsonb), CAST(:deployment_updates AS jsonb), CAST(:completion AS jsonb),
           CAST(:placement_metrics AS text)
    FROM owned
    ON CONFLICT (eval_id, eval_token, attempt) DO NOTHING
    RETURNING id
), earlier AS (
    SELECT p.id FROM plans p
    WHERE p.eval_id = :eval_id AND p.eval_token = :token AND p.attempt = :attempt
), woken AS (
    SELECT pg_notify('corral_plans', '') FROM inserted
)
SELECT EXISTS (SELECT 1 FROM owned) AS owned,
       COALESCE((SELECT id FROM inserted), (SELECT id FROM earlier)) AS plan_id,
       (SELECT count(*) FROM woken) AS woken;

-- name: submit_plan_before_0037
-- submit_plan on the schema before revision 0037 (a rolling upgrade: the roles start on it and
-- it is migrated under them): the placements' metrics ride inside node_allocation.
WITH owned AS MATERIALIZED (
    SELECT id FROM evaluations
    WHERE id = :eval_id AND lease_token = :token AND status = 'pending'
), inserted AS (
    INSERT INTO plans (eval_id, eval_token, attempt, namespace, job_id, priority, all_at_once, snapshot_index,
                       node_update, node_allocation, node_preemptions, deployment, deployment_updates, completion)
    SELECT id, :token, :attempt, :namespace, :job_id, :priority, :all_at_once, :snapshot_index,
           CAST(:node_update AS jsonb), CAST(:node_allocation AS jsonb), CAST(:node_preemptions AS jsonb),
           CAST(:deployment AS jsonb), CAST(:deployment_updates AS jsonb), CAST(:completion AS jsonb)
    FROM owned
    ON CONFLICT (eval_id, eval_token, attempt) DO NOTHING
    RETURNING id
), earlier AS (
    SELECT p.id FROM plans p
    WHERE p.eval_id = :eval_id AND p.eval_token = :token AND p.attempt = :attempt
), woken AS (
    SELECT pg_notify('corral_plans', '') FROM inserted
)
SELECT EXISTS (SELECT 1 FROM owned) AS owned,
       COALESCE((SELECT id FROM inserted), (SELECT id FROM earlier)) AS plan_id,
       (SELECT count(*) FROM woken) AS woken;

-- name: plan_id_of_attempt
-- A submit that met a concurrent insert of the same attempt (ON CONFLICT waited for it, and the
-- statement's snapshot predates it): that plan's id, read in a fresh snapshot.
SELECT id FROM plans WHERE eval_id = :eval_id AND eval_token = :token AND attempt = :attempt;

-- name: plan_verdict
-- The applier's verdict as the worker needs it, or no row while the plan waits: the counts
-- only (no allocation IDs to decode), the plan's status, and whether the applier completed the
-- evaluation in the same commit.
SELECT p.status,
       (SELECT count(*) FROM jsonb_each(r.node_allocation) n, jsonb_array_elements(n.value)) AS placed,
       (SELECT count(*) FROM jsonb_each(r.node_update) n, jsonb_array_elements(n.value)) AS stopped,
       cardinality(r.rejected_nodes) AS rejected_nodes,
       r.refresh_index,
       r.completed_eval
FROM plan_results r JOIN plans p ON p.id = r.plan_id
WHERE r.plan_id = :plan_id;

-- name: plan_verdicts
-- plan_verdict for several plans in one statement (a batch's waiter whose wait ended without
-- their notification: the poll interval, a reconnect): a row per plan that has its verdict.
SELECT r.plan_id,
       p.status,
       (SELECT count(*) FROM jsonb_each(r.node_allocation) n, jsonb_array_elements(n.value)) AS placed,
       (SELECT count(*) FROM jsonb_each(r.node_update) n, jsonb_array_elements(n.value)) AS stopped,
       cardinality(r.rejected_nodes) AS rejected_nodes,
       r.refresh_index,
       r.completed_eval
FROM plan_results r JOIN plans p ON p.id = r.plan_id
WHERE r.plan_id = ANY(CAST(:plan_ids AS bigint[]));
