-- The event stream's Variable topic (Nomad's TopicVariable): one VariableUpdated event per write
-- or delete of a variable that takes a state index, keyed by its path in its namespace. The
-- snapshot is the row's metadata only: the sealed items and the lock holder's ID stay out of the
-- events table (Nomad's payload is the VariableMetadata, never the items). A delete marks its
-- snapshot with "_deleted", which the stream renders as Nomad's "Deleted": true.
CREATE OR REPLACE FUNCTION corral_variable_snapshot_v1(v variables) RETURNS jsonb
LANGUAGE sql IMMUTABLE AS $$
    SELECT to_jsonb(v) - 'sealed_items' - 'lock_id' - 'key_id'
$$;

CREATE OR REPLACE FUNCTION corral_event_variable_insert_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    SELECT n.modify_index, 'Variable', 'VariableUpdated', n.path, n.namespace, NULL,
           corral_variable_snapshot_v1(n)
    FROM new_rows n;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_variable_update_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    VALUES (NEW.modify_index, 'Variable', 'VariableUpdated', NEW.path, NEW.namespace, NULL,
            corral_variable_snapshot_v1(NEW));
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION corral_event_variable_delete_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (event_index, topic, type, key, namespace, filter_keys, snapshot)
    SELECT state_index_own(), 'Variable', 'VariableUpdated', o.path, o.namespace, NULL,
           corral_variable_snapshot_v1(o) || '{"_deleted": true}'::jsonb
    FROM old_rows o;
    RETURN NULL;
END $$;
