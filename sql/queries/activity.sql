-- name: activity_per_minute
-- Placements (allocations created) and evaluations created in each of the last :minutes whole
-- minutes, the current minute last, empty minutes included as zeros. It counts the rows still
-- stored: GC deletes terminal allocations and evaluations, so older minutes can read lower than
-- what happened. Core (GC) evaluations are left out; the GC run log shows those. Neither table
-- has an index on create_time, so each call reads both tables once (the operator page asks at
-- most once a second per open page).
WITH span AS (
    SELECT date_trunc('minute', now()) - make_interval(mins => CAST(:minutes AS integer) - 1) AS first_minute,
           date_trunc('minute', now()) AS last_minute
), placed AS (
    SELECT date_trunc('minute', a.create_time) AS minute, count(*) AS n
    FROM allocations a, span
    WHERE a.create_time >= span.first_minute
    GROUP BY 1
), evaluated AS (
    SELECT date_trunc('minute', e.create_time) AS minute, count(*) AS n
    FROM evaluations e, span
    WHERE e.create_time >= span.first_minute AND e.type <> '_core'
    GROUP BY 1
)
SELECT CAST(extract(epoch FROM m.minute) AS bigint) AS minute,
       coalesce(p.n, 0) AS placements,
       coalesce(e.n, 0) AS evaluations
FROM span, generate_series(span.first_minute, span.last_minute, interval '1 minute') AS m(minute)
LEFT JOIN placed p ON p.minute = m.minute
LEFT JOIN evaluated e ON e.minute = m.minute
ORDER BY m.minute;
