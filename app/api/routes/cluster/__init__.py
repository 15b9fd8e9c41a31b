"""Routes on the cluster and its servers: agent, status, operator, system GC, metrics, keyring."""
