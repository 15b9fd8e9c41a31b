-- name: disconnect_windows
-- Live allocations on a node whose group allows a disconnect window (disconnect.lost_after, or
-- the older max_client_disconnect): while any exists, a silent node is disconnected, not down.
SELECT a.id, a.namespace, a.job_id, w.lost_after_ns
FROM allocations a
JOIN job_versions v ON v.namespace = a.namespace AND v.job_id = a.job_id AND v.version = a.job_version
CROSS JOIN LATERAL (
    SELECT COALESCE((g.value -> 'Disconnect' ->> 'LostAfter')::bigint, (g.value ->> 'MaxClientDisconnect')::bigint, 0)
           AS lost_after_ns
    FROM jsonb_array_elements(v.spec -> 'TaskGroups') g WHERE g.value ->> 'Name' = a.task_group
) w
WHERE a.node_id = :node_id AND a.desired_status = 'run' AND a.client_status IN ('pending', 'running')
  AND w.lost_after_ns > 0
ORDER BY a.id;

-- name: expired_unknown
-- Allocations still unknown once their node has been disconnected for longer than the window.
SELECT a.id, a.namespace, a.job_id, a.node_id
FROM allocations a
JOIN nodes n ON n.id = a.node_id AND n.status = 'disconnected'
JOIN job_versions v ON v.namespace = a.namespace AND v.job_id = a.job_id AND v.version = a.job_version
CROSS JOIN LATERAL (
    SELECT COALESCE((g.value -> 'Disconnect' ->> 'LostAfter')::bigint, (g.value ->> 'MaxClientDisconnect')::bigint, 0)
           AS lost_after_ns
    FROM jsonb_array_elements(v.spec -> 'TaskGroups') g WHERE g.value ->> 'Name' = a.task_group
) w
WHERE a.client_status = 'unknown' AND a.desired_status = 'run'
  AND n.status_updated_at + make_interval(secs => w.lost_after_ns / 1e9) <= now()
ORDER BY a.id
LIMIT :batch;

-- name: disconnected_settled
-- Disconnected nodes with nothing left waiting for them (no allocation still unknown and
-- wanted): their windows are over, so they go down like any silent node and node GC can reach
-- them one day. The caller takes the state index, then locks and re-checks each node.
SELECT n.id
FROM nodes n
WHERE n.status = 'disconnected'
  AND NOT EXISTS (
      SELECT 1 FROM allocations a
      WHERE a.node_id = n.id AND a.client_status = 'unknown' AND a.desired_status = 'run'
  )
ORDER BY n.id
LIMIT :batch;
