-- node_usage.modify_index: the state index of the transaction that last changed the row, so a
-- worker that already holds every node's usage as of a safe index S reads only the rows changed
-- above S (every transaction at or below S had finished in the snapshot that read S, so nothing
-- at or below it can appear later). A row trigger, whoever writes the row (the allocation
-- triggers' corral_add_usage_v1, a migration, psql).

CREATE OR REPLACE FUNCTION corral_usage_stamp_v1() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.modify_index := state_index_own();
    RETURN NEW;
END
$$;

CREATE TRIGGER node_usage_stamp BEFORE INSERT OR UPDATE ON node_usage
    FOR EACH ROW EXECUTE FUNCTION corral_usage_stamp_v1();
