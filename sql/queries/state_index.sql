-- The state index (docs/architecture.md, "The state index"). A write's index is its own
-- transaction ID plus a fixed offset (state_index_own(), migration 0015): no counter, no lock,
-- so unrelated writers never wait for each other. Indexes are then NOT taken in commit order;
-- what readers may rely on is state_index_safe(), the current snapshot's xmin minus one:
-- every transaction with an index at or below it has finished (committed and visible, or
-- rolled back). Readers report and wait on indexes at or below it only.

-- name: take_index
-- Log this transaction's index against the tables it changes (plain INSERTs: two writers never
-- touch the same row) and optionally NOTIFY. Only names that already have a row count: an
-- unknown name would silently never wake the blocking queries that watch it. Taking it twice
-- in one transaction is harmless. A name is known by one probe of the primary key (name, value)
-- per name: a scalar subquery with LIMIT 1, which the planner keeps as a per-name probe. An
-- EXISTS became a hash semi join over a sequential scan of the whole log, whose cost grew with
-- every row the leader had not compacted yet (1 ms a write transaction after a few thousand).
WITH own AS MATERIALIZED (
    SELECT state_index_own() AS index
), known AS MATERIALIZED (
    SELECT t.name FROM unnest(CAST(:tables AS text[])) AS t (name)
    WHERE (SELECT true FROM state_index s WHERE s.name = t.name LIMIT 1)
), stamped AS (
    INSERT INTO state_index (name, value) SELECT k.name, o.index FROM known k CROSS JOIN own o
    ON CONFLICT (name, value) DO NOTHING
    RETURNING name
)
SELECT (SELECT index FROM own) AS taken,
       (SELECT count(*) FROM known) AS stamped,
       CASE WHEN CAST(:notify AS boolean) THEN pg_notify('corral_index', '') END AS notified;

-- name: safe_index
-- The highest index a reader may report: every change at or below it is in its snapshot.
SELECT state_index_safe();

-- name: read_tables
-- Highest index among the given tables that the current snapshot is complete up to.
SELECT COALESCE(max(m.value), 0)
FROM unnest(CAST(:tables AS text[])) AS t (name)
CROSS JOIN LATERAL (
    SELECT max(s.value) AS value FROM state_index s WHERE s.name = t.name AND s.value <= state_index_safe()
) m;

-- name: read_latest
-- Highest index of any change the current snapshot is complete up to (what '_global' means).
-- Like read_all, one primary-key probe per name (a loose index scan over the dozen names), so
-- its cost does not grow with the log when no leader compacts it.
WITH RECURSIVE names (name) AS (
    SELECT min(name) FROM state_index
    UNION ALL
    SELECT (SELECT min(s.name) FROM state_index s WHERE s.name > n.name) FROM names n WHERE n.name IS NOT NULL
)
SELECT COALESCE(max(m.value), 0) FROM names n
CROSS JOIN LATERAL (
    SELECT max(s.value) AS value FROM state_index s WHERE s.name = n.name AND s.value <= state_index_safe()
) m;

-- name: read_all
WITH RECURSIVE names (name) AS (
    SELECT min(name) FROM state_index
    UNION ALL
    SELECT (SELECT min(s.name) FROM state_index s WHERE s.name > n.name) FROM names n WHERE n.name IS NOT NULL
)
SELECT n.name, m.value FROM names n
CROSS JOIN LATERAL (
    SELECT max(s.value) AS value FROM state_index s WHERE s.name = n.name AND s.value <= state_index_safe()
) m
WHERE m.value IS NOT NULL;

-- name: compact
-- Keep the log short: below the safe index only the newest row of each name matters (it is
-- what every reader takes from then on). Run by the leader; readers with older snapshots
-- still see the deleted rows, newer ones see their newer rows.
DELETE FROM state_index s
WHERE s.value <= state_index_safe()
  AND EXISTS (
      SELECT 1 FROM state_index newer
      WHERE newer.name = s.name AND newer.value > s.value AND newer.value <= state_index_safe()
  );

