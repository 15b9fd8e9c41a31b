-- name: bump_global
-- Take the next state index. The row lock it takes is held until commit, so writers
-- commit in index order and a reader never sees index N+1 before N. Must be the first
-- statement of every write transaction (one lock order: no deadlocks).
UPDATE state_index SET value = value + 1 WHERE name = '_global' RETURNING value;

-- name: stamp_tables
-- Record that the given tables changed at this index (blocking queries watch these).
UPDATE state_index SET value = :index WHERE name = ANY(:tables);

-- name: read_tables
-- Highest index among the given tables, as seen by the current snapshot.
SELECT COALESCE(max(value), 0) FROM state_index WHERE name = ANY(:tables);

-- name: read_all
SELECT name, value FROM state_index;

-- name: notify_change
-- A wake-up hint for blocking queries; correctness never depends on it.
SELECT pg_notify('corral_index', '');
