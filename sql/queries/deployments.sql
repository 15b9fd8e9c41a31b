-- name: snapshot_deployment
-- The job's latest deployment, whatever its status (the scheduler decides whether it is current).
SELECT id, namespace, job_id, job_version, job_create_index, job_modify_index, job_spec_modify_index, status,
       status_description, task_groups, eval_priority
FROM deployments WHERE namespace = :namespace AND job_id = :job_id
ORDER BY create_index DESC LIMIT 1;


-- name: snapshot_jobs_deployment
-- Each of a batch's jobs' latest deployment, whatever its status (the scheduler decides whether
-- it is current); o is the job's place in :namespaces and :job_ids.
SELECT k.o, d.*
FROM unnest(CAST(:namespaces AS text[]), CAST(:job_ids AS text[])) WITH ORDINALITY AS k (namespace, job_id, o)
CROSS JOIN LATERAL (
    SELECT id, namespace, job_id, job_version, job_create_index, job_modify_index, job_spec_modify_index, status,
           status_description, task_groups, eval_priority
    FROM deployments WHERE namespace = k.namespace AND job_id = k.job_id
    ORDER BY create_index DESC LIMIT 1
) d;

-- name: deployment_group_counts
-- Per deployment and group: allocations placed in it, how many its clients called healthy or
-- unhealthy, and its canaries. Counted from the allocations rather than kept as counters, so
-- they can never drift from what the allocations say.
SELECT deployment_id, task_group,
       count(*) AS placed,
       count(*) FILTER (WHERE (deployment_status ->> 'Healthy')::boolean) AS healthy,
       count(*) FILTER (WHERE NOT (deployment_status ->> 'Healthy')::boolean) AS unhealthy,
       array_agg(id ORDER BY id) FILTER (WHERE (deployment_status ->> 'Canary')::boolean) AS canaries
FROM allocations WHERE deployment_id = ANY(:ids)
GROUP BY deployment_id, task_group;

-- name: deployment_healthy_canaries
SELECT task_group, count(*) FROM allocations
WHERE deployment_id = :id AND desired_status = 'run' AND client_status IN ('pending', 'running')
  AND (deployment_status ->> 'Canary')::boolean AND (deployment_status ->> 'Healthy')::boolean
GROUP BY task_group;

-- name: watch_running_ids
-- What the leader's deployment watcher looks at each tick (the partial index on active
-- deployments keeps this cheap however many finished ones are kept).
SELECT id FROM deployments WHERE status = 'running' ORDER BY id;

-- name: watch_lock_running
-- The deployments the watcher will act on, locked so that an operator's promote, pause or fail
-- and the watcher never act on the same one at once.
SELECT id FROM deployments WHERE id = ANY(:ids) AND status = 'running' ORDER BY id FOR UPDATE;

-- name: watch_group_health
-- Per running deployment and group, from its wanted allocations: healthy ones (and canaries),
-- unhealthy ones not yet marked for replacement, and the latest health verdict's time and index.
SELECT deployment_id, task_group,
       count(*) FILTER (WHERE healthy AND live) AS healthy,
       count(*) FILTER (WHERE healthy AND live AND canary) AS healthy_canaries,
       coalesce(array_agg(id ORDER BY id) FILTER (WHERE NOT healthy AND NOT marked), '{}') AS unhealthy,
       count(*) FILTER (WHERE NOT healthy) AS unhealthy_total,
       max(health_time) FILTER (WHERE healthy) AS latest_healthy,
       coalesce(max(health_index) FILTER (WHERE healthy), 0) AS latest_health_index
FROM (
    SELECT id, deployment_id, task_group,
           (deployment_status ->> 'Healthy')::boolean AS healthy,
           coalesce((deployment_status ->> 'Canary')::boolean, false) AS canary,
           client_status IN ('pending', 'running') AS live,
           coalesce((desired_transition ->> 'Reschedule')::boolean, false) AS marked,
           (deployment_status ->> 'Timestamp')::timestamptz AS health_time,
           (deployment_status ->> 'ModifyIndex')::bigint AS health_index
    FROM allocations WHERE deployment_id = ANY(:ids) AND desired_status = 'run'
) a
GROUP BY deployment_id, task_group;

-- name: latest_job_eval_index
-- The newest evaluation that will look at the job soon: a blocked one, a canceled one or one
-- delayed into the future would not carry a rollout on.
SELECT coalesce(max(create_index), 0) FROM evaluations
WHERE namespace = :namespace AND job_id = :job_id AND status NOT IN ('canceled', 'blocked')
  AND (wait_until IS NULL OR wait_until <= now());

-- name: mark_for_reschedule
-- Unhealthy allocations of a progress-based deployment: the scheduler replaces them.
UPDATE allocations
SET desired_transition = desired_transition || '{"Reschedule": true}'::jsonb, modify_index = :index,
    modify_time = now()
WHERE id = ANY(:ids);