-- name: node_watch_indexes
-- read_tables, and the highest index of a change to one node or to any of its allocations that
-- the current snapshot is complete up to (a node's blocking query on its allocations answers
-- once this passes; a row changed above the safe index waits until the index catches up with
-- it). One statement: the watch asks both on every wake, each statement a round trip and CPU.
-- node_server_index leaves out what the node's own client wrote (its allocations' status
-- reports move modify_index, never alloc_modify_index): corral's client watch (?client_since)
-- answers on the servers' changes only, as Nomad's client pulls by AllocModifyIndex.
SELECT
    (SELECT COALESCE(max(m.value), 0)
     FROM unnest(CAST(:tables AS text[])) AS t (name)
     CROSS JOIN LATERAL (
         SELECT max(s.value) AS value FROM state_index s WHERE s.name = t.name AND s.value <= state_index_safe()
     ) m) AS tables_index,
    COALESCE(greatest(
        (SELECT modify_index FROM nodes WHERE id = :node_id AND modify_index <= state_index_safe()),
        (SELECT max(modify_index) FROM allocations WHERE node_id = :node_id AND modify_index <= state_index_safe())
    ), 0) AS node_index,
    COALESCE(greatest(
        (SELECT modify_index FROM nodes WHERE id = :node_id AND modify_index <= state_index_safe()),
        (SELECT max(alloc_modify_index) FROM allocations
         WHERE node_id = :node_id AND alloc_modify_index <= state_index_safe())
    ), 0) AS node_server_index;

-- name: node_changes_since
-- The nodes that changed, or whose allocations changed, in (since, until]: the API's index
-- watcher wakes only those nodes' blocking queries. `until` is a safe index, so every change
-- in the range has committed; later ones come with the next range. ix_allocations_modify_index
-- keeps the cost proportional to the change, not to the table. The third column is the
-- highest server-side change among them (alloc_modify_index; a node's row is all the servers'):
-- a client's own status reports do not wake its ?client_since watch.
SELECT node_id, max(modify_index), max(alloc_modify_index) FROM allocations
WHERE modify_index > :since AND modify_index <= :until GROUP BY node_id
UNION ALL
SELECT id, modify_index, modify_index FROM nodes WHERE modify_index > :since AND modify_index <= :until;

-- name: wake_listeners
-- NOTIFY without an index. The pipeline no longer sends it alone (a plan submit's NOTIFY is part
-- of submit_plan, sql/queries/plans.sql); bench/small_jobs_ceiling still runs it as the NOTIFY's
-- share of the submit's bare work. Delivered at commit, like take_index's.
SELECT pg_notify('corral_index', '');

-- name: lock_object
-- app.db.object_locks: one object's writers in turn, even before its row exists. A hash
-- collision only makes two unrelated objects' writers take turns.
SELECT pg_advisory_xact_lock(CAST(:kind AS integer), hashtext(:key));

-- name: primary_wal_position
-- How far the primary's WAL is flushed now (a synchronous commit it has acknowledged, and
-- notified, is before it): a standby's index watcher waits for replay to pass it. NULL on a standby.
SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE CAST(pg_current_wal_flush_lsn() AS text) END;

-- name: replayed_past
-- Whether this standby has replayed the primary's WAL up to :lsn; NULL when the server is not
-- a standby (a read URL may land on the primary: it has everything).
SELECT CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() >= CAST(:lsn AS pg_lsn) END;

-- name: standby_read_status
-- In a standby read's own snapshot: its safe index (the reader needs it at or above the index
-- the client already has), whether the server is a standby with a WAL receiver (Nomad's
-- KnownLeader), and its replay lag in milliseconds (Nomad's LastContact): 0 when everything
-- received is replayed, else the age of the last replayed commit.
SELECT state_index_safe() AS safe,
       pg_is_in_recovery() AS standby,
       NOT pg_is_in_recovery() OR EXISTS (SELECT 1 FROM pg_stat_wal_receiver) AS known_leader,
       CASE
           WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
           ELSE COALESCE(CAST(1000 * EXTRACT(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) AS bigint), 0)
       END AS lag_ms;
