-- Version 2 of the allocations' event triggers (events_v1.sql): the snapshot leaves out
-- placement_metrics. An allocation's placement metrics (about 550 bytes of text, written once at
-- placement and never changed) made every PlanResult snapshot a second copy of them, and pushed
-- the jsonb past the size at which Postgres compresses it: most of what metrics cost Postgres in
-- a big plan (issue 40). The stream reads them from the allocation when it renders the event
-- (sql/queries/events.sql, event_rows_Allocation); a snapshot written by version 1 still carries
-- its own copy, which wins.

CREATE OR REPLACE FUNCTION corral_event_allocation_insert_v2() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    SELECT n.modify_index, 'Allocation', 'PlanResult', n.id::text, n.namespace,
           ARRAY[n.job_id, COALESCE(n.deployment_id::text, '')], to_jsonb(n) - 'placement_metrics'
    FROM new_rows n;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_allocation_update_v2() RETURNS trigger
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
        NEW.id::text, NEW.namespace, ARRAY[NEW.job_id, COALESCE(NEW.deployment_id::text, '')],
        to_jsonb(NEW) - 'placement_metrics');
    RETURN NULL;
END $$;

CREATE OR REPLACE TRIGGER events_insert AFTER INSERT ON allocations REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION corral_event_allocation_insert_v2();
CREATE OR REPLACE TRIGGER events_update AFTER UPDATE ON allocations FOR EACH ROW
    WHEN (NEW.modify_index IS DISTINCT FROM OLD.modify_index OR OLD.xmin = NEW.xmin)
    EXECUTE FUNCTION corral_event_allocation_update_v2();
