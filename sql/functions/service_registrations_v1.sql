-- The service catalog follows its allocations (Nomad's state store does the same in the
-- transaction that changes them): an allocation whose client status turns terminal
-- (complete, failed, lost) loses its registrations, and so does every allocation of a node
-- that goes down. Triggers, so that no path that writes those statuses (client updates, the
-- applier's plans, the leader's heartbeat expiry) can forget it; a registration that arrives
-- late for a terminal allocation is refused by the upsert itself (sql/queries/services.sql).
-- Each delete takes the state index for service_registrations, so blocking reads wake.

CREATE OR REPLACE FUNCTION corral_services_alloc_terminal_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM service_registrations WHERE alloc_id = NEW.id;
    IF FOUND THEN
        INSERT INTO state_index (name, value) VALUES ('service_registrations', state_index_own())
        ON CONFLICT (name, value) DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_services_node_down_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM service_registrations WHERE node_id = NEW.id;
    IF FOUND THEN
        INSERT INTO state_index (name, value) VALUES ('service_registrations', state_index_own())
        ON CONFLICT (name, value) DO NOTHING;
    END IF;
    RETURN NULL;
END $$;

-- The event stream's Service topic (Nomad's TopicService): ServiceRegistration for an insert or
-- a changed registration, ServiceDeregistration for a delete, keyed by the registration ID with
-- its job and service name as filter keys. The snapshot is the row, as for the other topics.
CREATE OR REPLACE FUNCTION corral_event_service_insert_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    SELECT n.modify_index, 'Service', 'ServiceRegistration', n.id, n.namespace,
           ARRAY[n.job_id, n.service_name], to_jsonb(n)
    FROM new_rows n;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_service_update_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (NEW.modify_index, 'Service', 'ServiceRegistration', NEW.id, NEW.namespace,
            ARRAY[NEW.job_id, NEW.service_name], to_jsonb(NEW));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_service_delete_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    SELECT state_index_own(), 'Service', 'ServiceDeregistration', o.id, o.namespace,
           ARRAY[o.job_id, o.service_name], to_jsonb(o)
    FROM old_rows o;
    RETURN NULL;
END $$;
