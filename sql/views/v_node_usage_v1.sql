-- Each node's allocatable capacity against what its live allocations reserve.
CREATE OR REPLACE VIEW v_node_usage AS
SELECT
    n.id,
    n.name,
    n.datacenter,
    n.node_pool,
    n.node_class,
    n.status,
    n.scheduling_eligibility AS eligibility,
    n.drain,
    count(a.id) AS live_allocs,
    n.cpu_shares - n.reserved_cpu AS cpu_capacity,
    COALESCE(sum(a.cpu), 0) AS cpu_used,
    round(100.0 * COALESCE(sum(a.cpu), 0) / NULLIF(n.cpu_shares - n.reserved_cpu, 0), 1) AS cpu_pct,
    n.memory_mb - n.reserved_memory_mb AS memory_mb_capacity,
    COALESCE(sum(a.memory_mb), 0) AS memory_mb_used,
    round(100.0 * COALESCE(sum(a.memory_mb), 0) / NULLIF(n.memory_mb - n.reserved_memory_mb, 0), 1)
        AS memory_pct,
    n.disk_mb - n.reserved_disk_mb AS disk_mb_capacity,
    COALESCE(sum(a.disk_mb), 0) AS disk_mb_used,
    round(100.0 * COALESCE(sum(a.disk_mb), 0) / NULLIF(n.disk_mb - n.reserved_disk_mb, 0), 1)
        AS disk_pct
FROM nodes n
LEFT JOIN allocations a
    ON a.node_id = n.id
    AND a.desired_status = 'run'
    AND a.client_status IN ('pending', 'running', 'unknown')
GROUP BY n.id
ORDER BY n.name;

COMMENT ON VIEW v_node_usage IS
    'Per node: allocatable capacity (total minus reserved) and the CPU, memory and disk reserved by '
    'live allocations (desired run, client not terminal). A *_pct above 100 would be an overcommit bug.';
