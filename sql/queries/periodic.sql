-- name: periodic_parents
-- Periodic parents the leader may launch (ix_jobs_periodic): enabled, not stopped, not purged,
-- each with the last launch it dealt with; without a record, the registration counts as one.
SELECT j.namespace, j.id, j.spec -> 'Periodic' AS periodic,
       COALESCE(l.launch_time, j.submit_time) AS last_launch
FROM jobs j
LEFT JOIN periodic_launches l ON l.namespace = j.namespace AND l.job_id = j.id
WHERE j.periodic AND NOT j.stop AND j.purged_at IS NULL
  AND COALESCE((j.spec -> 'Periodic' ->> 'Enabled')::boolean, true)
ORDER BY j.namespace, j.id;

-- name: claim_periodic_launch
-- Take the launch at the given time unless that time or a later one was already taken. The
-- conflict path waits for the row lock of a concurrent leader and then re-checks: whoever
-- comes second gets no row back, so the same time is never launched twice.
INSERT INTO periodic_launches (namespace, job_id, launch_time, skipped, create_index, modify_index)
VALUES (:namespace, :job_id, :launch_time, false, :index, :index)
ON CONFLICT (namespace, job_id) DO UPDATE
SET launch_time = EXCLUDED.launch_time, skipped = false, modify_index = EXCLUDED.modify_index
WHERE periodic_launches.launch_time < EXCLUDED.launch_time
RETURNING launch_time;

-- name: record_forced_launch
-- A forced launch (the periodic/force endpoint) moves the record forward to its time if it
-- is later, and always locks the row, so it is serialized with the leader's launches.
INSERT INTO periodic_launches (namespace, job_id, launch_time, skipped, create_index, modify_index)
VALUES (:namespace, :job_id, :launch_time, false, :index, :index)
ON CONFLICT (namespace, job_id) DO UPDATE
SET launch_time = GREATEST(periodic_launches.launch_time, EXCLUDED.launch_time),
    skipped = periodic_launches.skipped AND periodic_launches.launch_time > EXCLUDED.launch_time,
    modify_index = EXCLUDED.modify_index
RETURNING launch_time;

-- name: init_periodic_launch
-- Registering a periodic job records its registration time as its last launch if it has none,
-- so a leader's catch-up never launches a time from before the job existed.
INSERT INTO periodic_launches (namespace, job_id, launch_time, skipped, create_index, modify_index)
VALUES (:namespace, :job_id, :launch_time, false, :index, :index)
ON CONFLICT (namespace, job_id) DO NOTHING;

-- name: mark_launch_skipped
UPDATE periodic_launches SET skipped = true
WHERE namespace = :namespace AND job_id = :job_id AND launch_time = :launch_time;

-- name: periodic_running_children
-- Whether a child of the parent still runs (Nomad: a child whose status is not dead): it has
-- an allocation that should run and has not finished, or an evaluation still to schedule.
SELECT EXISTS (
    SELECT 1 FROM jobs c
    WHERE c.namespace = :namespace AND c.parent_id = :job_id AND c.purged_at IS NULL
      AND (EXISTS (SELECT 1 FROM allocations a
                   WHERE a.namespace = c.namespace AND a.job_id = c.id
                     AND a.desired_status = 'run' AND a.client_status NOT IN ('complete', 'failed', 'lost'))
           OR EXISTS (SELECT 1 FROM evaluations e
                      WHERE e.namespace = c.namespace AND e.job_id = c.id AND e.status IN ('pending', 'blocked')))
) AS running;
