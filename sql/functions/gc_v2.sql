-- Garbage-collection eligibility, version 2 (run by revision 0005_gc_fixes). The _v1 functions
-- in gc_v1.sql stay as they were; eval GC still uses corral_alloc_collectable_v1.

-- Is this job collectable? As corral_job_collectable_v1, with one change: every allocation
-- only has to be finished with (corral_alloc_done_v1). The other conditions leave no pending or
-- blocked evaluation, and finished allocations are not live, so the job is dead: nothing will
-- reschedule a failed allocation any more, and (as Nomad's allocGCEligible for a dead or
-- stopped job) the reschedule policy keeps none of them. v1 kept a dead batch job with a failed
-- allocation that still had reschedule attempts left forever.
CREATE OR REPLACE FUNCTION corral_job_collectable_v2(j jobs, cutoff timestamptz)
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
             AND NOT corral_alloc_done_v1(a.desired_status, a.client_status, a.modify_time, cutoff))
       AND NOT EXISTS (
           SELECT 1 FROM deployments d
           WHERE d.namespace = j.namespace AND d.job_id = j.id
             AND d.status IN ('running', 'paused', 'initializing', 'pending', 'blocked', 'unblocking'))
$$;
