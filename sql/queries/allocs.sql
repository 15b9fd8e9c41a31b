-- name: placement_metrics_texts
-- The allocations' placement metrics as stored in revision 0037's text column, read through the
-- row's JSON so the statement runs on the schema before it too (a rolling upgrade: the column is
-- missing there, and so is the key). Not mapped in the ORM for the same reason (app.models.Allocation).
SELECT a.id, to_jsonb(a) ->> 'placement_metrics' AS placement_metrics
FROM allocations a
WHERE a.id = ANY(:ids);
