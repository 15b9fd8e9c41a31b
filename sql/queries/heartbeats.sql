-- name: heartbeat
-- One statement per client heartbeat: authenticate by the secret's hash, size the TTL by the
-- fleet (Nomad: max(min_ttl, nodes / per_second), then up to 2x so the fleet does not beat in
-- lockstep) and record it. No row back means an unknown node or a wrong secret. :fleet_size is
-- the caller's recent count of node_heartbeats (app.store.node.heartbeat_ttl.FleetSize): counting
-- 10,000 rows cost Postgres 0.8 ms on every beat. NULL: counted here (a registration), and
-- only then, as COALESCE evaluates the sub-select only when it gets that far.
WITH node AS (
    SELECT id, status, modify_index, gc_force_index FROM nodes WHERE id = :node_id AND secret_hash = :secret_hash
), ttl AS (
    SELECT greatest(CAST(:min_ttl_s AS double precision),
                    COALESCE(CAST(:fleet_size AS double precision), (SELECT count(*) FROM node_heartbeats))
                    / CAST(:per_second AS double precision))
           * (1 + random()) AS s
), upsert AS (
    INSERT INTO node_heartbeats (node_id, last_seen_at, ttl_ms, expires_at)
    SELECT node.id, now(), ceil(ttl.s * 1000), now() + make_interval(secs => ttl.s + :grace_s)
    FROM node, ttl
    ON CONFLICT (node_id) DO UPDATE
        SET last_seen_at = EXCLUDED.last_seen_at, ttl_ms = EXCLUDED.ttl_ms, expires_at = EXCLUDED.expires_at
    RETURNING ttl_ms
)
SELECT node.status, node.modify_index, node.gc_force_index, (SELECT ttl_ms FROM upsert) AS ttl_ms,
       -- :async_commit (a heartbeat alone, not a registration): losing it on a crash costs nothing
       -- (the leader grants the failover TTL), so its commit need not wait for the WAL flush. Set
       -- here rather than by a SET LOCAL of its own: one statement and round trip less per beat.
       CASE WHEN CAST(:async_commit AS boolean) THEN set_config('synchronous_commit', 'off', true) END AS async_commit
FROM node;

-- name: fleet_size
-- The nodes holding a heartbeat TTL: what sizes every TTL granted (Nomad's heartbeat timers).
SELECT count(*) FROM node_heartbeats;

-- name: expired_heartbeats
-- Live nodes whose heartbeat deadline has passed, oldest first. Not locked here: a row lock
-- is a write, and an idle tick writes nothing.
SELECT h.node_id
FROM node_heartbeats h JOIN nodes n ON n.id = h.node_id
WHERE h.expires_at < now() AND n.status IN ('initializing', 'ready')
ORDER BY h.expires_at
LIMIT :batch;

-- name: forget_heartbeat
-- A node marked down no longer counts towards the fleet size that sizes everyone's TTL.
DELETE FROM node_heartbeats WHERE node_id = :node_id;

-- name: grant_failover_heartbeats
-- The table is UNLOGGED: after a crash it is empty. Every live node without a row gets the
-- failover TTL before any can be marked down (Nomad does the same on leader election).
INSERT INTO node_heartbeats (node_id, last_seen_at, ttl_ms, expires_at)
SELECT n.id, now(), CAST(:ttl_s * 1000 AS integer), now() + make_interval(secs => :ttl_s)
FROM nodes n
WHERE n.status IN ('initializing', 'ready')
  AND NOT EXISTS (SELECT 1 FROM node_heartbeats h WHERE h.node_id = n.id)
ON CONFLICT (node_id) DO NOTHING;
