-- name: snapshot_indexes
-- The pass's snapshot index: the newest logged index at or below the safe index, so every
-- change at or below it is in this snapshot (an evaluation created at or below it was seen:
-- coalescing relies on that; capacity freed above it may not have been: missed_unblock). A
-- logged index, not the safe index itself: it belongs to a synchronously committed write, so
-- no transaction ID at or below it is handed out again after a crash. 'nodes' keys the node cache;
-- 'safe' (the safe index itself) the usage cache: snapshot_usage's next :known_usage.
-- Each one backward index probe (ix_state_index_value; the primary key for 'nodes'), whatever
-- the log's length.
SELECT '_global' AS name, COALESCE((SELECT max(value) FROM state_index WHERE value <= state_index_safe()), 0) AS value
UNION ALL
SELECT 'nodes', COALESCE((SELECT max(value) FROM state_index WHERE name = 'nodes' AND value <= state_index_safe()), 0)
UNION ALL
SELECT 'safe', state_index_safe();

-- name: snapshot_nodes
-- Every node, unless the 'nodes' index (as snapshot_indexes computes it, in the same snapshot)
-- is still :known_index, the one of the worker's cached nodes: then no rows, and the cache
-- stands. So the worker sends this with the other reads, not after them. NULL: always read.
SELECT id, name, datacenter, node_class, node_pool, computed_class, status, scheduling_eligibility, drain,
       attributes, meta, drivers, cpu_shares, memory_mb, disk_mb, reserved_cpu, reserved_memory_mb,
       reserved_disk_mb, reserved_ports, node_resources -> 'Cpu' -> 'ReservableCpuCores' AS reservable_cores,
       host_volumes,
       -- Ready dynamic host volumes as [namespace, name, id]; a volume's state change takes
       -- the 'nodes' index too, so the cached nodes follow it.
       (SELECT jsonb_agg(jsonb_build_array(v.namespace, v.name, v.id)) FROM host_volumes v
         WHERE v.node_id = nodes.id AND v.state = 'ready') AS dynamic_host_volumes
FROM nodes
WHERE CAST(:known_index AS bigint) IS DISTINCT FROM
      (SELECT COALESCE(max(value), 0) FROM state_index WHERE name = 'nodes' AND value <= state_index_safe());

-- name: snapshot_usage
-- Per-node usage. A NULL :known_usage (no usage cached yet): every node with live allocations.
-- Else :known_usage is the safe index of the worker's previous snapshot, whose usage it holds:
-- only the rows stamped above it (node_usage.modify_index), live_allocs 0 included so a node
-- whose last allocation ended drops out. Nothing stamped at or below it can still appear: every
-- transaction with such an index had finished in that snapshot.
SELECT node_id, cpu, memory_mb, disk_mb, live_allocs FROM node_usage
WHERE CASE WHEN CAST(:known_usage AS bigint) IS NULL THEN live_allocs > 0
           ELSE modify_index > CAST(:known_usage AS bigint) END;

-- name: snapshot_ports
-- Separate from snapshot_usage (both go in the same pipelined batch): a full join of the two
-- costs Postgres several times their sum. The whole cores allocations reserve come with the
-- ports: only the rows holding either are read (ix_allocations_live_ports, _live_cores).
SELECT node_id, host_ports, reserved_cores FROM allocations
WHERE desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown')
  AND (host_ports <> '{}' OR reserved_cores <> '{}');

-- name: snapshot_job
SELECT spec, version, job_modify_index, create_index, stop, purged_at FROM jobs
WHERE namespace = :namespace AND id = :job_id;

-- name: snapshot_jobs
-- snapshot_job for each of a batch's jobs; o as in snapshot_jobs_allocations.
SELECT k.o, j.*
FROM unnest(CAST(:namespaces AS text[]), CAST(:job_ids AS text[])) WITH ORDINALITY AS k (namespace, job_id, o)
CROSS JOIN LATERAL (
    SELECT spec, version, job_modify_index, create_index, stop, purged_at FROM jobs
    WHERE namespace = k.namespace AND id = k.job_id
    OFFSET 0  -- an index probe per job, never a join the planner may hash (snapshot_jobs_allocations)
) j;

