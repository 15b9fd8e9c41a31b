-- The event stream's outbox (GET /v1/event/stream): triggers on jobs, evaluations, allocations,
-- deployments and nodes record, in the transaction of the change itself, the event Nomad's state
-- store would publish for it. So an event exists exactly when its change committed: nothing
-- committed is missed (not even across an API restart) and nothing rolled back appears. The
-- payload is a snapshot of the row (to_jsonb), rendered into Nomad's JSON by the API's encoders
-- when the stream reads it.
--
-- Inserts are recorded once per statement from its transition table: one INSERT ... SELECT for
-- a whole COPY of placements instead of one per row. Updates are recorded per row, and only for
-- writes that took a state index (the trigger's WHEN clause: a new modify_index, or a second
-- write of a row the same transaction already wrote, whose snapshot then replaces the first at
-- read time); leases, heartbeats and other index-free writes never call a function.

-- Inserts ------------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION corral_event_job_insert_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    SELECT n.modify_index, 'Job', CASE WHEN n.stop THEN 'JobDeregistered' ELSE 'JobRegistered' END,
           n.id, n.namespace, NULL, to_jsonb(n)
    FROM new_rows n;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_evaluation_insert_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    SELECT n.modify_index, 'Evaluation', 'EvaluationUpdated', n.id::text, COALESCE(n.namespace, ''),
           ARRAY[n.job_id, COALESCE(n.deployment_id::text, '')], to_jsonb(n)
    FROM new_rows n;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_allocation_insert_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    SELECT n.modify_index, 'Allocation', 'PlanResult', n.id::text, n.namespace,
           ARRAY[n.job_id, COALESCE(n.deployment_id::text, '')], to_jsonb(n)
    FROM new_rows n;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_deployment_insert_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    SELECT n.modify_index, 'Deployment', 'DeploymentStatusUpdate', n.id::text, n.namespace, ARRAY[n.job_id],
           to_jsonb(n)
    FROM new_rows n;
    RETURN NULL;
END $$;

-- Nodes carry no namespace (Nomad leaves it empty). The secret's hash never leaves the table.
CREATE OR REPLACE FUNCTION corral_event_node_insert_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    SELECT n.modify_index, 'Node', 'NodeRegistration', n.id::text, '', NULL, to_jsonb(n) - 'secret_hash'
    FROM new_rows n;
    RETURN NULL;
END $$;

-- Updates ------------------------------------------------------------------------------------

CREATE OR REPLACE FUNCTION corral_event_job_update_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (
        NEW.modify_index, 'Job',
        CASE
            WHEN NEW.purged_at IS NOT NULL OR (NEW.stop AND NOT OLD.stop) THEN 'JobDeregistered'
            ELSE 'JobRegistered'
        END,
        NEW.id, NEW.namespace, NULL, to_jsonb(NEW));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_evaluation_update_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (
        NEW.modify_index, 'Evaluation', 'EvaluationUpdated', NEW.id::text, COALESCE(NEW.namespace, ''),
        ARRAY[NEW.job_id, COALESCE(NEW.deployment_id::text, '')], to_jsonb(NEW));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_allocation_update_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (
        NEW.modify_index, 'Allocation',
        CASE
            WHEN NEW.client_status IS DISTINCT FROM OLD.client_status
              OR NEW.task_states IS DISTINCT FROM OLD.task_states THEN 'AllocationUpdated'
            WHEN NEW.deployment_status IS DISTINCT FROM OLD.deployment_status THEN 'DeploymentAllocHealth'
            WHEN NEW.desired_transition IS DISTINCT FROM OLD.desired_transition THEN 'AllocationUpdateDesiredStatus'
            ELSE 'PlanResult'
        END,
        NEW.id::text, NEW.namespace, ARRAY[NEW.job_id, COALESCE(NEW.deployment_id::text, '')], to_jsonb(NEW));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_deployment_update_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (
        NEW.modify_index, 'Deployment',
        CASE
            WHEN jsonb_path_query_array(NEW.task_groups, '$.*.Promoted')
                 IS DISTINCT FROM jsonb_path_query_array(OLD.task_groups, '$.*.Promoted') THEN 'DeploymentPromotion'
            ELSE 'DeploymentStatusUpdate'
        END,
        NEW.id::text, NEW.namespace, ARRAY[NEW.job_id], to_jsonb(NEW));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_node_update_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (
        NEW.modify_index, 'Node',
        CASE
            WHEN NEW.drain_strategy IS DISTINCT FROM OLD.drain_strategy OR NEW.drain IS DISTINCT FROM OLD.drain
                THEN 'NodeDrain'
            WHEN NEW.scheduling_eligibility IS DISTINCT FROM OLD.scheduling_eligibility THEN 'NodeEligibility'
            ELSE 'NodeStreamEvent'
        END,
        NEW.id::text, '', NULL, to_jsonb(NEW) - 'secret_hash');
    RETURN NULL;
END $$;
