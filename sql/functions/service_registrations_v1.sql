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
