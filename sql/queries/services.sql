-- name: services_drop_stale
-- A client's set of registrations for each allocation it reports replaces the previous one:
-- whatever it no longer lists (a stopped allocation, a service an in-place update removed)
-- goes. Only that node's allocations are touched.
DELETE FROM service_registrations
WHERE node_id = :node_id
  AND alloc_id = ANY(CAST(:alloc_ids AS uuid[]))
  AND NOT (id = ANY(CAST(:keep_ids AS text[])))
RETURNING id;

-- name: services_upsert
-- Nomad's ServiceRegistration.Upsert: insert or update by ID. Namespace, job and node come
-- from the allocation row, not the client. An allocation that is not this node's, is terminal,
-- or whose node is down gets nothing: its registrations would be orphans. FOR SHARE makes a
-- concurrent terminal update (whose trigger deletes the allocation's registrations) wait for
-- this insert, or this insert see that update: one of them always sees the other.
INSERT INTO service_registrations
    (id, service_name, namespace, node_id, datacenter, job_id, alloc_id, tags, address, port,
     create_index, modify_index)
SELECT r.id, r.service_name, a.namespace, a.node_id, n.datacenter, a.job_id, a.id,
       ARRAY(SELECT jsonb_array_elements_text(COALESCE(r.tags, '[]'::jsonb))), r.address, r.port,
       state_index_own(), state_index_own()
FROM jsonb_to_recordset(CAST(:regs AS jsonb))
         AS r (id text, service_name text, alloc_id uuid, tags jsonb, address text, port integer)
JOIN allocations a ON a.id = r.alloc_id
JOIN nodes n ON n.id = a.node_id
WHERE a.node_id = :node_id
  AND a.client_status NOT IN ('complete', 'failed', 'lost')
  AND n.status <> 'down'
FOR SHARE OF a, n
ON CONFLICT (id) DO UPDATE
SET service_name = EXCLUDED.service_name,
    tags = EXCLUDED.tags,
    address = EXCLUDED.address,
    port = EXCLUDED.port,
    modify_index = EXCLUDED.modify_index
WHERE (service_registrations.service_name, service_registrations.tags, service_registrations.address,
       service_registrations.port)
      IS DISTINCT FROM (EXCLUDED.service_name, EXCLUDED.tags, EXCLUDED.address, EXCLUDED.port)
RETURNING id;
