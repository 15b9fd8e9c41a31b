"""HTTP plumbing: app state, errors, parameters, paging, blocking queries, replicas, client proxy."""
