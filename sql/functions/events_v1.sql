-- The event stream's outbox (GET /v1/event/stream): one row trigger per watched table records,
-- in the transaction of the change itself, the event Nomad's state store would publish for it.
-- So an event exists exactly when its change committed: nothing committed is missed (not even
-- across an API restart) and nothing rolled back appears. Only writes that took a state index
-- count (the trigger's WHEN clause: a new modify_index, or a second write of the same row in the
-- same transaction, which replaces the first one's snapshot at read time); leases, heartbeats and
-- other index-free writes record nothing. Each function is kept to one INSERT: it runs on every
-- allocation write. The payload is a snapshot of the row (to_jsonb), rendered into Nomad's JSON
-- by the API's encoders when the stream reads it.

CREATE OR REPLACE FUNCTION corral_event_job_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (
        NEW.modify_index, 'Job',
        CASE
            WHEN NEW.purged_at IS NOT NULL OR (NEW.stop AND (TG_OP = 'INSERT' OR NOT OLD.stop)) THEN 'JobDeregistered'
            ELSE 'JobRegistered'
        END,
        NEW.id, NEW.namespace, NULL, to_jsonb(NEW));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_evaluation_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (
        NEW.modify_index, 'Evaluation', 'EvaluationUpdated', NEW.id::text, COALESCE(NEW.namespace, ''),
        ARRAY[NEW.job_id, COALESCE(NEW.deployment_id::text, '')], to_jsonb(NEW));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_allocation_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (
        NEW.modify_index, 'Allocation',
        CASE
            WHEN TG_OP = 'INSERT' THEN 'PlanResult'
            WHEN NEW.client_status IS DISTINCT FROM OLD.client_status
              OR NEW.task_states IS DISTINCT FROM OLD.task_states THEN 'AllocationUpdated'
            WHEN NEW.deployment_status IS DISTINCT FROM OLD.deployment_status THEN 'DeploymentAllocHealth'
            WHEN NEW.desired_transition IS DISTINCT FROM OLD.desired_transition THEN 'AllocationUpdateDesiredStatus'
            ELSE 'PlanResult'
        END,
        NEW.id::text, NEW.namespace, ARRAY[NEW.job_id, COALESCE(NEW.deployment_id::text, '')], to_jsonb(NEW));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_deployment_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (
        NEW.modify_index, 'Deployment',
        CASE
            WHEN TG_OP = 'UPDATE' AND NEW.task_groups IS DISTINCT FROM OLD.task_groups
              AND jsonb_path_query_array(NEW.task_groups, '$.*.Promoted')
                  IS DISTINCT FROM jsonb_path_query_array(OLD.task_groups, '$.*.Promoted')
                THEN 'DeploymentPromotion'
            ELSE 'DeploymentStatusUpdate'
        END,
        NEW.id::text, NEW.namespace, ARRAY[NEW.job_id], to_jsonb(NEW));
    RETURN NULL;
END $$;

-- Nodes carry no namespace (Nomad leaves it empty). The secret's hash never leaves the table.
CREATE OR REPLACE FUNCTION corral_event_node_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (
        NEW.modify_index, 'Node',
        CASE
            WHEN TG_OP = 'INSERT' THEN 'NodeRegistration'
            WHEN NEW.drain_strategy IS DISTINCT FROM OLD.drain_strategy OR NEW.drain IS DISTINCT FROM OLD.drain
                THEN 'NodeDrain'
            WHEN NEW.scheduling_eligibility IS DISTINCT FROM OLD.scheduling_eligibility THEN 'NodeEligibility'
            ELSE 'NodeStreamEvent'
        END,
        NEW.id::text, '', NULL, to_jsonb(NEW) - 'secret_hash');
    RETURN NULL;
END $$;
