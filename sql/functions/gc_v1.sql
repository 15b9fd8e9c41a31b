-- Garbage-collection eligibility, shared by every GC statement in sql/queries/gc.sql.
-- Nomad's rules (nomad/core_sched.go), expressed over rows so that one statement can pick a
-- bounded batch of collectable rows and delete them, children first.

-- An allocation that is finished with: terminal for the server or the client, not still
-- running on its client (a stop the client has not carried out yet), and unchanged since
-- the cutoff.
CREATE OR REPLACE FUNCTION corral_alloc_done_v1(desired text, client text, modified timestamptz, cutoff timestamptz)
RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
    SELECT (desired IN ('stop', 'evict') OR client IN ('complete', 'failed', 'lost'))
       AND client NOT IN ('running', 'unknown')
       AND modified < cutoff
$$;

-- A failed allocation the reschedule policy may still need (Nomad's allocGCEligible): not
-- replaced, its group may reschedule, and it was never rescheduled or was rescheduled within
-- the policy's interval.
CREATE OR REPLACE FUNCTION corral_alloc_reschedule_pending_v1(a allocations, spec jsonb, now_at timestamptz)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    WITH policy AS (
        SELECT g -> 'ReschedulePolicy' AS p
        FROM jsonb_array_elements(coalesce(spec -> 'TaskGroups', '[]'::jsonb)) AS g
        WHERE g ->> 'Name' = a.task_group
        LIMIT 1
    ), last_event AS (
        SELECT max((ev ->> 'RescheduleTime')::numeric) AS at_ns
        FROM jsonb_array_elements(coalesce(a.reschedule_tracker -> 'Events', '[]'::jsonb)) AS ev
    )
    SELECT a.client_status = 'failed'
       AND a.desired_status = 'run'
       AND a.next_allocation IS NULL
       AND coalesce((SELECT
              coalesce((p ->> 'Unlimited')::boolean, false)
              OR (coalesce((p ->> 'Attempts')::int, 0) > 0
                  AND ((SELECT at_ns FROM last_event) IS NULL
                       OR (SELECT at_ns FROM last_event)
                          > extract(epoch FROM now_at) * 1e9 - coalesce((p ->> 'Interval')::numeric, 0)))
          FROM policy WHERE p IS NOT NULL AND p <> 'null'::jsonb), false)
$$;

-- Is this allocation collectable? `allow_batch` is Nomad's flag for job GC: a batch job's
-- current-version allocations record work already done, so eval GC keeps them while the job
-- lives (else the scheduler would run the work again); job GC may take them with the job.
CREATE OR REPLACE FUNCTION corral_alloc_collectable_v1(a allocations, j jobs, cutoff timestamptz, allow_batch boolean)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT corral_alloc_done_v1(a.desired_status, a.client_status, a.modify_time, cutoff)
       AND CASE
           WHEN j.id IS NULL OR j.stop OR j.purged_at IS NOT NULL THEN true
           WHEN j.type IN ('batch', 'sysbatch') AND NOT allow_batch AND a.create_index >= j.job_modify_index THEN false
           -- Only a failed, unreplaced allocation can still be needed; skip the policy lookup otherwise.
           WHEN a.client_status <> 'failed' OR a.desired_status <> 'run' OR a.next_allocation IS NOT NULL THEN true
           ELSE NOT corral_alloc_reschedule_pending_v1(a, j.spec, now())
       END
$$;

-- Is this job collectable (Nomad's jobIsGCable plus "everything under it is collectable")?
-- Stopped or purged jobs, and batch jobs with nothing left to run; periodic and parameterized
-- parents only once stopped and childless; never a job with a tagged version.
CREATE OR REPLACE FUNCTION corral_job_collectable_v1(j jobs, cutoff timestamptz)
RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT (j.stop OR j.purged_at IS NOT NULL OR j.type IN ('batch', 'sysbatch'))
       AND (j.stop OR j.purged_at IS NOT NULL OR NOT (j.periodic OR (j.parameterized AND NOT j.dispatched)))
       AND greatest(j.submit_time, j.status_updated_at, j.updated_at, j.purged_at) < cutoff
       AND NOT EXISTS (SELECT 1 FROM jobs c WHERE c.namespace = j.namespace AND c.parent_id = j.id)
       AND NOT EXISTS (
           SELECT 1 FROM job_versions v
           WHERE v.namespace = j.namespace AND v.job_id = j.id AND v.version_tag IS NOT NULL)
       AND NOT EXISTS (
           SELECT 1 FROM evaluations e
           WHERE e.namespace = j.namespace AND e.job_id = j.id
             AND (e.status IN ('pending', 'blocked') OR e.modify_time >= cutoff))
       AND NOT EXISTS (
           SELECT 1 FROM allocations a
           WHERE a.namespace = j.namespace AND a.job_id = j.id
             AND NOT corral_alloc_collectable_v1(a, j, cutoff, true))
       AND NOT EXISTS (
           SELECT 1 FROM deployments d
           WHERE d.namespace = j.namespace AND d.job_id = j.id
             AND d.status IN ('running', 'paused', 'initializing', 'pending', 'blocked', 'unblocking'))
$$;
