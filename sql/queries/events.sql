-- name: events_page
-- The next events of the stream after index :after, up to :safe (the state index read in the
-- same snapshot: every change at or below it has committed, so none can appear there later).
-- A page ends on a whole index: the events of one index (one transaction) are never split. A
-- row written twice in one transaction has two events at one index: the first one's type and
-- the last one's snapshot are kept, as Nomad publishes one change per object and index.
WITH upto AS (
    SELECT COALESCE(
        (SELECT event_index FROM events
         WHERE event_index > :after AND event_index <= :safe
         ORDER BY event_index OFFSET :page LIMIT 1),
        :safe) AS value
), page AS (
    SELECT id, event_index, topic, key, namespace, filter_keys, snapshot,
           first_value(type) OVER same AS type,
           row_number() OVER (PARTITION BY event_index, topic, key ORDER BY id DESC) AS latest
    FROM events
    WHERE event_index > :after AND event_index <= (SELECT value FROM upto)
    WINDOW same AS (PARTITION BY event_index, topic, key ORDER BY id)
)
SELECT (SELECT value FROM upto) AS upto, id, event_index, topic, type, key, namespace, filter_keys, snapshot
FROM page WHERE latest = 1
ORDER BY event_index, id;

-- name: events_gc
-- One bounded batch of events written before :cutoff, oldest first (ids grow with time).
WITH victim AS (
    SELECT id FROM events WHERE created_at < :cutoff ORDER BY id LIMIT :batch
), gone AS (
    DELETE FROM events e USING victim v WHERE e.id = v.id RETURNING 1
)
SELECT count(*) FROM gone;

-- name: event_rows_Job
-- Each event's snapshot as a row of its table again (typed, as the API encoders read rows), by
-- event id; jobs with the status the job endpoints derive (from allocations and evaluations now).
SELECT e.id AS _event_id, corral_job_status_v1(jsonb_populate_record(NULL::jobs, e.snapshot)) AS _status,
       (jsonb_populate_record(NULL::jobs, e.snapshot)).*
FROM events e WHERE e.id = ANY(:ids);

-- name: event_rows_Evaluation
SELECT e.id AS _event_id, (jsonb_populate_record(NULL::evaluations, e.snapshot)).* FROM events e WHERE e.id = ANY(:ids);

-- name: event_rows_Allocation
-- Snapshots written since revision 0040 leave placement_metrics out (sql/functions/events_v2.sql):
-- they are read from the allocation, once placed never changed (NULL once GC removed it). An older
-- snapshot's own copy wins. Through to_jsonb of the row, as placement_metrics_texts: the column
-- may be absent (revision 0037 added it).
SELECT e.id AS _event_id,
       (jsonb_populate_record(NULL::allocations,
            CASE WHEN e.snapshot ? 'placement_metrics' THEN e.snapshot
                 ELSE e.snapshot || jsonb_build_object('placement_metrics', to_jsonb(a) -> 'placement_metrics')
            END)).*
FROM events e LEFT JOIN allocations a ON a.id = CAST(e.key AS uuid)
WHERE e.id = ANY(:ids);

-- name: event_rows_Deployment
SELECT e.id AS _event_id, (jsonb_populate_record(NULL::deployments, e.snapshot)).* FROM events e WHERE e.id = ANY(:ids);

-- name: event_rows_Node
SELECT e.id AS _event_id, (jsonb_populate_record(NULL::nodes, e.snapshot)).* FROM events e WHERE e.id = ANY(:ids);

-- name: event_rows_Service
SELECT e.id AS _event_id, (jsonb_populate_record(NULL::service_registrations, e.snapshot)).*
FROM events e WHERE e.id = ANY(:ids);

-- name: event_rows_Variable
-- The snapshot holds no sealed items (sql/functions/variable_events_v1.sql); a delete's is marked.
SELECT e.id AS _event_id, (e.snapshot -> '_deleted') IS NOT NULL AS _deleted,
       (jsonb_populate_record(NULL::variables, e.snapshot)).*
FROM events e WHERE e.id = ANY(:ids);
