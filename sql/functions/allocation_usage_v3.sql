-- Version 3 of the usage triggers (run by revision 0021_usage_check_nodes_by_key): the same
-- per-node sums and the same refusal of an overcommit as allocation_usage_v2.sql, whose
-- functions stay as they were. One change: the overcommit check reads the nodes it checks by
-- key (`n.id = ANY(node_ids)`). v2 joined the whole nodes table, read in full by every
-- statement that writes allocations: 0.3 ms a batch of the applier at 1,000 nodes, 1.5 ms at
-- 5,000, for a batch that touches a few dozen of them. With the key the planner probes the
-- nodes' primary key, however few the deltas; a plan touching thousands of nodes still checks
-- them with a hash join. Revision 0041 sets enable_nestloop off on corral_add_usage_v3 (ALTER
-- FUNCTION): its generic plan, which a session keeps after its first calls, took the unnest of
-- each array for a handful of rows and joined the two CTEs with a nested loop, n x n for a big
-- plan.

CREATE OR REPLACE FUNCTION corral_add_usage_v3(
    node_ids uuid[], cpus bigint[], mems bigint[], disks bigint[], counts bigint[]
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    over uuid;
BEGIN
    WITH delta AS (
        SELECT * FROM unnest(node_ids, cpus, mems, disks, counts) AS d(node_id, cpu, memory_mb, disk_mb, live_allocs)
    ), applied AS (
        INSERT INTO node_usage AS u (node_id, cpu, memory_mb, disk_mb, live_allocs)
        SELECT node_id, cpu, memory_mb, disk_mb, live_allocs FROM delta
        ON CONFLICT (node_id) DO UPDATE SET
            cpu = u.cpu + excluded.cpu,
            memory_mb = u.memory_mb + excluded.memory_mb,
            disk_mb = u.disk_mb + excluded.disk_mb,
            live_allocs = u.live_allocs + excluded.live_allocs
        RETURNING u.node_id, u.cpu, u.memory_mb, u.disk_mb
    )
    SELECT a.node_id INTO over
    FROM applied a JOIN delta d USING (node_id) JOIN nodes n ON n.id = a.node_id AND n.id = ANY(node_ids)
    WHERE (d.cpu > 0 AND a.cpu > n.cpu_shares - n.reserved_cpu)
       OR (d.memory_mb > 0 AND a.memory_mb > n.memory_mb - n.reserved_memory_mb)
       OR (d.disk_mb > 0 AND a.disk_mb > n.disk_mb - n.reserved_disk_mb);
    IF over IS NOT NULL THEN
        RAISE EXCEPTION 'allocations would overcommit node %', over USING ERRCODE = 'check_violation',
            HINT = 'corral invariant 1: live allocations must fit in node capacity minus reserved';
    END IF;
END
$$;

CREATE OR REPLACE FUNCTION corral_usage_after_insert_v3() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM corral_add_usage_v3(
        array_agg(node_id), array_agg(cpu)::bigint[], array_agg(mem)::bigint[], array_agg(disk)::bigint[], array_agg(n)::bigint[])
    FROM (SELECT node_id, sum(cpu) AS cpu, sum(memory_mb) AS mem, sum(disk_mb) AS disk, count(*) AS n
          FROM new_rows WHERE corral_alloc_live_v1(desired_status, client_status) GROUP BY node_id) d
    HAVING count(*) > 0;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION corral_usage_after_update_v3() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM corral_add_usage_v3(
        array_agg(node_id), array_agg(cpu)::bigint[], array_agg(mem)::bigint[], array_agg(disk)::bigint[], array_agg(n)::bigint[])
    FROM (SELECT node_id, sum(cpu) AS cpu, sum(mem) AS mem, sum(disk) AS disk, sum(n) AS n
          FROM (SELECT node_id, cpu::bigint, memory_mb::bigint AS mem, disk_mb::bigint AS disk, 1::bigint AS n
                FROM new_rows WHERE corral_alloc_live_v1(desired_status, client_status)
                UNION ALL
                SELECT node_id, -cpu, -memory_mb, -disk_mb, -1
                FROM old_rows WHERE corral_alloc_live_v1(desired_status, client_status)) x
          GROUP BY node_id) d
    WHERE d.cpu <> 0 OR d.mem <> 0 OR d.disk <> 0 OR d.n <> 0
    HAVING count(*) > 0;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION corral_usage_after_delete_v3() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM corral_add_usage_v3(
        array_agg(node_id), array_agg(cpu)::bigint[], array_agg(mem)::bigint[], array_agg(disk)::bigint[], array_agg(n)::bigint[])
    FROM (SELECT node_id, -sum(cpu) AS cpu, -sum(memory_mb) AS mem, -sum(disk_mb) AS disk, -count(*) AS n
          FROM old_rows WHERE corral_alloc_live_v1(desired_status, client_status) GROUP BY node_id) d
    HAVING count(*) > 0;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER allocations_usage_insert AFTER INSERT ON allocations
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION corral_usage_after_insert_v3();
CREATE OR REPLACE TRIGGER allocations_usage_update AFTER UPDATE ON allocations
    REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION corral_usage_after_update_v3();
CREATE OR REPLACE TRIGGER allocations_usage_delete AFTER DELETE ON allocations
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION corral_usage_after_delete_v3();