-- name: snapshot_job_allocations
-- With each allocation's health in its deployment, and whether it is a canary its group has
-- not promoted yet (promotion is recorded on the deployment, not on every canary).
SELECT a.id, a.namespace, a.job_id, a.job_version, a.task_group, a.name, a.node_id, a.node_name, a.eval_id,
       a.desired_status, a.client_status, a.cpu, a.memory_mb, a.memory_max_mb, a.disk_mb, a.allocated_resources,
       a.previous_allocation, a.deployment_id, a.followup_eval_id, a.reschedule_tracker, a.desired_transition,
       a.create_index, a.modify_index,
       (a.deployment_status ->> 'Healthy')::boolean AS healthy,
       coalesce((a.deployment_status ->> 'Canary')::boolean, false)
         AND NOT coalesce((d.task_groups -> a.task_group ->> 'Promoted')::boolean, false) AS canary
FROM allocations a LEFT JOIN deployments d ON d.id = a.deployment_id
WHERE a.namespace = :namespace AND a.job_id = :job_id;

-- name: snapshot_jobs_allocations
-- The allocations of each of a batch's jobs (:namespaces and :job_ids pair up; o is the job's
-- place in them), with each allocation's health in its deployment, and whether it is a canary
-- its group has not promoted yet (promotion is recorded on the deployment, not on every canary).
-- One statement for the batch; LATERAL with OFFSET 0 keeps each job's read an index probe of
-- its own (a plain LATERAL subquery is pulled up into the join, and a generic plan made while
-- allocations was nearly empty then hashed a sequential scan of the whole table: 0.48 ms a
-- call against 0.003 per job before, in pg_stat_statements).
SELECT k.o, a.*
FROM unnest(CAST(:namespaces AS text[]), CAST(:job_ids AS text[])) WITH ORDINALITY AS k (namespace, job_id, o)
CROSS JOIN LATERAL (
    SELECT a.id, a.namespace, a.job_id, a.job_version, a.task_group, a.name, a.node_id, a.node_name, a.eval_id,
           a.desired_status, a.client_status, a.cpu, a.memory_mb, a.memory_max_mb, a.disk_mb,
           a.allocated_resources, a.previous_allocation, a.deployment_id, a.followup_eval_id, a.reschedule_tracker,
           a.desired_transition, a.create_index, a.modify_index,
           (a.deployment_status ->> 'Healthy')::boolean AS healthy,
           coalesce((a.deployment_status ->> 'Canary')::boolean, false)
             AND NOT coalesce((d.task_groups -> a.task_group ->> 'Promoted')::boolean, false) AS canary
    FROM allocations a LEFT JOIN deployments d ON d.id = a.deployment_id
    WHERE a.namespace = k.namespace AND a.job_id = k.job_id
    OFFSET 0  -- not pulled up into a join, which a generic plan made on a young table may hash
) a;

-- name: snapshot_job_claims
-- The job's sticky host volume claims, with the node each claimed volume lives on.
SELECT c.id, c.task_group, c.alloc_id, c.volume_id, c.volume_name, v.node_id
FROM host_volume_claims c JOIN host_volumes v ON v.id = c.volume_id
WHERE c.namespace = :namespace AND c.job_id = :job_id;

