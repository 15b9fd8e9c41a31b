-- name: read_tables
-- Highest index among the given tables, as seen by the current snapshot.
SELECT COALESCE(max(value), 0) FROM state_index WHERE name = ANY(:tables);

-- name: read_all
SELECT name, value FROM state_index;

-- name: take_index
-- bump_global + stamp_tables + notify_change in one round trip, refusing to run unless it is
-- the transaction's first write (the '_global' row is every writer's first lock: one lock
-- order, no deadlocks). The guard is materialized first, before any row is written.
WITH guard AS MATERIALIZED (
    SELECT pg_current_xact_id_if_assigned() IS NULL AS first_write
), bumped AS (
    UPDATE state_index SET value = value + 1
    WHERE name = '_global' AND (SELECT first_write FROM guard)
    RETURNING value
), stamped AS (
    UPDATE state_index s SET value = b.value FROM bumped b
    WHERE s.name = ANY(:tables)
    RETURNING s.name
)
SELECT (SELECT first_write FROM guard) AS first_write,
       (SELECT value FROM bumped) AS taken,
       (SELECT count(*) FROM stamped) AS stamped,
       CASE WHEN CAST(:notify AS boolean) THEN pg_notify('corral_index', '') END AS notified;

-- name: node_index
-- The highest index of a change to one node or to any of its allocations, as seen by the
-- current snapshot: a node's blocking query on its allocations answers once this passes.
SELECT COALESCE(greatest(
    (SELECT modify_index FROM nodes WHERE id = :node_id),
    (SELECT max(modify_index) FROM allocations WHERE node_id = :node_id)
), 0);

-- name: node_changes_since
-- The nodes that changed, or whose allocations changed, after an index: the API's index
-- watcher wakes only those nodes' blocking queries. ix_allocations_modify_index keeps the
-- cost proportional to the change, not to the table.
SELECT node_id, max(modify_index) FROM allocations WHERE modify_index > :since GROUP BY node_id
UNION ALL
SELECT id, modify_index FROM nodes WHERE modify_index > :since;
