-- A job's status as Nomad derives it (state store getJobStatus), from its allocations and
-- evaluations rather than kept on every write: system jobs and periodic or parameterized
-- parents run until stopped; any other job runs while it has an allocation that is not
-- terminal, is pending while an evaluation is still to be worked on, and is dead once it had
-- either and all are terminal. The API answers with it; jobs.status is only what the last
-- write of the job itself set.
CREATE OR REPLACE FUNCTION corral_job_status_v1(j jobs)
RETURNS text
LANGUAGE sql STABLE AS $$
    SELECT CASE
        WHEN j.type = 'system' OR j.periodic OR (j.parameterized AND NOT j.dispatched) THEN
            CASE WHEN j.stop THEN 'dead' ELSE 'running' END
        WHEN EXISTS (
            SELECT 1 FROM allocations a
            WHERE a.namespace = j.namespace AND a.job_id = j.id AND a.desired_status = 'run'
              AND a.client_status IN ('pending', 'running', 'unknown')) THEN 'running'
        WHEN EXISTS (
            SELECT 1 FROM evaluations e
            WHERE e.namespace = j.namespace AND e.job_id = j.id AND e.status IN ('pending', 'blocked')) THEN 'pending'
        WHEN EXISTS (SELECT 1 FROM allocations a WHERE a.namespace = j.namespace AND a.job_id = j.id)
          OR EXISTS (SELECT 1 FROM evaluations e WHERE e.namespace = j.namespace AND e.job_id = j.id) THEN 'dead'
        ELSE 'pending'
    END
$$;

COMMENT ON FUNCTION corral_job_status_v1(jobs) IS
    'Nomad''s job status (pending, running, dead) derived from the job''s allocations and evaluations.';