-- name: snapshot_jobs_claims
-- snapshot_job_claims for each of a batch's jobs; o as in snapshot_jobs_allocations.
SELECT k.o, c.*
FROM unnest(CAST(:namespaces AS text[]), CAST(:job_ids AS text[])) WITH ORDINALITY AS k (namespace, job_id, o)
CROSS JOIN LATERAL (
    SELECT c.id, c.task_group, c.alloc_id, c.volume_id, c.volume_name, v.node_id
    FROM host_volume_claims c JOIN host_volumes v ON v.id = c.volume_id
    WHERE c.namespace = k.namespace AND c.job_id = k.job_id
    OFFSET 0  -- an index probe per job (the unique key's), never a join the planner may hash
) c;

-- name: snapshot_job_versions
SELECT version, spec, job_modify_index FROM job_versions
WHERE namespace = :namespace AND job_id = :job_id AND version = ANY(:versions);

-- name: snapshot_job_versions_used
-- The stored versions of the job that its allocations still run, other than the job's current
-- version: what a pass needs to compare old allocations with, in the same pipelined batch as
-- the job and its allocations rather than in a second round trip that depends on them.
SELECT v.version, v.spec, v.job_modify_index FROM job_versions v
JOIN jobs j ON j.namespace = v.namespace AND j.id = v.job_id
WHERE v.namespace = :namespace AND v.job_id = :job_id AND v.version <> j.version AND j.purged_at IS NULL
  AND v.version IN (SELECT a.job_version FROM allocations a WHERE a.namespace = :namespace AND a.job_id = :job_id);

-- name: snapshot_jobs_versions_used
-- The stored versions each of a batch's jobs' allocations still run, other than the job's
-- current version: what a pass needs to compare old allocations with, in the same pipelined
-- batch as the jobs and their allocations rather than in a second round trip that depends on
-- them. o as in snapshot_jobs_allocations.
SELECT k.o, v.*
FROM unnest(CAST(:namespaces AS text[]), CAST(:job_ids AS text[])) WITH ORDINALITY AS k (namespace, job_id, o)
CROSS JOIN LATERAL (
    SELECT v.version, v.spec, v.job_modify_index FROM job_versions v
    JOIN jobs j ON j.namespace = v.namespace AND j.id = v.job_id
    WHERE v.namespace = k.namespace AND v.job_id = k.job_id AND v.version <> j.version AND j.purged_at IS NULL
      AND v.version IN (SELECT a.job_version FROM allocations a WHERE a.namespace = k.namespace AND a.job_id = k.job_id)
    OFFSET 0  -- index probes per job, never a join the planner may hash (snapshot_jobs_allocations)
) v;

-- name: snapshot_config
SELECT scheduler_algorithm, preemption_system, preemption_sysbatch, preemption_batch, preemption_service,
       memory_oversubscription, pause_eval_broker
FROM scheduler_config WHERE id = 1;

-- name: snapshot_preemptible
-- Live allocations of other jobs that a job of priority (:max_priority + 10) may evict, with
-- their job's priority and their group's migrate.max_parallel (Nomad's default is 1). Used only
-- when preemption is enabled for the job's type. A NULL :max_priority takes the stored job's
-- priority less :delta when scheduler_config enables preemption for its type (no rows
-- otherwise), so the worker sends this with its other reads, before it has decoded the job;
-- `job plan` passes its candidate job's.
WITH me AS MATERIALIZED (
    SELECT coalesce(CAST(:max_priority AS integer), (
        SELECT j.priority - :delta FROM jobs j JOIN scheduler_config c ON c.id = 1
        WHERE j.namespace = :namespace AND j.id = :job_id AND j.purged_at IS NULL
          AND CASE j.type WHEN 'system' THEN c.preemption_system WHEN 'sysbatch' THEN c.preemption_sysbatch
                          WHEN 'batch' THEN c.preemption_batch WHEN 'service' THEN c.preemption_service
                          ELSE false END)) AS max_priority
)
SELECT a.id, a.namespace, a.job_id, a.job_version, a.task_group, a.name, a.node_id, a.node_name, a.eval_id,
       a.desired_status, a.client_status, a.cpu, a.memory_mb, a.memory_max_mb, a.disk_mb, a.allocated_resources,
       a.previous_allocation, a.deployment_id, a.followup_eval_id, a.reschedule_tracker, a.desired_transition,
       a.create_index, a.modify_index, j.priority AS job_priority,
       COALESCE((SELECT (g -> 'Migrate' ->> 'MaxParallel')::int
                 FROM jsonb_array_elements(j.spec -> 'TaskGroups') g
                 WHERE g ->> 'Name' = a.task_group LIMIT 1), 1) AS max_parallel
FROM allocations a JOIN jobs j ON j.namespace = a.namespace AND j.id = a.job_id
WHERE (SELECT max_priority FROM me) IS NOT NULL  -- a one-time filter: nothing is scanned when NULL
  AND a.desired_status = 'run' AND a.client_status IN ('pending', 'running', 'unknown')
  AND j.priority <= (SELECT max_priority FROM me)
  AND NOT (a.namespace = :namespace AND a.job_id = :job_id);
